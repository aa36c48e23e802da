"""MySQL's error numbers a replication channel shows, with MySQL's text and what to check.

Strategy: LAST_ERROR_NUMBER is a server error (share/messages_to_clients.txt,
include/mysqld_error.h: 1000-1999, 3000-5999), a client error of the
connection to the source (include/errmsg.h, libmysql/errmsg.cc: 2000-2999), or
a replication error of the error log (share/messages_to_error_log.txt,
10000+, shown as MY-0xxxxx). `ERRORS` holds the ones a channel commonly
shows, each with its symbol, MySQL's message template as shipped and the
file it is from, and a short "what to check" written for grstats; an error
number not listed is named as MySQL's error <n> and its LAST_ERROR_MESSAGE
(the server's own text) carries the meaning.

Facts carried over from mysql/mysql-server (GPL): the numbers and texts; the
advice is grstats'. In `protocol` (standard library only) so that the live
`grstats channels --explain` and the weekly report's "Replication errors this
week" (spark_rollups imports no grstats) name errors from one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ERRORS", "GR_RECOVERY_LOG", "MySQLError", "describe"]


@dataclass(frozen=True, slots=True)
class MySQLError:
    """One MySQL error number as MySQL ships it, and what an operator should check."""

    number: int
    symbol: str
    text: str  # MySQL's message template
    source: str  # the mysql/mysql-server file it is declared in
    check: str  # grstats' advice


_CLIENT = "include/errmsg.h, libmysql/errmsg.cc"
_SERVER = "include/mysqld_error.h, share/messages_to_clients.txt"

ERRORS: Final = {
    e.number: e
    for e in (
        MySQLError(
            2003,
            "CR_CONN_HOST_ERROR",
            "Can't connect to MySQL server on '%-.100s:%u' (%d)",
            _CLIENT,
            "that the source's mysqld runs and listens on that host:port, and that no "
            "firewall between the two drops it (the number in parentheses is the OS errno: "
            "111 refused, 110 timed out, 113 no route)",
        ),
        MySQLError(
            2005,
            "CR_UNKNOWN_HOST",
            "Unknown MySQL server host '%-.100s' (%d)",
            _CLIENT,
            "that the source's MEMBER_HOST (report_host) resolves from this member",
        ),
        MySQLError(
            2026,
            "CR_SSL_CONNECTION_ERROR",
            "SSL connection error: %-.100s",
            _CLIENT,
            "the channel's TLS settings (SSL_* in replication_connection_configuration) "
            "against the source's certificates",
        ),
        MySQLError(
            2061,
            "CR_AUTH_PLUGIN_ERR",
            "Authentication plugin '%s' reported error: %s",
            _CLIENT,
            "the replication user's authentication plugin: caching_sha2_password needs "
            "TLS or SOURCE_GET_PUBLIC_KEY=1 on the channel",
        ),
        MySQLError(
            1045,
            "ER_ACCESS_DENIED_ERROR",
            "Access denied for user '%-.48s'@'%-.64s' (using password: %s)",
            _SERVER,
            "the channel's user and password (CHANGE REPLICATION SOURCE TO ... FOR CHANNEL) "
            "and that user's grants on the source (REPLICATION SLAVE)",
        ),
        MySQLError(
            1062,
            "ER_DUP_ENTRY",
            "Duplicate entry '%-.192s' for key '%-.192s'",
            _SERVER,
            "which write reached this member outside the group (an errant transaction: "
            "`grstats gtids --explain`); the row must match the source before the applier "
            "can go on",
        ),
        MySQLError(
            1032,
            "ER_KEY_NOT_FOUND",
            "Can't find record in '%-.192s'",
            _SERVER,
            "whether this member's data diverged from the group (a row changed or deleted "
            "outside replication)",
        ),
        MySQLError(
            1236,
            "ER_SOURCE_FATAL_ERROR_READING_BINLOG",
            "Got fatal error %d from source when reading data from binary log: '%-.512s'",
            _SERVER,
            "whether the source purged binary logs this member still needs (recovery by "
            "clone instead)",
        ),
    )
}

#: GR's error-log lines when recovery cannot connect to its donor
#: (plugin/group_replication/src/recovery_state_transfer.cc logs both;
#: share/messages_to_error_log.txt; shown as MY-011582 and MY-011583 in the log)
GR_RECOVERY_LOG: Final = (
    (
        11582,
        "ER_GRP_RPL_DONOR_SERVER_CONN",
        "There was an error when connecting to the donor server. Please check that "
        "group_replication_recovery channel credentials and all MEMBER_HOST column values of "
        "performance_schema.replication_group_members table are correct and DNS resolvable.",
    ),
    (
        11583,
        "ER_GRP_RPL_CHECK_STATUS_TABLE",
        "For details please check performance_schema.replication_connection_status table and "
        "error log messages of Replica I/O for channel group_replication_recovery.",
    ),
)


def describe(number: int) -> str:
    """`error 2003 (CR_CONN_HOST_ERROR: "Can't connect to MySQL server on ...")` for a number."""
    known = ERRORS.get(number)
    if known is None:
        return f"MySQL error {number}"
    return f'error {number} ({known.symbol}: "{known.text}")'
