"""Finding and configuring a private Mosquitto broker on a loopback port.

Used by `grstats demo`, the test fixtures and the benchmarks, which all start
their own broker: one place knows where the binary lives and which settings a
throw-away broker needs (anonymous, no persistence, a deep per-client queue).
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["MOSQUITTO_CANDIDATES", "find_mosquitto", "loopback_config", "write_loopback_config"]

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


def write_loopback_config(path: Path, port: int, *, header: str = "") -> Path:
    """Write `loopback_config(port)` to `path`.

    Args:
        path: the file to (over)write.
        port: the loopback port to listen on.
        header: a comment line or lines to put first ("" for none).

    Returns:
        `path`.
    """
    path.write_text(header + loopback_config(port), encoding="utf-8")
    return path
