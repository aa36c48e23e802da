"""The SQL endpoint's settings as plain values (the config package builds them from [sql]).

`native_password_hash` turns the configured secret into what
`mysql_native_password` checks against: MySQL's own `authentication_string`
(`*` and 40 hex digits, SHA1(SHA1(password))). A secret already in that form
is taken as the hash, so the password itself never needs to be on the host.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from grstats.core.topics import is_uuid

_HASH = re.compile(r"^\*[0-9A-Fa-f]{40}$")


def native_password_hash(secret: str) -> str:
    """MySQL's mysql_native_password hash of `secret` (`*` + 40 upper-case hex digits).

    A secret already shaped like such a hash is returned as it is (upper case).
    """
    if _HASH.match(secret):
        return secret.upper()
    return "*" + hashlib.sha1(hashlib.sha1(secret.encode()).digest()).hexdigest().upper()


def perspective(login: str, user: str) -> str | None:
    """The member a login name asks to be served as, or None for the account itself.

    `<user>+<member_id>` (`grstats+22222222-...`) is the account `<user>` seeing
    the tables as member `<member_id>` would: its `@@server_uuid` is that member,
    so a tool that filters `WHERE MEMBER_ID = @@server_uuid` (mysqld_exporter's
    member-stats query) reads that member's row. The member id is lower-cased.
    """
    prefix = user + "+"
    if login.startswith(prefix) and is_uuid(member := login[len(prefix) :]):
        return member.lower()
    return None


@dataclass(frozen=True, slots=True)
class SqlOptions:
    """What the SQL endpoint needs.

    Attributes:
        host, port: where to listen (port 0: any free port).
        user: the one account.
        password_hash: its mysql_native_password hash (`*` + 40 hex).
        max_connections: client connections at once (more get error 1040).
        query_timeout: seconds a statement may run.
        max_rows, max_result_bytes: the largest result returned.
        history_dir, rollups_dir: Parquet roots ("" for none).
        tls_cert_file, tls_key_file: TLS when both are set (the certificate
            file may hold the chain: the server certificate first).
        tls_required: refuse clients that do not use TLS (error 3159).
        threads, memory_limit: DuckDB per worker.
        handshake_timeout: seconds from connect to a finished login (then 1043).
        idle_timeout: seconds a logged-in client may stay silent (then 4031).
        max_statement_bytes: the longest statement (longer: 1153, before parsing).
        max_logins_per_address: connections one client address may have logging in
            at once (more: 1040); when every slot is taken, the one logging in for
            the longest is ended for a new connection.
    """

    host: str = "127.0.0.1"
    port: int = 3307
    user: str = "grstats"
    password_hash: str = ""
    max_connections: int = 16
    query_timeout: float = 10.0
    max_rows: int = 100_000
    max_result_bytes: int = 64 << 20
    history_dir: str = ""
    rollups_dir: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_required: bool = False
    threads: int = 1
    memory_limit: str = "256MB"
    handshake_timeout: float = 10.0
    idle_timeout: float = 600.0
    max_statement_bytes: int = 64 << 10
    max_logins_per_address: int = 4
