"""How to reach and poll the local server: the DSN and `MySQLSettings`.

Settings (`MySQLSettings`, frozen; the config module fills it from ``[mysql]``)
--------------------------------------------------------------------------
``dsn``              str, ``mysql://USER@HOST[:PORT][?PARAMS]`` -- port defaults
                     to 3306; no password and no database path in it.
                     PARAMS: ``unix_socket=/path`` (connect through the socket
                     instead of TCP), ``charset=NAME`` (default utf8mb4).
                     Validated by `parse_dsn` (ValueError with the reason).
``password``         str, the resolved secret (config reads it from
                     ``password_env`` or ``password_file``, never inline in the
                     TOML); hidden from repr. Default "" (no password).
``poll_timeout``     float s > 0, default 2.0: bound of one `sample()` call.
``connect_timeout``  float s > 0, default 2.0: bound of one connect attempt.
``offline_after``    float s >= 0, default 10.0: grace while unreachable before
                     the local member shows OFFLINE.
``retry_initial``    float s > 0, default 0.5: first reconnect backoff.
``retry_max``        float s >= retry_initial, default 10.0: backoff cap.

The grstats MySQL account needs SELECT on performance_schema only, e.g.
``CREATE USER grstats@localhost IDENTIFIED BY '...'; GRANT SELECT ON
performance_schema.* TO grstats@localhost;``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

DEFAULT_PORT = 3306
DSN_PARAMS = ("charset", "unix_socket")


def parse_dsn(dsn: str) -> tuple[str, str, int, dict[str, str]]:
    """Split ``mysql://USER@HOST[:PORT][?charset=..&unix_socket=..]``.

    Args:
        dsn: the ``mysql.dsn`` setting.

    Returns:
        ``(user, host, port, params)``; port defaults to 3306, params holds only
        the known keys (`DSN_PARAMS`).

    Raises:
        ValueError: with a message naming what is wrong (scheme, user, inline
            password, host, port, path or parameter).
    """
    if not isinstance(dsn, str) or not dsn.strip():
        raise ValueError("expected a URL like mysql://grstats@127.0.0.1:3306, got an empty value")
    parts = urlsplit(dsn.strip())
    if parts.scheme.lower() != "mysql":
        shown = parts.scheme or "none"
        raise ValueError(f"expected the mysql:// scheme, got {shown!r} in {dsn!r}")
    if parts.password is not None:
        raise ValueError(
            "the password must not be written in the DSN; use mysql.password_env "
            "or mysql.password_file"
        )
    if not parts.username:
        raise ValueError(f"missing the user name (mysql://USER@host:port), got {dsn!r}")
    user = unquote(parts.username)
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"missing the host (mysql://user@HOST:port), got {dsn!r}")
    try:
        port = parts.port
    except ValueError:
        raw = parts.netloc.rpartition(":")[2]
        raise ValueError(f"port must be an integer 1-65535, got {raw!r}") from None
    if port is None:
        port = DEFAULT_PORT
    elif not 1 <= port <= 65535:
        raise ValueError(f"port must be an integer 1-65535, got {port}")
    if parts.path not in ("", "/"):
        raise ValueError(
            f"unexpected path {parts.path!r}: grstats reads performance_schema and "
            "needs no database name"
        )
    if parts.fragment:
        raise ValueError(f"unexpected fragment {'#' + parts.fragment!r}")
    params: dict[str, str] = {}
    if parts.query:
        try:
            pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            raise ValueError(f"malformed parameters {parts.query!r}") from None
        for key, value in pairs:
            if key not in DSN_PARAMS:
                known = ", ".join(DSN_PARAMS)
                raise ValueError(f"unknown parameter {key!r} (known: {known})")
            if key in params:
                raise ValueError(f"parameter {key!r} given twice")
            if not value:
                raise ValueError(f"parameter {key!r} has an empty value")
            params[key] = value
    return user, host, port, params


@dataclass(frozen=True, slots=True)
class MySQLSettings:
    """How to reach and poll the local server; field meanings in the module docstring."""

    dsn: str = f"mysql://grstats@127.0.0.1:{DEFAULT_PORT}"
    password: str = field(default="", repr=False)
    poll_timeout: float = 2.0
    connect_timeout: float = 2.0
    offline_after: float = 10.0
    retry_initial: float = 0.5
    retry_max: float = 10.0

    def __post_init__(self) -> None:
        parse_dsn(self.dsn)
        for name in ("poll_timeout", "connect_timeout", "retry_initial"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name}: expected a positive number of seconds, got {value!r}")
        if not isinstance(self.offline_after, int | float) or not self.offline_after >= 0:
            raise ValueError(
                f"offline_after: expected a number of seconds >= 0, got {self.offline_after!r}"
            )
        if not isinstance(self.retry_max, int | float) or not self.retry_max >= self.retry_initial:
            raise ValueError(
                f"retry_max: expected seconds >= retry_initial ({self.retry_initial}), "
                f"got {self.retry_max!r}"
            )
