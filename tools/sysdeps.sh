#!/usr/bin/env bash
# Installs the system packages grstats needs, only when they are missing.
# Usage: tools/sysdeps.sh CMD:DEBIAN_PACKAGE [...]
#   CMD is looked up on PATH and in /usr/sbin (Debian puts mosquitto there).
set -euo pipefail

missing=()
for pair in "$@"; do
  cmd=${pair%%:*}
  pkg=${pair#*:}
  if command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || [ -x "/usr/bin/$cmd" ]; then
    continue
  fi
  missing+=("$pkg")
done

[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "grstats: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo ">> installing with apt: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo ">> installed: ${missing[*]}"
