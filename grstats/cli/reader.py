"""Where the CLI reads tables from: the local daemon's HTTP API or the broker.

Strategy: the commands are synchronous click commands; reading the daemon is
one small GET per table with the standard library (`urllib`), so the CLI needs
no event loop and no extra dependency. Every failure a user can cause (the
daemon not running, a bad URL, a broker that does not answer) becomes one
`ReadError` whose message is a single readable line; the commands print it and
exit non-zero. Anything else escaping from here is a bug.

The broker path (`--bus`) lives in `grstats.cli.busread`, imported only when used,
so `grstats stats` against the API never imports aiomqtt.
"""

from __future__ import annotations

import json
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grstats.core.snapshot import TABLE_NAMES, Row

__all__ = [
    "DEFAULT_API",
    "DEFAULT_CONFIG",
    "ConfigDefaults",
    "ReadError",
    "config_defaults",
    "fetch_table",
    "normalize_api_url",
]

DEFAULT_API = "http://127.0.0.1:8437"
DEFAULT_CONFIG = Path("/etc/grstats/grstats.toml")


class ReadError(Exception):
    """A failure the user can fix; `str()` is one line for the terminal.

    Attributes:
        exit_code: 1 for "could not read" (daemon down, broker unreachable),
            2 for a mistake in the arguments or the config file.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True, slots=True)
class ConfigDefaults:
    """What the CLI takes from a daemon config file (None: not in the file)."""

    api: str | None = None
    bus_host: str | None = None
    bus_port: int | None = None
    prefix: str | None = None
    group: str | None = None


def _section(data: Mapping[str, Any], name: str, path: Path) -> Mapping[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ReadError(f"{path}: {name}: expected a table", exit_code=2)
    return value


def _str_key(section: Mapping[str, Any], key: str, where: str, path: Path) -> str | None:
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ReadError(f"{path}: {where}: expected a non-empty string, got {value!r}", 2)
    return value


def config_defaults(path: Path | None) -> ConfigDefaults:
    """Read the keys the CLI needs from a grstats.toml.

    The CLI reads only `[api] listen`, `[bus] host/port/prefix` and
    `[member] group`, and validates only those: a client must work with a
    config written for a newer daemon.

    Args:
        path: the file given with --config, or None for the default
            /etc/grstats/grstats.toml when it exists (silently nothing otherwise).

    Returns:
        The defaults found (None for keys absent).

    Raises:
        ReadError: the file given cannot be read or parsed, or a key has the
            wrong type (exit code 2; the message names the file and key).
    """
    if path is None:
        if not DEFAULT_CONFIG.is_file():
            return ConfigDefaults()
        path = DEFAULT_CONFIG
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror or exc}", 2) from None
    except tomllib.TOMLDecodeError as exc:
        raise ReadError(f"{path}: not valid TOML: {exc}", 2) from None
    api = _section(data, "api", path)
    bus = _section(data, "bus", path)
    member = _section(data, "member", path)
    listen = _str_key(api, "listen", "api.listen", path)
    port = bus.get("port")
    if port is not None and (not isinstance(port, int) or isinstance(port, bool)):
        raise ReadError(f"{path}: bus.port: expected an integer 1-65535, got {port!r}", 2)
    return ConfigDefaults(
        api=_listen_to_url(listen) if listen else None,
        bus_host=_str_key(bus, "host", "bus.host", path),
        bus_port=port,
        prefix=_str_key(bus, "prefix", "bus.prefix", path),
        group=_str_key(member, "group", "member.group", path),
    )


def _listen_to_url(listen: str) -> str:
    host, _, port = listen.rpartition(":")
    # A daemon listening on every address is still reached on loopback.
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    return f"http://{host}:{port}"


def normalize_api_url(url: str) -> str:
    """Check an --api value and return it as `http://host:port` (no trailing slash).

    `127.0.0.1:8437` (no scheme) is accepted as http.

    Args:
        url: what the user gave.

    Returns:
        The base URL.

    Raises:
        ReadError: not an http(s) URL with a host, or a bad port (exit code 2).
    """
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ReadError(f"bad --api URL {url!r}: {exc}", 2) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ReadError(f"bad --api URL {url!r}: expected http://HOST:PORT", 2)
    if port == 0:
        raise ReadError(f"bad --api URL {url!r}: port 0", 2)
    return text.rstrip("/")


def fetch_table(api: str, table: str, *, timeout: float = 5.0) -> list[Row]:
    """GET one table from a daemon: `<api>/v1/tables/<table>`.

    Args:
        api: base URL as returned by `normalize_api_url`.
        table: one of TABLE_NAMES.
        timeout: seconds for connect and read.

    Returns:
        The rows, each a mapping of column name to value.

    Raises:
        ReadError: the daemon cannot be reached, answers an error, or does not
            answer with a JSON array of objects.
    """
    if table not in TABLE_NAMES:
        raise ValueError(table)
    url = f"{api}/v1/tables/{table}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        raise ReadError(
            f"daemon at {api} answered HTTP {exc.code} for /v1/tables/{table}"
        ) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        why = getattr(reason, "strerror", None) or str(reason)
        raise ReadError(
            f"cannot reach the grstats daemon at {api} ({why}); is `grstats run` running?"
            " (or read the broker directly with --bus HOST:PORT)"
        ) from None
    except TimeoutError:
        raise ReadError(
            f"the grstats daemon at {api} did not answer within {timeout:g} s"
        ) from None
    except OSError as exc:
        raise ReadError(f"cannot reach the grstats daemon at {api} ({exc})") from None
    try:
        rows = json.loads(body)
    except ValueError:
        raise ReadError(f"{url} did not answer JSON; is it a grstats daemon?") from None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ReadError(f"{url} did not answer a JSON array of rows; is it a grstats daemon?")
    return rows
