"""The flow-control columns of history rows: the publisher and the receiver record the replay.

Expected figures are worked out by hand from PROTOCOL.md section 9 (MySQL's
QUOTA algorithm) with thresholds of 100 transactions.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from grstats.config import load_config
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.records import FLOW_HISTORY_COLUMNS, HistoryRow
from grstats.core.tables import MemberTables
from grstats.daemon import receiver as receiver_module
from grstats.daemon.publisher import Publisher
from grstats.daemon.receiver import Receiver
from tests.fixtures.member_tables import GROUP, LOCAL, T0, envelope, local_sample, make_tables
from tests.fixtures.member_tables import topic as stats_topic
from tests.fixtures.publishing import Sink

S = 1_000_000
LOW = FlowControlSettings(certifier_threshold=100, applier_threshold=100)
FLOW = [name for name, _ in FLOW_HISTORY_COLUMNS]


def _flow(row: HistoryRow) -> dict[str, object]:
    return {name: getattr(row, name) for name in FLOW}


def _figures(
    kind: str, excess: int, quota: int, eta: float | None, ready: int | None
) -> dict[str, object]:
    return dict(
        zip(FLOW, (kind, excess, quota, int(quota > 0), eta, ready), strict=True),
    )


def _tick_local(tables: MemberTables, at_us: int) -> None:
    sample = dataclasses.replace(local_sample(), sampled_at_us=at_us)
    tables.set_local(sample, incarnation=1, seq=1)


def test_receiver_rows_carry_the_replay_of_the_remote_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tables = make_tables(flow_control=LOW)
    for k in range(11):  # steps 1..11: past MySQL's first ten steps (trap 17)
        _tick_local(tables, T0 + k * S)
    sink = Sink()
    receiver = Receiver(tables, sink)  # type: ignore[arg-type]
    now = [T0 + 10 * S + S // 2]
    monkeypatch.setattr(receiver_module, "now_us", lambda: now[0])
    # 500 waiting to apply > 100: a hold; the first message has no rates yet
    first = envelope(
        seq=1,
        sent_us=now[0],
        transactions_waiting_apply=500,
        transactions_applied=1000,
        transactions_certified=2000,
    )
    receiver.on_message(stats_topic(), first, retained=False)
    _tick_local(tables, T0 + 11 * S)  # step 12 counts that hold
    now[0] += S
    second = envelope(
        seq=2,
        sent_us=now[0],
        transactions_waiting_apply=400,
        transactions_applied=1300,
        transactions_certified=2300,
    )
    receiver.on_message(stats_topic(), second, retained=False)
    row1, row2 = sink.rows
    # excess 500 - 100; no step since the hold: quota 0
    assert _flow(row1) == _figures("applier", 400, 0, None, None)
    # step 12: apply_min = delta applied 1000 (the only member over the threshold),
    # safe = min(delta certified 2000, 1000) = 1000 > floor 5; 1 writer: 1000 * 0.9 = 900.
    # Rates over 1 s: apply 300, queue -100 -> incoming 200, ETA 400 / (300 - 200) = 4 s.
    assert _flow(row2) == _figures("applier", 300, 900, 4.0, 1)


class _Source:
    def __init__(self) -> None:
        self.samples: list[object] = []

    async def sample(self, now_us: int) -> object:
        return self.samples.pop(0)


def test_publisher_rows_carry_the_replay_of_the_local_member(tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    config.write_text(
        f'[member]\ngroup = "{GROUP}"\nid = "{LOCAL}"\n[source]\nkind = "simulated"\n',
        encoding="utf-8",
    )
    source = _Source()
    for k, (queue, applied) in enumerate(((500, 1000), (450, 1100))):
        sample = local_sample(transactions_waiting_apply=queue, transactions_applied=applied)
        source.samples.append(dataclasses.replace(sample, sampled_at_us=T0 + k * S))
    sink = Sink()
    publisher = Publisher(load_config(config), source, make_tables(flow_control=LOW), sink)  # type: ignore[arg-type]
    asyncio.run(publisher.tick(0, None))
    asyncio.run(publisher.tick(1, None))
    first, second = sink.rows
    assert first.member_id == LOCAL
    # step 1 saw no hold (quota 0), then our own message: excess 400, no rates yet
    assert _flow(first) == _figures("applier", 400, 0, None, None)
    # step 2 counts our own hold; within the first ten steps every entry is purged
    # (trap 17), so capacity = MAXTPS: quota = int(2147483647 * 0.9) = 1932735282.
    # Rates: apply 100/s, queue -50/s -> incoming 50/s; ETA 450 / (100 - 50) = 9 s.
    assert _flow(second) == _figures("applier", 350, 1_932_735_282, 9.0, 1)
