"""grstats.member_lag, and its old MySQL-looking name answered for one release with a note.

MySQL has no performance_schema.replication_group_member_lag; the endpoint
answers it for one release with the same rows as grstats.member_lag, a
warning count of 1 and Note 1287 (ER_WARN_DEPRECATED_SYNTAX, MySQL's text,
share/messages_to_clients.txt) in SHOW WARNINGS, and lists it nowhere (SHOW
TABLES, information_schema). The API answers the old path with the same
rows and RFC 9745's Deprecation header.
"""

from __future__ import annotations

import http.client
import io
import json

import pymysql

from grstats.api.routes import Routes
from grstats.core.lag import ChannelLag, MemberLag, StageTrx
from grstats.core.lagrows import lag_rows
from grstats.core.snapshot import DaemonSnapshot, with_tables
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.sql_inprocess import LOCAL, serve, snapshot

PASSWORD = "s3cret"
NOTE = (
    "Note",
    1287,
    "'performance_schema.replication_group_member_lag' is deprecated and will be removed "
    "in a future release. Please use grstats.member_lag instead",
)


def _warnings(conn: pymysql.connections.Connection) -> int:
    """The warning count of the last result's closing packet (PyMySQL keeps it there)."""
    count: int = conn._result.warning_count
    return count


def _lag_snapshot() -> DaemonSnapshot:
    applied = StageTrx("g:1", 1_000_000, 1_000_000, 2_000_000, 3_000_000)
    lag = MemberLag(4_000_000, (ChannelLag("group_replication_applier", True, True,
                                           last_applied=applied),))  # fmt: skip
    rows = tuple(lag_rows(LOCAL, lag, offset_s=0.0, spread_s=0.0))
    return with_tables(snapshot(), {"grstats_member_lag": rows})


def test_the_old_name_answers_the_same_rows_with_note_1287_and_is_listed_nowhere() -> None:
    options = SqlOptions(port=0, password_hash=native_password_hash(PASSWORD))
    for running in serve(options, _lag_snapshot):
        conn = pymysql.connect(
            host="127.0.0.1", port=running.port, user="grstats", password=PASSWORD
        )
        with conn, conn.cursor() as cur:
            cur.execute("SELECT MEMBER_ID, LAST_APPLIED_TRANSACTION FROM grstats.member_lag")
            new = cur.fetchall()
            assert _warnings(conn) == 0
            cur.execute("SHOW WARNINGS")
            assert cur.fetchall() == ()
            cur.execute(
                "SELECT MEMBER_ID, LAST_APPLIED_TRANSACTION"
                " FROM performance_schema.replication_group_member_lag"
            )
            old = cur.fetchall()
            assert _warnings(conn) == 1
            cur.execute("SHOW WARNINGS")
            assert cur.fetchall() == (NOTE,)
            cur.execute("SHOW TABLES FROM performance_schema")
            listed = {r[0] for r in cur.fetchall()}
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.tables"
                " WHERE TABLE_NAME = 'replication_group_member_lag'"
            )
            (in_info,) = cur.fetchone()
    assert new == old == ((LOCAL, "g:1"),)
    assert "replication_group_member_lag" not in listed
    assert "replication_group_member_stats" in listed  # the listing itself works
    assert in_info == 0


def test_the_api_answers_the_old_path_with_a_deprecation_header() -> None:
    routes = Routes(_lag_snapshot, lambda: None)  # type: ignore[arg-type,return-value]  # no API stats read
    status, ctype, body = routes.answer("/v1/tables/replication_group_member_lag")
    assert status == 200
    assert ctype.split("\r\n") == [
        "application/json",
        "Deprecation: true",
        'Link: </v1/tables/grstats_member_lag>; rel="successor-version"',
    ]
    new = routes.answer("/v1/tables/grstats_member_lag")
    assert new[1] == "application/json"
    assert json.loads(b"".join(body)) == json.loads(b"".join(new[2]))
    assert json.loads(b"".join(body))[0]["MEMBER_ID"] == LOCAL
    # the head the server writes parses as these three headers
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: 0\r\n\r\n"
    message = http.client.parse_headers(io.BytesIO(head.split("\r\n", 1)[1].encode()))
    assert message["Deprecation"] == "true"
    assert message["Content-Type"] == "application/json"
