"""The members dimension: host:port labels from the history, through a host change.

Pure label rules on hand-written rows, and one tiny history through Spark
(member_hosts, then the week's collect_member_hosts): member a moves from
db3:3306 to db4:3306 on Tuesday; b and c share host db1 on ports 3306 and
3307.  Expected rows and labels by hand.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from spark_rollups.memberdim import (
    MEMBER_HOSTS_SCHEMA,
    collect_member_hosts,
    member_hosts,
    member_labels,
)
from tests.spark_rollups.history_rows import row, write_history

P = "pppppppp-0000-4000-8000-000000000001"
Q = "qqqqqqqq-0000-4000-8000-000000000002"
MONDAY = dt.datetime(2026, 11, 16, 12, 0, tzinfo=dt.UTC)


def _address(member: str, host: str, port: int, last_seen: str) -> dict[str, Any]:
    return {"member_id": member, "member_host": host, "member_port": port, "last_seen": last_seen}


def test_a_member_is_labelled_by_its_last_address_of_the_week() -> None:
    rows = [
        _address("a", "db3", 3306, "2026-11-16 23:59"),
        _address("a", "db4", 3306, "2026-11-22 23:59"),
    ]
    assert member_labels(rows) == {"a": "db4:3306"}


def test_two_members_on_one_host_are_told_apart_by_port() -> None:
    rows = [
        _address("b", "db1", 3306, "2026-11-22 23:59"),
        _address("c", "db1", 3307, "2026-11-22 23:59"),
    ]
    assert member_labels(rows) == {"b": "db1:3306", "c": "db1:3307"}


def test_a_member_replaced_on_the_same_address_gets_its_uuid_prefix() -> None:
    rows = [
        _address(P, "db5", 3306, "2026-11-17 08:00"),
        _address(Q, "db5", 3306, "2026-11-22 23:59"),
    ]
    assert member_labels(rows) == {P: "db5:3306 (pppppppp)", Q: "db5:3306 (qqqqqqqq)"}


def test_a_member_without_an_address_keeps_its_short_id() -> None:
    rows = [_address("b", "", 3306, "2026-11-22 23:59")]
    assert member_labels(rows, [P, "b"]) == {P: "pppppppp", "b": "b"}


def _sample(member: str, at: dt.datetime, host: str, port: int) -> dict[str, Any]:
    sample = row(member, at)
    sample.update(member_host=host, member_port=port)
    return sample


@pytest.mark.slow
def test_the_history_gives_each_address_with_when_it_was_seen(spark: Any, tmp_path: Path) -> None:
    hour = dt.timedelta(hours=1)
    tuesday = MONDAY + dt.timedelta(days=1)
    samples = [
        _sample("a", MONDAY, "db3", 3306),
        _sample("a", MONDAY + hour, "db3", 3306),
        _sample("a", tuesday, "db4", 3306),  # moved
        _sample("b", MONDAY, "db1", 3306),
        _sample("c", MONDAY, "db1", 3307),
        _sample("c", tuesday, "db1", 3307),
    ]
    write_history(tmp_path / "history", samples)
    history = spark.read.schema(MEMBER_HOSTS_SCHEMA).parquet(str(tmp_path / "history"))
    week = collect_member_hosts(member_hosts(history))
    got = [
        (
            r["member_id"],
            r["member_host"],
            r["member_port"],
            r["first_seen"],
            r["last_seen"],
            r["samples"],
            r["roles"],
            r["versions"],
        )
        for r in week["g1"]
    ]
    assert got == [
        ("a", "db3", 3306, "2026-11-16 12:00", "2026-11-16 13:00", 2, "SECONDARY", "8.4.3"),
        ("a", "db4", 3306, "2026-11-17 12:00", "2026-11-17 12:00", 1, "SECONDARY", "8.4.3"),
        ("b", "db1", 3306, "2026-11-16 12:00", "2026-11-16 12:00", 1, "SECONDARY", "8.4.3"),
        ("c", "db1", 3307, "2026-11-16 12:00", "2026-11-17 12:00", 2, "SECONDARY", "8.4.3"),
    ]
    assert member_labels(week["g1"]) == {"a": "db4:3306", "b": "db1:3306", "c": "db1:3307"}
