"""The server's own flow-control figures (Gr_flow_control_throttle_*) over the real wire.

A mysql-mimic server serves performance_schema.global_status; with the
flow-control stats component it has the four rows, without it none. The
figures reach the sample exactly, and through a daemon the local row of
grstats_flow_control; without them the cells are NULL and nothing is logged
as a fault. Expected values are written by hand.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from grstats.core.sample import ServerFlowControl
from grstats.sources.mysql.flowstats import build_server_flow_control
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    DaemonProc,
    mysql_daemon_config,
    spawn_daemon,
    wait_for,
    wait_started,
)
from tests.fixtures.fake_mysql import PASSWORD, UUID, FakeMySQL
from tests.fixtures.mysql_source import GLOBAL_STATUS_COLUMNS, GLOBAL_STATUS_TABLE, T0, online_84

FLOW = "grstats_flow_control"
LAST = "2026-11-23 09:00:01.250000"


def _status(fake: FakeMySQL, **values: Any) -> None:
    rows = [{"VARIABLE_NAME": k, "VARIABLE_VALUE": v} for k, v in values.items()]
    # other status variables the query must not pick up
    rows += [
        {"VARIABLE_NAME": "Uptime", "VARIABLE_VALUE": "999"},
        {"VARIABLE_NAME": "GrXflowXcontrolXthrottleXcount", "VARIABLE_VALUE": "888"},
    ]
    fake.tables[GLOBAL_STATUS_TABLE] = (GLOBAL_STATUS_COLUMNS, rows)


def _with_component(fake: FakeMySQL, count: str = "3", time_sum: str = "2500000") -> None:
    # global_status shows every value as text (VARCHAR(1024)), as here
    _status(
        fake,
        Gr_flow_control_throttle_count=count,
        Gr_flow_control_throttle_time_sum=time_sum,
        Gr_flow_control_throttle_active_count="1",
        Gr_flow_control_throttle_last_throttle_timestamp=LAST,
    )


async def test_a_server_with_the_component_is_shown_exactly(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _with_component(fake)
    sample = await make_source(fake.port).sample(T0)
    assert sample.member.state == "ONLINE"
    assert sample.flow_control == ServerFlowControl(3, 2_500_000, 1, LAST)


async def test_a_server_without_the_component_gives_none_and_no_fault(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _status(fake)  # only unrelated status variables
    source = make_source(fake.port)
    with capture_logs() as logs:
        sample = await source.sample(T0)
        again = await source.sample(T0 + 1)
    assert sample.flow_control is None
    assert again.flow_control is None
    assert again.stats.transactions_certified == 12345  # the stats sample is whole
    assert source.connected
    assert [e for e in logs if e["log_level"] in ("warning", "error")] == []


async def test_the_figures_follow_the_server_and_restart_with_group_replication(
    fake: FakeMySQL, make_source: Any
) -> None:
    online_84(fake)
    _with_component(fake, count="7", time_sum="9000000")
    source = make_source(fake.port)
    first = await source.sample(T0)
    assert first.flow_control is not None
    assert (first.flow_control.count, first.flow_control.time_sum) == (7, 9_000_000)
    _status(
        fake,
        Gr_flow_control_throttle_count="0",
        Gr_flow_control_throttle_time_sum="0",
        Gr_flow_control_throttle_active_count="0",
        Gr_flow_control_throttle_last_throttle_timestamp="",
    )
    second = await source.sample(T0 + 1)
    assert second.flow_control == ServerFlowControl(0, 0, 0, "")


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # names compared case-insensitively, as MySQL's collation does
        (
            {
                "GR_FLOW_CONTROL_THROTTLE_COUNT": "18446744073709551615",
                "gr_flow_control_throttle_time_sum": b"42",
                "Gr_flow_control_throttle_active_count": 0,
                "Gr_flow_control_throttle_last_throttle_timestamp": "2026-01-02 03:04:05.000006",
            },
            ServerFlowControl(18446744073709551615, 42, 0, "2026-01-02 03:04:05.000006"),
        ),
        # no timestamp row, and one that is not MySQL's shape (it reaches a terminal)
        (
            {
                "Gr_flow_control_throttle_count": "1",
                "Gr_flow_control_throttle_time_sum": "2",
                "Gr_flow_control_throttle_active_count": "3",
            },
            ServerFlowControl(1, 2, 3, ""),
        ),
        (
            {
                "Gr_flow_control_throttle_count": "1",
                "Gr_flow_control_throttle_time_sum": "2",
                "Gr_flow_control_throttle_active_count": "3",
                "Gr_flow_control_throttle_last_throttle_timestamp": "\x1b[2J2026-01-02 03:04:05",
            },
            ServerFlowControl(1, 2, 3, ""),
        ),
        # a counter missing, negative, past uint64 or not a number: no figures at all
        (
            {
                "Gr_flow_control_throttle_count": "1",
                "Gr_flow_control_throttle_active_count": "3",
            },
            None,
        ),
        (
            {
                "Gr_flow_control_throttle_count": "-1",
                "Gr_flow_control_throttle_time_sum": "2",
                "Gr_flow_control_throttle_active_count": "3",
            },
            None,
        ),
        (
            {
                "Gr_flow_control_throttle_count": "18446744073709551616",
                "Gr_flow_control_throttle_time_sum": "2",
                "Gr_flow_control_throttle_active_count": "3",
            },
            None,
        ),
        (
            {
                "Gr_flow_control_throttle_count": "1",
                "Gr_flow_control_throttle_time_sum": "2.5",
                "Gr_flow_control_throttle_active_count": "3",
            },
            None,
        ),
        ({}, None),
    ],
)
def test_build_reads_the_four_variables(
    rows: dict[str, Any], expected: ServerFlowControl | None
) -> None:
    got = build_server_flow_control(
        [{"VARIABLE_NAME": k, "VARIABLE_VALUE": v} for k, v in rows.items()]
    )
    assert got == expected


# -- through a daemon's API ---------------------------------------------------------------

PERIOD = 0.25


def _mysql_daemon(tmp_path: Path, broker: Broker, server: FakeMySQL, **flow: Any) -> DaemonProc:
    secret = tmp_path / "mysql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    config = mysql_daemon_config(broker.port, server.port, secret, period=PERIOD)
    if flow:
        config["flow_control"] = flow
    d = spawn_daemon(tmp_path / "d", config)
    return wait_started(d, ready=True)


def _local_flow_row(d: DaemonProc, done: Any = bool) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        row = next((r for r in d.table(FLOW) if r["MEMBER_ID"] == UUID), None)
        return row if row is not None and done(row) else None

    return wait_for(probe, 20, "the local grstats_flow_control row")


@pytest.fixture
async def server() -> Any:
    s = FakeMySQL()
    await s.start()
    try:
        yield s
    finally:
        s.release.set()
        await s.stop()


async def test_daemon_shows_the_server_figures_in_the_local_flow_row(
    broker: Broker, tmp_path: Path, server: FakeMySQL
) -> None:
    online_84(server)
    _with_component(server, count="12", time_sum="3400000")
    d = await asyncio.to_thread(_mysql_daemon, tmp_path, broker, server)
    try:
        row = await asyncio.to_thread(
            _local_flow_row, d, lambda r: r["SERVER_THROTTLE_COUNT"] is not None
        )
        assert row["SERVER_THROTTLE_COUNT"] == 12
        assert row["SERVER_THROTTLE_TIME_SUM"] == 3_400_000
        assert row["SERVER_THROTTLE_ACTIVE_COUNT"] == 1
        assert row["SERVER_THROTTLE_LAST_THROTTLE_TIMESTAMP"] == LAST
        _with_component(server, count="13", time_sum="3500000")  # one more hold
        row = await asyncio.to_thread(
            _local_flow_row, d, lambda r: r["SERVER_THROTTLE_COUNT"] == 13
        )
        assert row["SERVER_THROTTLE_TIME_SUM"] == 3_500_000
        assert await asyncio.to_thread(d.terminate) == 0
    finally:
        if d.alive():
            d.kill9()


async def test_daemon_without_the_component_shows_nulls_and_no_fault(
    broker: Broker, tmp_path: Path, server: FakeMySQL
) -> None:
    online_84(server)
    d = await asyncio.to_thread(_mysql_daemon, tmp_path, broker, server)
    try:
        # a few samples in: the replay has stepped more than once
        row = await asyncio.to_thread(_local_flow_row, d, lambda r: r["APPLY_RATE"] is not None)
        for column in (
            "SERVER_THROTTLE_COUNT",
            "SERVER_THROTTLE_TIME_SUM",
            "SERVER_THROTTLE_ACTIVE_COUNT",
            "SERVER_THROTTLE_LAST_THROTTLE_TIMESTAMP",
        ):
            assert row[column] is None, column
        _, health = await asyncio.to_thread(d.get, "/healthz")
        assert health["status"] == "ok", health
        rejected = [e for e in d.events() if e.get("event") == "mysql.query_rejected"]
        assert rejected == []
    finally:
        if d.alive():
            d.kill9()


async def test_replay_and_server_figures_side_by_side(
    broker: Broker, tmp_path: Path, server: FakeMySQL
) -> None:
    """A scripted hold: the local applier queue is over a low threshold.

    The replay sees the member as the applier bottleneck with the quota
    active; it charges held time (THROTTLED_SECONDS) only for periods in which
    a writer's commits reached the quota, and the fake server's counters do not
    move, so none; the server says how many transactions it held and their
    summed hold time in µs. They are different measures, shown in one row.
    """
    online_84(server, COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE=40)  # threshold 10: 30 over
    _with_component(server, count="4", time_sum="6000000")
    d = await asyncio.to_thread(_mysql_daemon, tmp_path, broker, server, applier_threshold=10)
    try:
        row = await asyncio.to_thread(
            _local_flow_row,
            d,
            lambda r: r["THROTTLING"] == 1 and r["SERVER_THROTTLE_COUNT"] is not None,
        )
        assert row["BOTTLENECK"] == "applier"
        assert row["EXCESS_OVER_THRESHOLD"] == 30
        assert row["THROTTLING"] == 1
        assert row["WRITERS_HELD"] == 0 and row["THROTTLED_SECONDS"] == 0
        assert row["SERVER_THROTTLE_COUNT"] == 4
        assert row["SERVER_THROTTLE_TIME_SUM"] == 6_000_000
    finally:
        if d.alive():
            d.kill9()
