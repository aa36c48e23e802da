"""History faults (issue 15): duplicates and shared trees; each sample written once.

Restarted writers and collectors (redelivered retained and QoS 1 samples, new
incarnations) and two writers on one directory, against the real file system;
expected keys are generated independently of the writer.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from grstats.core.records import HistoryRow
from grstats.history.parquet import read_history
from grstats.history.writer import HistoryWriter
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    M1,
    M2,
    STATS,
    daemon_config,
    daemons,
    spawn_daemon,
    start_daemon,
    wait_for,
    wait_started,
)
from tests.fixtures.history_faults import Watch, fast_writer, row_keys
from tests.grstats.history.rows import MIDNIGHT_US, US, sample_row

pytestmark = pytest.mark.faults

# ---------------------------------------------------------------- duplicates


def _member_row(group: str, member: str, incarnation: int, seq: int, at_us: int) -> HistoryRow:
    return dataclasses.replace(
        sample_row(1),
        group_name=group,
        member_id=member,
        incarnation=incarnation,
        seq=seq,
        sampled_at=at_us,
        transactions_committed_all_members=None,
        last_conflict_free_transaction=None,
    )


async def test_collector_restarted_ten_times_writes_each_sample_once(tmp_path: Path) -> None:
    # g1/A restarts its daemon (new incarnation) at cycle 5, g2/C every 4 cycles;
    # g1/B keeps one incarnation; g1/D died 3 days ago and its retained sample
    # is redelivered at every collector start.
    dead = _member_row("g1", "D", 77, 9, MIDNIGHT_US - 3 * 86_400 * US)
    incarnations = {"A": [2**64 - 3, 12], "B": [2**63 + 1], "C": [5, 6, 7]}
    groups = {"A": "g1", "B": "g1", "C": "g2"}
    expected: set[tuple[Any, ...]] = {("g1", "D", 77, 9)}
    last: dict[str, list[HistoryRow]] = {}
    seqs: dict[tuple[str, int], int] = {}
    duplicates_per_cycle = []
    for cycle in range(10):
        writer = HistoryWriter(tmp_path, scope="all", retention_days=36500)
        await writer.start()
        redelivered = [dead]
        for member in sorted(last):
            redelivered.append(last[member][-1])  # the retained sample
        if "A" in last:
            redelivered.extend(last["A"][-3:])  # QoS 1 redelivery of unacknowledged ones
        for row in redelivered:
            writer.record(row)
        for member, incs in incarnations.items():
            inc = incs[min(cycle * len(incs) // 10, len(incs) - 1)]
            new = []
            for _ in range(20):
                seq = seqs[member, inc] = seqs.get((member, inc), 0) + 1
                at_us = MIDNIGHT_US + (cycle * 100 + seq) * US
                new.append(_member_row(groups[member], member, inc, seq, at_us))
                expected.add((groups[member], member, inc, seq))
            for row in new:
                writer.record(row)
            last[member] = new
        await writer.close()
        duplicates_per_cycle.append(writer.stats.dropped.duplicate)
    keys = row_keys(tmp_path)
    assert len(keys) == len(set(keys)), "duplicated samples"
    assert set(keys) == expected
    # cycle 0 has nothing to repeat; later cycles: D, A, B, C retained + 3 of A again
    assert duplicates_per_cycle == [0] + [7] * 9


# ---------------------------------------------------------------- shared tree


async def test_two_writers_on_one_directory_never_take_each_others_files(
    tmp_path: Path,
) -> None:
    first = fast_writer(tmp_path, instance="collector-a", flush_interval_s=3600.0)
    second = fast_writer(tmp_path, instance="collector-b", flush_interval_s=3600.0)
    await first.start()
    await second.start()
    for seq in range(1, 11):
        second.record(sample_row(seq, member="m-b"))
    Watch(tmp_path / "wal").until(lambda: second.stats.rows_written == 10, "b fsynced")
    await first.close()
    restarted = fast_writer(tmp_path, instance="collector-a")  # must not replay b's WAL
    await restarted.start()
    for seq in range(11, 21):
        second.record(sample_row(seq, member="m-b"))
    restarted.record(sample_row(1, member="m-a"))
    await restarted.close()
    await second.close()
    assert sorted(row_keys(tmp_path)) == sorted(
        [("g", "m-a", 2**63 + 5, 1)] + [("g", "m-b", 2**63 + 5, s) for s in range(1, 21)]
    )


# ---------------------------------------------------------------- real collector


@pytest.mark.slow
def test_real_collector_restarted_ten_times_writes_no_sample_twice(
    broker: Broker, tmp_path: Path
) -> None:
    # M2 is SIGKILLed at once: its retained stats stay on the broker and are
    # redelivered at every collector start.  M1 keeps publishing.
    history = tmp_path / "history"
    collector_config = {
        "bus": {"host": "127.0.0.1", "port": broker.port},
        "publish": {"period": 0.25, "unreachable_after": 4},
        "api": {"listen": "127.0.0.1:0"},
        "history": {"dir": str(history), "flush_interval": 0.5},
        "log": {"format": "json"},
    }
    with daemons(tmp_path, [daemon_config(broker.port, M1, [M1, M2], period=0.25)]) as (live,):
        dead = start_daemon(tmp_path / "dead", daemon_config(broker.port, M2, [M1, M2]))
        wait_for(
            lambda: M2 in {r["MEMBER_ID"] for r in live.table(STATS)}, 20, "M2's stats published"
        )
        dead.kill9()
        for cycle in range(10):
            collector = wait_started(
                spawn_daemon(tmp_path / f"collector{cycle}", collector_config, command="collect")
            )
            try:
                wait_for(
                    lambda c=collector: any(  # type: ignore[misc]
                        r["MEMBER_ID"] == M1 and r["ACCEPTED"] >= 2
                        for r in c.table("grstats_member_status")
                    ),
                    20,
                    "a few samples of M1",
                )
            finally:
                assert collector.terminate() == 0
    table = read_history(history)
    keys = row_keys(history)
    assert len(keys) == len(set(keys)), "duplicated samples"
    assert table.num_rows > 10
    assert {k[1] for k in keys} == {M1, M2}
    # every collector start received M2's one retained sample; it is written once
    assert sum(k[1] == M2 for k in keys) == 1
