"""`grstats channels --explain` and the overview on hand-worked rows; a healthy group is silent.

The rows are written here by hand as a snapshot would hold them; the
expected sentences are written out in full (the numbers worked by hand:
first seen at 07:00:00, now 07:02:10 -> 2 min 10 s; last try 07:02:00 -> 10 s).
"""

from __future__ import annotations

from grstats.core.channel_errors import ChannelErrorWatch
from grstats.core.channel_explain import channel_overview, explain_channels
from grstats.core.snapshot import Cell

A, B, C = (
    "11111111-1111-1111-1111-111111111111",
    "22222222-2222-2222-2222-222222222222",
    "33333333-3333-3333-3333-333333333333",
)
LABELS = {A: "db1:3306", B: "db2:3306", C: "db3:3306"}
NOW = 1_796_540_530_000_000  # 2026-12-06 07:02:10 UTC
R = dict[str, Cell]
ZERO = "0000-00-00 00:00:00.000000"
MESSAGE = (
    "Error connecting to source 'rpl_user@db1:3306'. This was attempt 1/1, with a delay of 60 "
    "seconds between attempts. Message: Can't connect to MySQL server on 'db1:3306' (111)"
)


def _members(*states: tuple[str, str]) -> list[R]:
    return [{"MEMBER_ID": m, "MEMBER_STATE": s} for m, s in states]


def _status(member: str, channel: str, state: str, error: int = 0, at: str = ZERO) -> R:
    return {
        "MEMBER_ID": member,
        "CHANNEL_NAME": channel,
        "SERVICE_STATE": state,
        "LAST_ERROR_NUMBER": error,
        "LAST_ERROR_MESSAGE": MESSAGE if error else "",
        "LAST_ERROR_TIMESTAMP": at,
    }


def _tables(*status: R, members: list[R]) -> dict[str, list[R]]:
    watch = ChannelErrorWatch()
    tables: dict[str, list[R]] = {
        "replication_group_members": members,
        "replication_connection_status": list(status),
        "replication_applier_status": [
            {"MEMBER_ID": s["MEMBER_ID"], "CHANNEL_NAME": s["CHANNEL_NAME"], "SERVICE_STATE": "ON"}
            for s in status
        ],
    }
    # two attempts seen by this daemon: 07:00:00 then 07:02:00
    first = [dict(s) for s in status]
    for row in first:
        if row["LAST_ERROR_NUMBER"]:
            row["LAST_ERROR_TIMESTAMP"] = "2026-12-06 07:00:00.000000"
    watch.observe({"replication_connection_status": first})
    watch.observe({"replication_connection_status": list(status)})
    tables["grstats_channel_errors"] = [dict(r) for r in watch.rows()]
    return tables


HEALTHY = _tables(
    _status(A, "group_replication_applier", "ON"),
    _status(B, "group_replication_applier", "ON"),
    _status(C, "group_replication_applier", "ON"),
    members=_members((A, "ONLINE"), (B, "ONLINE"), (C, "ONLINE")),
)
RECOVERING = _tables(
    _status(A, "group_replication_applier", "ON"),
    _status(C, "group_replication_applier", "ON"),
    _status(
        C,
        "group_replication_recovery",
        "CONNECTING",
        2003,
        "2026-12-06 07:02:00.000000",
    ),
    members=_members((A, "ONLINE"), (B, "OFFLINE"), (C, "RECOVERING")),
)


def test_a_healthy_group_is_explained_by_nothing() -> None:
    assert explain_channels(HEALTHY, LABELS, NOW) == []


def test_a_recovery_that_cannot_reach_its_donor_is_one_sentence_with_the_numbers() -> None:
    lines = explain_channels(RECOVERING, LABELS, NOW)
    assert lines[1] == (
        "db3:3306 (RECOVERING): its recovery channel (group_replication_recovery) cannot "
        "connect to its donor db1:3306: error 2003 (CR_CONN_HOST_ERROR: \"Can't connect to "
        "MySQL server on '%-.100s:%u' (%d)\"), first seen 2 min 10 s ago, 2 tries, the last "
        f'10 s ago (MySQL: "{MESSAGE}"); check that the source\'s mysqld runs and listens on '
        "that host:port, and that no firewall between the two drops it (the number in "
        "parentheses is the OS errno: 111 refused, 110 timed out, 113 no route) (GR logs "
        "ER_GRP_RPL_DONOR_SERVER_CONN (MY-011582), ER_GRP_RPL_CHECK_STATUS_TABLE (MY-011583))."
    )


def test_a_member_not_online_without_a_channel_error_says_where_to_look() -> None:
    lines = explain_channels(RECOVERING, LABELS, NOW)
    assert lines[0] == (
        "db2:3306 is OFFLINE and none of its channels shows an error: check its error log "
        "and `grstats members` for why it left or is not reachable."
    )
    assert len(lines) == 2  # db1 is ONLINE with no error: nothing about it


def test_the_donor_comes_from_the_configuration_table_when_it_is_there() -> None:
    tables = dict(RECOVERING)
    tables["replication_connection_configuration"] = [
        {
            "MEMBER_ID": C,
            "CHANNEL_NAME": "group_replication_recovery",
            "HOST": "10.0.0.1",
            "PORT": 3310,
        }
    ]
    assert "its donor 10.0.0.1:3310:" in explain_channels(tables, LABELS, NOW)[1]


def test_the_overview_has_a_row_per_member_and_channel_with_the_open_error() -> None:
    rows = channel_overview(RECOVERING, NOW)
    quiet = {"LAST_ERROR_NUMBER": None, "ERROR_AGE_SECONDS": None, "TRIES": None}
    assert rows == [
        {"MEMBER_ID": A, "CHANNEL_NAME": "group_replication_applier", "IO_STATE": "ON",
         "SQL_STATE": "ON", **quiet},
        {"MEMBER_ID": C, "CHANNEL_NAME": "group_replication_applier", "IO_STATE": "ON",
         "SQL_STATE": "ON", **quiet},
        {"MEMBER_ID": C, "CHANNEL_NAME": "group_replication_recovery", "IO_STATE": "CONNECTING",
         "SQL_STATE": "ON", "LAST_ERROR_NUMBER": 2003, "ERROR_AGE_SECONDS": 10.0, "TRIES": 2},
    ]  # fmt: skip


def test_an_error_that_clears_closes_its_episode_and_a_new_one_counts_a_change() -> None:
    watch = ChannelErrorWatch()
    key = (C, "group_replication_recovery", "receiver")
    at = "2026-12-06 07:00:00.000000"
    row = _status(C, "group_replication_recovery", "CONNECTING", 2003, at)
    watch.observe({"replication_connection_status": [row]})
    watch.observe({"replication_connection_status": [row]})  # the same rows again: no change
    assert (watch.episodes[key].tries, watch.episodes[key].changes) == (1, 1)
    watch.observe(
        {"replication_connection_status": [_status(C, "group_replication_recovery", "ON")]}
    )
    assert not watch.episodes[key].open
    again = _status(
        C, "group_replication_recovery", "CONNECTING", 1045, "2026-12-06 07:05:00.000000"
    )
    watch.observe({"replication_connection_status": [again]})
    assert (watch.episodes[key].number, watch.episodes[key].open) == (1045, True)
    assert watch.episodes[key].changes == 2
    watch.observe({})  # the recovery channel's row went: the episode closes
    assert not watch.episodes[key].open
