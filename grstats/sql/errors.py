"""MySQL's error numbers and SQLSTATEs for what the endpoint refuses.

Strategy: every refusal is a `SqlError` carrying MySQL's own error number, so
a client sees the same code a real server would give (1146 for an unknown
table, 1064 for a syntax error, 1290 for a write to a read-only server); the
server turns it into an error packet and the connection stays open.
mysql-mimic knows the SQLSTATE of a few codes only; `register_sqlstates` adds
the ones below to its table (additive: no code of its own changes).
"""

from __future__ import annotations

from typing import Final

TOO_MANY_CONNECTIONS: Final = 1040
ACCESS_DENIED: Final = 1045
NO_DB: Final = 1046
BAD_DB: Final = 1049
BAD_FIELD: Final = 1054
PARSE: Final = 1064
TOO_BIG_SELECT: Final = 1104
UNKNOWN: Final = 1105
NO_SUCH_TABLE: Final = 1146
NOT_SUPPORTED: Final = 1235
READ_ONLY: Final = 1290
FUNCTION_NOT_EXISTS: Final = 1305
QUERY_TIMEOUT: Final = 3024
OUT_OF_MEMORY: Final = 1041
INSECURE_TRANSPORT: Final = 3159
HANDSHAKE_ERROR: Final = 1043
PACKET_TOO_LARGE: Final = 1153
IDLE_TIMEOUT: Final = 4031
TOO_MANY_PREPARED: Final = 1461

SQLSTATES: Final = {
    BAD_DB: b"42000",
    BAD_FIELD: b"42S22",
    TOO_BIG_SELECT: b"42000",
    NO_SUCH_TABLE: b"42S02",
    FUNCTION_NOT_EXISTS: b"42000",
    READ_ONLY: b"HY000",
    QUERY_TIMEOUT: b"HY000",
    OUT_OF_MEMORY: b"HY001",
    TOO_MANY_CONNECTIONS: b"08004",
    INSECURE_TRANSPORT: b"HY000",
    PACKET_TOO_LARGE: b"08S01",
    IDLE_TIMEOUT: b"HY000",
    TOO_MANY_PREPARED: b"42000",
}

READ_ONLY_MESSAGE: Final = (
    "The MySQL server is running with the --read-only option so it cannot execute this statement"
)

INSECURE_TRANSPORT_MESSAGE: Final = (
    "Connections using insecure transport are prohibited while --require_secure_transport=ON."
)


class SqlError(Exception):
    """A statement refused or failed, as MySQL would report it.

    Attributes:
        code: MySQL's error number.
        message: the error text.
        limit: the endpoint limit that refused the statement ("max_rows",
            "max_result_bytes", "query_timeout"), "" for any other refusal.
    """

    def __init__(self, code: int, message: str, limit: str = "") -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.limit = limit

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def register_sqlstates() -> None:
    """Teach mysql-mimic the SQLSTATE of the codes above (idempotent)."""
    from mysql_mimic import errors  # noqa: PLC0415 - the server library, when serving

    for code, state in SQLSTATES.items():
        errors.SQLSTATES.setdefault(code, state)
