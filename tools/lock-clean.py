"""Make a pip-compile output a portable lock (run by `make deps-upgrade`).

pip-compile writes the project itself (`grstats @ file:///<checkout>`, from
the `dev` extra's `grstats[spark]`) and the paths of constraint files into
the lock: both name this machine. The project is installed after the lock
with `pip install --no-deps -e .`, so its line is dropped, and a constraint
path is shown by its file name only.

Usage: python tools/lock-clean.py requirements-dev.txt [...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_SELF = re.compile(r"^grstats @ file:")
_WARNING = "# WARNING: pip install will require the following package to be hashed."


def clean(text: str) -> str:
    out: list[str] = []
    lines = text.splitlines()
    skip_via = False
    for i, line in enumerate(lines):
        if line.startswith(_WARNING) or (
            line.startswith("# Consider using a hashable URL") and i and lines[i - 1] == _WARNING
        ):
            continue
        if _SELF.match(line):
            skip_via = True
            continue
        if skip_via and line.startswith("    #"):
            continue
        skip_via = False
        out.append(re.sub(r"(-c |--constraint=)/\S*/([^/\s]+)", r"\1\2", line))
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    for name in argv:
        path = Path(name)
        path.write_text(clean(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
