"""`grstats run` daemons as real processes over a real Mosquitto (issue 3 scenarios)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiomqtt
import pytest

from protocol import decode_envelope, decode_pipeline_stats
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    M3,
    MEMBERS,
    STATS,
    STATUS,
    DaemonProc,
    daemon_config,
    daemons,
    http_get,
    start_daemon,
    wait_for,
)

pytestmark = pytest.mark.slow
PERIOD = 0.25
PREFIX = "grstats/v1"


def view_id(daemon: DaemonProc) -> str:
    """The local member's VIEW_ID as its daemon shows it."""
    return str(daemon.rows_by_member()[daemon.member_id]["VIEW_ID"])


def member_ids(daemon: DaemonProc, table: str = STATS) -> set[str]:
    return {row["MEMBER_ID"] for row in daemon.table(table)}


def states(daemon: DaemonProc) -> dict[str, str]:
    return {row["MEMBER_ID"]: row["MEMBER_STATE"] for row in daemon.table(MEMBERS)}


def test_three_members_see_each_other_and_agree_once_the_workload_stops(
    broker: Broker, tmp_path: Path
) -> None:
    stop_at = int(time.time()) + 5
    members = [M1, M2, M3]
    simulated = {"write_rate": 40.0, "conflict_probability": 0.2, "stop_at": stop_at}
    configs = [
        daemon_config(broker.port, m, members, period=PERIOD, simulated=simulated) for m in members
    ]
    with daemons(tmp_path, configs) as ds:
        # 3 periods after the last one is up, plus scheduling margin on a busy machine.
        for d in ds:
            wait_for(lambda d=d: member_ids(d) == set(members), 3 * PERIOD + 4.0, "3 rows")
        wait_for(lambda: time.time() > stop_at + 1, 15, "the workload to stop")

        def settled() -> list[dict[str, dict[str, object]]] | None:
            views = [d.rows_by_member() for d in ds]
            checked = {row["COUNT_TRANSACTIONS_CHECKED"] for v in views for row in v.values()}
            conflicts = {row["COUNT_CONFLICTS_DETECTED"] for v in views for row in v.values()}
            done = all(len(v) == 3 for v in views) and len(checked) == 1 and len(conflicts) == 1
            return views if done else None

        views = wait_for(settled, 10, "CHECKED and CONFLICTS_DETECTED to agree everywhere")
        first = views[0][M1]
        assert int(first["COUNT_CONFLICTS_DETECTED"]) > 0  # the workload had conflicts
        # LOCAL_ROLLBACK is each proposer's own: every daemon shows the value the
        # member itself reports, and the rollbacks add up to the conflicts.
        local_rollback = {d.member_id: d.rows_by_member()[d.member_id] for d in ds}
        for view in views:
            for m in members:
                assert (
                    view[m]["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"]
                    == local_rollback[m]["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"]
                )
        total = sum(int(local_rollback[m]["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"]) for m in members)
        assert total == first["COUNT_CONFLICTS_DETECTED"]


def test_scripted_member_stats_scenario_seen_from_both_members(
    broker: Broker, tmp_path: Path
) -> None:
    t0 = int(time.time()) + 4
    script = [
        {"at": t0, "member": M1, "action": "conflict", "count": 1},
        {"at": t0 + 1, "member": M1, "action": "applier_stop", "duration": 120.0},
        {"at": t0 + 2, "member": M2, "action": "commit", "count": 10},
    ]
    simulated = {"scripted": True, "script": script}
    configs = [
        daemon_config(broker.port, m, [M1, M2], period=PERIOD, simulated=simulated)
        for m in (M1, M2)
    ]
    with daemons(tmp_path, configs) as ds:
        wait_for(lambda: time.time() > t0 + 3, 20, "the script to run")

        def expected(view: dict[str, dict[str, object]]) -> bool:
            return (
                len(view) == 2
                and view[M1]["COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"] == 10
                and view[M2]["COUNT_TRANSACTIONS_LOCAL_PROPOSED"] == 10
            )

        for d in ds:
            view = wait_for(lambda d=d: (v := d.rows_by_member()) and expected(v) and v, 10, "")
            assert view[M1]["COUNT_CONFLICTS_DETECTED"] == 1
            assert view[M2]["COUNT_CONFLICTS_DETECTED"] == 1
            assert view[M1]["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"] == 1
            assert view[M2]["COUNT_TRANSACTIONS_LOCAL_ROLLBACK"] == 0
            assert view[M1]["COUNT_TRANSACTIONS_LOCAL_PROPOSED"] == 1  # the rolled-back attempt
            assert view[M1]["COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"] == 10
            assert view[M2]["COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"] == 0
            assert view[M1]["COUNT_TRANSACTIONS_CHECKED"] == 11
            assert view[M2]["COUNT_TRANSACTIONS_CHECKED"] == 11


async def capture_stats(broker: Broker, member: str, seconds: float) -> list[tuple[bool, str]]:
    """(flag, LAST_CONFLICT_FREE text) of every stats message `member` sends for a while."""
    out: list[tuple[bool, str]] = []
    async with aiomqtt.Client(broker.host, broker.port) as client:
        await client.subscribe(f"{PREFIX}/{GROUP}/{member}/stats")
        try:
            async with asyncio.timeout(seconds):
                async for message in client.messages:
                    if message.retain or not isinstance(message.payload, bytes):
                        continue
                    stats = decode_pipeline_stats(decode_envelope(message.payload).stats)
                    text = stats.transaction_last_conflict_free.decode()
                    out.append((stats.transaction_gtids_present, text))
        except TimeoutError:
            pass
    return out


def test_remote_gtid_columns_change_only_with_flag_one(broker: Broker, tmp_path: Path) -> None:
    simulated = {"write_rate": 30.0, "conflict_probability": 0.0}
    configs = [
        daemon_config(
            broker.port, m, [M1, M2], period=PERIOD, gtid_interval=1.5, simulated=simulated
        )
        for m in (M1, M2)
    ]
    with daemons(tmp_path, configs) as (d1, d2):
        wait_for(lambda: member_ids(d2) == {M1, M2}, 10, "both rows")
        seen_remote: list[str] = []
        seen_local: list[str] = []

        async def observe() -> list[tuple[bool, str]]:
            capture = asyncio.create_task(capture_stats(broker, M1, 5.0))
            loop = asyncio.get_running_loop()
            end = loop.time() + 4.5
            while loop.time() < end:
                remote = await asyncio.to_thread(d2.rows_by_member)
                local = await asyncio.to_thread(d1.rows_by_member)
                seen_remote.append(str(remote[M1]["LAST_CONFLICT_FREE_TRANSACTION"]))
                seen_local.append(str(local[M1]["LAST_CONFLICT_FREE_TRANSACTION"]))
                await asyncio.sleep(0.05)
            return await capture

        messages = asyncio.run(observe())
    flagged = {text for flag, text in messages if flag}
    assert any(not flag for flag, _ in messages)
    assert all(text == "" for flag, text in messages if not flag)  # flag '0': empty strings
    assert len(flagged) >= 2
    # Every value member 2 showed for member 1 came from a flag-'1' message
    # (allowing the one that was current when the capture started).
    changes = [v for i, v in enumerate(seen_remote) if i == 0 or v != seen_remote[i - 1]]
    assert set(changes[1:]) <= flagged
    # ... while member 1's own live row moved more often than the flagged messages.
    assert len(set(seen_local)) > len(set(seen_remote))


def test_daemon_started_later_shows_every_members_gtids_at_once(
    broker: Broker, tmp_path: Path
) -> None:
    members = [M1, M2, M3]
    simulated = {"write_rate": 30.0, "conflict_probability": 0.0}
    configs = [
        daemon_config(broker.port, m, members, period=PERIOD, gtid_interval=60, simulated=simulated)
        for m in members
    ]
    with daemons(tmp_path, configs[:2]) as (d1, _d2):
        wait_for(lambda: member_ids(d1) == {M1, M2}, 10, "two rows")
        # Members 1 and 2 sent their GTID sets on their first message only; the
        # broker kept them (retained), so a newcomer shows them immediately.
        late = start_daemon(tmp_path / "late", configs[2])
        try:
            view = wait_for(
                lambda: (v := late.rows_by_member()) and set(v) == set(members) and v,
                3 * PERIOD + 4.0,
                "the late daemon to show all three",
            )
            for m in (M1, M2):
                assert view[m]["TRANSACTIONS_COMMITTED_ALL_MEMBERS"].startswith(GROUP)
                assert view[m]["LAST_CONFLICT_FREE_TRANSACTION"].startswith(GROUP)
        finally:
            late.kill9()


def test_killed_member_turns_unreachable_and_stopped_member_is_removed(
    broker: Broker, tmp_path: Path
) -> None:
    members = [M1, M2, M3]
    configs = [
        daemon_config(broker.port, m, members, period=PERIOD, unreachable_after=4) for m in members
    ]
    with daemons(tmp_path, configs) as (d1, d2, d3):
        for d in (d1, d2):
            wait_for(lambda d=d: member_ids(d, MEMBERS) == set(members), 10, "three rows")
        killed_at = time.monotonic()
        d3.kill9()
        for d in (d1, d2):
            wait_for(lambda d=d: states(d).get(M3) == "UNREACHABLE", 10, "M3 UNREACHABLE")
        # Never before its last message could be 4 periods old.
        assert time.monotonic() - killed_at >= 3 * PERIOD
        assert states(d1)[M1] == "ONLINE"

        assert d2.terminate(timeout=10) == 0  # drains under a 4 s deadline (DRAIN_TIMEOUT_S)
        wait_for(lambda: M2 not in member_ids(d1, MEMBERS), 5, "M2 removed on offline")
        assert states(d1).get(M3) == "UNREACHABLE"  # still suspected, not yet forgotten


def test_all_members_reconnect_and_converge_after_broker_restart(
    broker: Broker, tmp_path: Path
) -> None:
    members = [M1, M2, M3]
    configs = [daemon_config(broker.port, m, members, period=PERIOD) for m in members]
    with daemons(tmp_path, configs) as ds:
        for d in ds:
            wait_for(lambda d=d: member_ids(d, MEMBERS) == set(members), 10, "three rows")
        broker.stop()
        for d in ds:
            wait_for(lambda d=d: http_get(d.api_port, "/healthz")[0] == 503, 10, "disconnected")
        # The local row keeps updating while the broker is away.
        seq_before = ds[0].rows_by_member(STATUS)[M1]["SEQ"]
        wait_for(lambda: ds[0].rows_by_member(STATUS)[M1]["SEQ"] > seq_before + 2, 5, "ticks")
        broker.start()
        for d in ds:
            wait_for(lambda d=d: http_get(d.api_port, "/healthz")[0] == 200, 20, "reconnected")
        for d in ds:
            wait_for(
                lambda d=d: set(states(d).values()) == {"ONLINE"} and len(states(d)) == 3,
                10,
                "all members ONLINE again",
            )
            assert d.alive()
            assert d.counters()["bus_reconnects"] >= 1


async def publish_raw(broker: Broker, messages: list[tuple[str, bytes]]) -> None:
    async with aiomqtt.Client(broker.host, broker.port) as client:
        for topic, payload in messages:
            await client.publish(topic, payload, qos=1)


async def capture_one(broker: Broker, topic: str) -> bytes:
    async with aiomqtt.Client(broker.host, broker.port) as client:
        await client.subscribe(topic)
        async for message in client.messages:
            if not message.retain and isinstance(message.payload, bytes) and message.payload:
                return message.payload
    raise AssertionError("no message")


def test_hostile_messages_are_counted_by_reason_and_change_nothing(
    broker: Broker, tmp_path: Path
) -> None:
    configs = [daemon_config(broker.port, m, [M1, M2], period=PERIOD) for m in (M1, M2)]
    with daemons(tmp_path, configs) as (d1, d2):
        wait_for(lambda: member_ids(d2) == {M1, M2}, 10, "both rows")
        stats_topic = f"{PREFIX}/{GROUP}/{M1}/stats"
        old = asyncio.run(asyncio.wait_for(capture_one(broker, stats_topic), 10))
        # Make sure member 1 has moved on before replaying its old message.
        seq_old = decode_envelope(old).seq
        wait_for(lambda: d2.rows_by_member(STATUS)[M1]["SEQ"] > seq_old, 5, "newer seq")
        spoofed_topic = f"{PREFIX}/{GROUP}/{M3}/stats"  # M1's envelope under M3's topic
        before = d2.counters()
        hostile = [
            (stats_topic, b"\xc1\x00garbage"),  # malformed
            (stats_topic, old[: len(old) // 2]),  # truncated: malformed
            (stats_topic, b"\x91" + b"\x00" * 66_000),  # oversized (> 65536, < max packet)
            (spoofed_topic, old),  # spoofed
            (stats_topic, old),  # replayed: stale
        ]
        asyncio.run(publish_raw(broker, hostile))

        def counted() -> dict[str, int] | None:
            c = d2.counters()
            delta = {k: c[k] - before[k] for k in c if k.startswith("envelopes_rejected_")}
            return delta if sum(delta.values()) >= 5 else None

        delta = wait_for(counted, 10, "all five rejections counted")
        assert delta == {
            "envelopes_rejected_malformed": 2,
            "envelopes_rejected_oversized": 1,
            "envelopes_rejected_spoofed": 1,
            "envelopes_rejected_other_group": 0,
            "envelopes_rejected_stale": 1,
            "envelopes_rejected_invalid_id": 0,
            "envelopes_rejected_out_of_range": 0,
            "envelopes_rejected_future": 0,
            "envelopes_rejected_over_limit": 0,
        }
        assert member_ids(d2) == {M1, M2}  # no row for M3
        status = d2.rows_by_member(STATUS)[M1]
        assert status["REJECTED_MALFORMED"] == 2
        assert status["REJECTED_STALE"] == 1
        assert status["SEQ"] > seq_old
        assert d2.alive()
        assert d1.alive()


def test_member_that_leaves_is_dropped_by_the_others_at_once_and_comes_back(
    broker: Broker, tmp_path: Path
) -> None:
    # MySQL removes a member that left (STOP GROUP_REPLICATION -> OFFLINE, or ERROR)
    # from the other members' tables at the next view change; an ERROR member shows
    # ERROR only in its own table. forget_after is 60 s here: a member that went
    # UNREACHABLE would stay listed far longer than the deadlines below.
    # far enough ahead that three daemons are up (and the view read) before it,
    # even on a loaded machine
    t0 = int(time.time()) + 10
    script = [
        {"at": t0, "member": M2, "action": "set_state", "state": "ERROR", "duration": 300.0},
        {"at": t0, "member": M3, "action": "set_state", "state": "OFFLINE", "duration": 6.0},
    ]
    simulated = {"scripted": True, "script": script}
    configs = [
        daemon_config(broker.port, m, [M1, M2, M3], period=PERIOD, simulated=simulated)
        for m in (M1, M2, M3)
    ]
    with daemons(tmp_path, configs) as (d1, d2, d3):
        wait_for(lambda: member_ids(d1) == {M1, M2, M3}, 10, "three rows before")
        before = view_id(d1)
        assert time.time() < t0 - 1, "the daemons took too long to start to see the view before"
        wait_for(lambda: time.time() > t0, 15, "the departures")
        wait_for(lambda: member_ids(d1) == {M1}, 10, "M2 and M3 dropped from M1's tables")
        # MySQL's VIEW_ID: `<fixed>:<monotonic>`; the fixed part (bootstrap time in
        # 100 ns units + 0..999, 17 digits today) stays, the monotonic part grows by
        # one per installed view (gcs_xcom_view_identifier.cc)
        fixed, number = before.split(":")
        assert len(fixed) == 17

        # the others' departures reach M1's tables from the bus; its own row (and
        # VIEW_ID) is its next sample of the source: up to a period later
        def grown_view() -> str | None:
            v = view_id(d1)
            return v if int(v.split(":")[1]) > int(number) else None

        after = wait_for(grown_view, 10, "M1's view to grow past the departures")
        assert after.split(":")[0] == fixed
        own = wait_for(
            lambda: (rows := d2.table(MEMBERS)) and rows[0]["MEMBER_STATE"] == "ERROR" and rows,
            10,
            "M2 in ERROR in its own table",
        )
        assert [r["MEMBER_ID"] for r in own] == [M2]
        assert member_ids(d3) == {M3}  # OFFLINE: only itself
        # M3 rejoins after its 6 s: every member that is in the group shows it again
        wait_for(lambda: member_ids(d1) == {M1, M3}, 15, "M3 back on M1")
        wait_for(lambda: member_ids(d3) == {M1, M3}, 15, "M1 back on M3")

        def rejoined_view() -> str | None:
            v = view_id(d1)
            grew = int(v.split(":")[1]) > int(after.split(":")[1])
            return v if grew and v == view_id(d3) else None

        rejoined = wait_for(rejoined_view, 15, "M1 and M3 in a newer view")
        assert rejoined.split(":")[0] == fixed
        assert M2 not in {r["MEMBER_ID"] for r in d1.table(MEMBERS)}
