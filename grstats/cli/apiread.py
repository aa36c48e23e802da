"""Reading tables from the local daemon's HTTP API.

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
import urllib.error
import urllib.parse
import urllib.request

from grstats.cli.errors import ReadError
from grstats.config import ApiSettings
from grstats.core.columns import table_names
from grstats.core.snapshot import Row

__all__ = ["ReadError", "api_url", "fetch_table", "normalize_api_url"]


def api_url(api: ApiSettings) -> str:
    """The URL a client reaches a daemon's `[api] listen` at.

    Args:
        api: the daemon's [api] settings.

    Returns:
        `http://host:port`; a daemon listening on every address is reached on loopback.
    """
    host = api.host
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{api.port}"


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
        table: a declared table (`columns.table_names()`).
        timeout: seconds for connect and read.

    Returns:
        The rows, each a mapping of column name to value.

    Raises:
        ReadError: the daemon cannot be reached, answers an error, or does not
            answer with a JSON array of objects.
    """
    if table not in table_names():
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
