"""Finding and configuring a private Mosquitto broker on a loopback port.

Used by `grstats demo`, the test fixtures and the benchmarks, which all start
their own broker: one place knows where the binary lives and which settings a
throw-away broker needs (anonymous, no persistence, a deep per-client queue).

The secure variant (`SecureFiles`) is the shipped config/mosquitto.conf itself
— TLS, password file, ACL, size limits — with only its listener moved to a
loopback port and its files to a scratch directory, so a test of it tests what
users install. Any other absolute path in it is refused rather than silently
pointing the test broker at the host's /etc.
"""

from __future__ import annotations

import os
import pwd
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MOSQUITTO_CANDIDATES",
    "SecureFiles",
    "find_mosquitto",
    "loopback_config",
    "secure_loopback_config",
    "write_loopback_config",
]

# Debian/Ubuntu install mosquitto in sbin, often not on a user's PATH.
MOSQUITTO_CANDIDATES = ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")


def find_mosquitto() -> str | None:
    """Locate the mosquitto binary.

    Returns:
        Its path (PATH first, then the usual sbin locations), or None.
    """
    found = shutil.which("mosquitto")
    if found:
        return found
    for candidate in MOSQUITTO_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    return None


def loopback_config(port: int) -> str:
    """The mosquitto.conf text for an anonymous, non-persistent broker on 127.0.0.1.

    Args:
        port: the loopback port to listen on.

    Returns:
        The configuration text (errors and warnings logged to stderr).
    """
    return (
        f"listener {port} 127.0.0.1\n"
        "allow_anonymous true\n"
        "persistence false\n"
        "# far above what a few members queue; 0 (unlimited) misbehaves in some 2.0.x\n"
        "max_queued_messages 100000\n"
        "log_dest stderr\n"
        "log_type error\n"
        "log_type warning\n"
    )


@dataclass(frozen=True, slots=True)
class SecureFiles:
    """Where the secure variant's files are: the shipped config and its replacements.

    Attributes:
        shipped_config: the text of config/mosquitto.conf.
        cafile, certfile, keyfile: the TLS CA, broker certificate and key.
        password_file: made with `mosquitto_passwd`.
        acl_file: normally a copy of config/mosquitto.acl.example.
        state_dir: persistence location (a directory).
    """

    shipped_config: str
    cafile: Path
    certfile: Path
    keyfile: Path
    password_file: Path
    acl_file: Path
    state_dir: Path


def secure_loopback_config(port: int, files: SecureFiles) -> str:
    """The shipped secure mosquitto.conf, listening on 127.0.0.1:`port` only.

    Every `listener` becomes `listener <port> 127.0.0.1`, the file options
    point into `files`, logs go to stderr; everything else is kept verbatim.
    A `user` line naming the current user is added: started as root,
    Mosquitto would otherwise switch to the `mosquitto` account, which cannot
    read a private scratch directory.

    Args:
        port: the loopback port to listen on.
        files: the shipped config text and the files to use instead of its paths.

    Returns:
        The configuration text.

    Raises:
        ValueError: the shipped config has a second listener or an absolute
            path this function does not know how to replace.
    """
    replace = {
        "cafile": files.cafile,
        "certfile": files.certfile,
        "keyfile": files.keyfile,
        "password_file": files.password_file,
        "acl_file": files.acl_file,
        "persistence_location": f"{files.state_dir}/",
    }
    out: list[str] = []
    listeners = 0
    for line in files.shipped_config.splitlines():
        words = line.split()
        key = words[0] if words and not line.startswith("#") else ""
        if key == "listener":
            listeners += 1
            if listeners > 1:
                raise ValueError("secure_loopback_config: more than one listener in the config")
            out.append(f"listener {port} 127.0.0.1")
        elif key in replace:
            out.append(f"{key} {replace[key]}")
        elif key == "log_dest":
            out.append("log_dest stderr")
        elif key and any(word.startswith("/") for word in words[1:]):
            raise ValueError(f"secure_loopback_config: no replacement for the path in {line!r}")
        else:
            out.append(line)
    out.append(f"user {pwd.getpwuid(os.geteuid()).pw_name}")
    return "\n".join(out) + "\n"


def write_loopback_config(
    path: Path, port: int, *, header: str = "", secure: SecureFiles | None = None
) -> Path:
    """Write a loopback broker's config to `path`.

    Args:
        path: the file to (over)write.
        port: the loopback port to listen on.
        header: a comment line or lines to put first ("" for none).
        secure: None for the anonymous throw-away broker (`loopback_config`),
            else the shipped secure config on this port (`secure_loopback_config`).

    Returns:
        `path`.
    """
    text = loopback_config(port) if secure is None else secure_loopback_config(port, secure)
    path.write_text(header + text, encoding="utf-8")
    return path
