"""Channel error episodes on hand-built history rows, and "Replication errors this week".

One member's samples every 10 s, written by hand: no error, then its
recovery channel's receiver with 2003 for three samples, no error, 2003
again for one sample, then worker 1 of its applier channel with 1062 for two
samples. The episodes (runs of one key) are worked out by hand below. The
section is checked from collected rows (no Spark), and it is omitted for a
week without errors.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from spark_rollups.channelreport import HEADING, ChannelWeek, channel_section
from spark_rollups.channelrollup import error_episodes
from spark_rollups.render import Table
from spark_rollups.schema import CHANNEL_SCHEMA

G, M = "g", "m1"
T0 = dt.datetime(2026, 11, 17, 10, 0, 0, tzinfo=dt.UTC)
REC, APP = "group_replication_recovery", "group_replication_applier"
KEYS: list[tuple[str | None, str | None, int | None]] = [
    (None, None, None),
    (REC, "receiver", 2003),
    (REC, "receiver", 2003),
    (REC, "receiver", 2003),
    (None, None, None),
    (REC, "receiver", 2003),
    (APP, "worker 1", 1062),
    (APP, "worker 1", 1062),
]


def _at(i: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=10 * i)


@pytest.mark.slow
def test_runs_of_one_error_are_episodes_first_and_last_seen(spark: Any) -> None:
    rows = [(G, M, _at(i), *key) for i, key in enumerate(KEYS)]
    rows.reverse()  # the order of the files says nothing: sampled_at orders
    history = spark.createDataFrame(rows, CHANNEL_SCHEMA)
    got = sorted(
        (r["channel_name"], r["thread"], r["error_number"], _utc(r["first_seen"]),
         _utc(r["last_seen"]), r["samples"])
        for r in error_episodes(history).collect()
    )  # fmt: skip
    at = [_at(i) for i in range(len(KEYS))]
    assert got == sorted(
        [
            (REC, "receiver", 2003, at[1], at[3], 3),
            (REC, "receiver", 2003, at[5], at[5], 1),
            (APP, "worker 1", 1062, at[6], at[7], 2),
        ]
    )


def _utc(collected: dt.datetime) -> dt.datetime:
    """A collected timestamp in UTC: PySpark hands it back naive, in the process's time zone."""
    return collected.astimezone(dt.UTC)


def _error(
    member: str, channel: str, thread: str, number: int, *, first: int, last: int
) -> dict[str, Any]:
    return {
        "member_id": member,
        "channel_name": channel,
        "thread": thread,
        "error_number": number,
        "first_seen_s": first,
        "last_seen_s": last,
        "runs": 1,
        "samples": 3,
    }


def test_a_week_without_channel_errors_has_no_section() -> None:
    assert channel_section(None) is None
    assert channel_section(ChannelWeek([])) is None


def test_the_section_names_the_member_the_error_and_when() -> None:
    first = int(T0.timestamp())
    week = ChannelWeek([_error(M, REC, "receiver", 2003, first=first, last=first + 130)])
    found = channel_section(week, {M: "db3:3306"})
    assert found is not None
    heading, items = found
    assert heading == HEADING == "Replication errors this week"
    assert str(items[0]).startswith("1 replication channel error on 1 member this week.")
    table = items[1]
    assert isinstance(table, Table)
    assert [table.cells(r) for r in table.rows] == [
        [
            "db3:3306",
            REC,
            "receiver",
            "2003 CR_CONN_HOST_ERROR",
            "Tue 11-17 10:00:00",
            "Tue 11-17 10:02:10",
            "1",
        ]
    ]
    assert (
        table.note == "2003: Can't connect to MySQL server on '%-.100s:%u' (%d) (MySQL's messages)."
    )
