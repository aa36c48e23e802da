"""Soak (issue 21): three members and a collector through a broker restart and a SIGKILL.

Three real daemons (M3 the slow member, flow control binding at thresholds
of 1000) and a real collector, each with its own history, on a real
Mosquitto. Along the way the broker is killed and restarted and one member's
daemon is SIGKILLed and started again (a new incarnation, the same history
directory). At the end, in every history, every (member, incarnation, seq)
a writer accepted is there exactly once:

* a member's own history (scope local): per incarnation the seqs run from
  the first to the last without a gap or a duplicate, and the killed
  incarnation keeps at least the rows its writer had made durable
  (`grstats_history_rows_written_total` read just before the kill);
* the collector's history: no duplicate, and at least as many rows as the
  envelopes it had accepted at its last reading (its stats envelopes are
  its rows); what the broker lost while down never reached a writer.

The count of lost rows is printed and must be 0, with the figures (rows,
duration, faults, collector RSS at start and end). Its length is
GRSTATS_SOAK_SECONDS (20 by default, as `make test` runs it; `make soak`
runs it for hours). Disk-full and corrupt-file injection belong to the
history's own fault tests (tests/faults/test_history_faults.py).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from grstats.history.parquet import read_history
from tests.fixtures.broker import Broker
from tests.grstats.daemon_helpers import (
    M1,
    M2,
    M3,
    STATUS,
    DaemonProc,
    daemon_config,
    http_get,
    spawn_daemon,
    wait_for,
    wait_started,
)

SECONDS = float(os.environ.get("GRSTATS_SOAK_SECONDS", "20"))
PERIOD = 0.25
MEMBERS = (M1, M2, M3)


pytestmark = [
    pytest.mark.soak,
    pytest.mark.faults,
    pytest.mark.timeout(int(SECONDS * 3 + 300)),  # daemons start slowly on a shared box
]


def _metric(d: DaemonProc, name: str) -> float:
    status, body = http_get(d.api_port, "/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def _rss_kb(d: DaemonProc) -> int:
    for line in Path(f"/proc/{d.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _member_config(broker: Broker, member: str, history: Path) -> dict[str, Any]:
    config = daemon_config(broker.port, member, MEMBERS, period=PERIOD)
    config["simulated"]["slow_member"] = M3
    config["flow_control"] = {"certifier_threshold": 1000, "applier_threshold": 1000}
    config["history"] = {"dir": str(history), "flush_interval": 0.5, "fsync_interval": 0.1}
    return config


def _collector_config(broker: Broker, history: Path) -> dict[str, Any]:
    return {
        "bus": {"host": "127.0.0.1", "port": broker.port, "keepalive": 5},
        "publish": {"period": PERIOD, "unreachable_after": 8},
        "flow_control": {"certifier_threshold": 1000, "applier_threshold": 1000},
        "api": {"listen": "127.0.0.1:0"},
        "history": {"dir": str(history), "flush_interval": 0.5, "fsync_interval": 0.1},
        "log": {"format": "json"},
    }


def _seq_on(collector: DaemonProc, member: str) -> int:
    row = collector.rows_by_member(STATUS).get(member)
    return int(row["SEQ"]) if row else 0


def _advance(collector: DaemonProc, seconds: float, what: str) -> None:
    """Let every member publish on for `seconds` (seen on the collector), bounded in time."""
    start = {m: _seq_on(collector, m) for m in MEMBERS}
    ticks = max(1, int(seconds / PERIOD * 0.5))  # half the periods: a loaded box is slow
    wait_for(
        lambda: all(_seq_on(collector, m) >= start[m] + ticks for m in MEMBERS),
        seconds * 4 + 30,
        what,
        interval=0.25,
    )


def _member_losses(rows: list[dict[str, Any]], member: str, durable: dict[int, int]) -> int:
    """Gaps and duplicates of one member's own rows; `durable`: incarnation -> rows written."""
    lost = 0
    by_incarnation: dict[int, list[int]] = {}
    for r in rows:
        if r["member_id"] == member:
            by_incarnation.setdefault(r["incarnation"], []).append(r["seq"])
    for incarnation, seqs in by_incarnation.items():
        dupes = sum(n - 1 for n in Counter(seqs).values())
        present = len(set(seqs))
        gaps = max(seqs) - min(seqs) + 1 - present
        short = max(0, durable.get(incarnation, 0) - present)
        lost += dupes + gaps + short
    return lost


def test_soak_every_accepted_row_is_in_the_history_exactly_once(
    broker: Broker, tmp_path: Path
) -> None:
    started = time.monotonic()
    homes = {m: tmp_path / f"h-{m[:4]}" for m in MEMBERS}
    procs: dict[str, DaemonProc] = {}
    collector: DaemonProc | None = None
    faults: list[str] = []
    durable_before_kill: dict[int, int] = {}
    try:
        for m in MEMBERS:
            procs[m] = spawn_daemon(tmp_path / m[:4], _member_config(broker, m, homes[m]))
        collector = spawn_daemon(
            tmp_path / "collector", _collector_config(broker, tmp_path / "hc"), command="collect"
        )
        for d in [*procs.values(), collector]:
            wait_started(d)
        rss_start = _rss_kb(collector)
        _advance(collector, SECONDS / 3, "phase 1")

        broker.stop()  # the broker crashes ...
        faults.append("broker killed and restarted")
        broker.start()  # ... and comes back on the same port
        _advance(collector, SECONDS / 3, "after the broker restart")

        victim = procs[M2]
        incarnation = int(collector.rows_by_member(STATUS)[M2]["INCARNATION"])
        durable_before_kill[incarnation] = int(
            _metric(victim, "grstats_history_rows_written_total")
        )
        victim.kill9()
        faults.append("M2's daemon SIGKILLed and restarted")
        procs[M2] = wait_started(
            spawn_daemon(tmp_path / "m2-again", _member_config(broker, M2, homes[M2]))
        )
        wait_for(
            lambda: int(collector.rows_by_member(STATUS)[M2]["INCARNATION"]) != incarnation,
            60,
            "M2's new incarnation on the collector",
        )
        _advance(collector, max(SECONDS - (time.monotonic() - started), PERIOD), "phase 3")

        accepted = collector.counters()["envelopes_accepted"]
        invalid = {
            d.member_id[:4]: _metric(d, 'grstats_history_rows_dropped_total{reason="invalid"}')
            for d in [*procs.values(), collector]
        }
        print(f"soak: rows the writers refused as invalid: {invalid}")
        rss_end = _rss_kb(collector)
        for d in [*procs.values(), collector]:
            assert d.terminate(timeout=30) == 0
    finally:
        for d in [*procs.values(), *([collector] if collector else [])]:
            if d.alive():
                d.kill9()

    lost = 0
    rows_total = 0
    for m in MEMBERS:
        rows = read_history(homes[m]).to_pylist()
        rows_total += len(rows)
        member_lost = _member_losses(rows, m, durable_before_kill if m == M2 else {})
        print(
            f"soak: {m[:4]}: {len(rows)} rows, incarnations "
            f"{Counter(r['incarnation'] for r in rows)}, lost {member_lost}"
        )
        lost += member_lost
    collected = read_history(tmp_path / "hc").to_pylist()
    keys = Counter((r["member_id"], r["incarnation"], r["seq"]) for r in collected)
    print(f"soak: collector accepted {accepted}, rows {len(collected)}, keys {len(keys)}")
    lost += sum(n - 1 for n in keys.values()) + max(0, accepted - len(keys))
    throttled = sum(1 for r in collected if r["fc_throttling"] == 1)
    print(
        f"soak: {time.monotonic() - started:.0f} s, member rows {rows_total}, collector rows "
        f"{len(collected)} ({throttled} throttled), faults: {'; '.join(faults)}, "
        f"collector RSS {rss_start / 1024:.0f} -> {rss_end / 1024:.0f} MB, lost rows {lost}"
    )
    assert lost == 0
