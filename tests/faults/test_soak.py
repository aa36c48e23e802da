"""Soak (issue 21): three members and a collector through every fault we can inject.

Three real daemons (M3 the slow member, flow control binding at thresholds
of 1000) and a real collector, each with its own history, on a real
Mosquitto. Along the way:

* the broker is killed and restarted;
* M1's history is on a small tmpfs: the disk is filled (a ballast file
  written until ENOSPC) until M1's writer reports the fault
  (`grstats_history_healthy` 0, `grstats_history_errors_total` up), kept full
  a while, then freed; the writer must recover (healthy again, rows written
  on) without a gap.  Without the permission to mount a tmpfs the fault is
  reported as not injected and the rest runs;
* a corrupt Parquet file is dropped into the partition M2's writer uses and
  M2's daemon is SIGKILLed and started again (a new incarnation, the same
  history directory): the new writer meets the file when it loads the
  partition, must move it to `<history>/quarantine/` byte for byte and go on.

At the end, in every history, every (member, incarnation, seq) a writer
accepted is there exactly once (the injected junk is not a published row):

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
runs it for hours).
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grstats.history.parquet import partitions, read_history
from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
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
# M1's history fits its whole run with room to spare: ~64 MiB an hour of tiny segments
DISK_MB = 16 + int(SECONDS / 3600 * 64)
JUNK = b"PAR1" + b"\x00" * 64 + b"PAR1"  # a Parquet file's magic around no footer


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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path | str]:
    """A DISK_MB tmpfs for one history (unmounted after the test), or why there is none."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        yield f"cannot mount a tmpfs here: {result.stderr.strip() or 'not permitted'}"
        return
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(ballast: Path) -> int:
    """Write `ballast` until the file system is full; its size in bytes."""
    # unbuffered: ENOSPC is raised by a write, never by the close's flush of a remainder
    with ballast.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return ballast.stat().st_size


def _disk_full(daemon: DaemonProc, disk: Path, hold_rows: int) -> str:
    """Fill `disk` under the daemon's history until its writer fails and holds
    `hold_rows` rows in memory; then free it and wait for the writer to recover."""
    errors = _metric(daemon, "grstats_history_errors_total")
    written = _metric(daemon, "grstats_history_rows_written_total")
    ballast = disk / "ballast"
    size = _fill(ballast)
    try:
        wait_for(
            lambda: (
                _metric(daemon, "grstats_history_errors_total") > errors
                and _metric(daemon, "grstats_history_healthy") == 0
            ),
            60,
            "M1's writer failing on the full disk",
        )
        _, health = daemon.get("/healthz")
        assert health["status"] == "degraded", health
        assert any(r.startswith("history") for r in health["reasons"]), health
        wait_for(  # the fault lasts while the rows pile up in memory
            lambda: _metric(daemon, "grstats_history_rows_buffered") >= hold_rows,
            hold_rows * PERIOD * 4 + 60,
            f"M1 holding {hold_rows} rows while its disk is full",
        )
    finally:
        ballast.unlink()  # the space comes back
    wait_for(
        lambda: (
            _metric(daemon, "grstats_history_healthy") == 1
            and _metric(daemon, "grstats_history_rows_written_total") > written
        ),
        60,
        "M1's writer recovering once the disk frees up",
    )
    failed = _metric(daemon, "grstats_history_errors_total") - errors
    return (
        f"M1's disk full ({size >> 10} KiB ballast, {failed:.0f} failed attempts, "
        f">= {hold_rows} rows held) then freed"
    )


def _drop_junk(history: Path) -> Path:
    """A corrupt segment in the newest partition of `history` (a writer's own)."""
    wait_for(lambda: any(partitions(history)) or None, 30, "a partition to corrupt")
    today = f"date={dt.datetime.now(dt.UTC).date().isoformat()}"
    newest = max(partitions(history), key=lambda p: (p.name == today, p.name))
    assert newest.parent.name.startswith("group=") and GROUP[:8] in newest.parent.name
    # a file without a writer id (as `grstats simulate` names them): every writer reads it
    junk = newest / "part-0000000000000001-0d5e1a7c-9b3f-4c2e-8a61-5f0e7d2c4b93.parquet"
    junk.write_bytes(JUNK)
    return junk


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
    """Let every member publish on for `seconds` (seen on the collector), bounded in time.

    The phase lasts `seconds` of wall time (the soak runs as long as it says) and
    at least half its periods' envelopes of every member (a loaded box is slow).
    """
    start = {m: _seq_on(collector, m) for m in MEMBERS}
    ticks = max(1, int(seconds / PERIOD * 0.5))
    end = time.monotonic() + seconds
    wait_for(
        lambda: (
            time.monotonic() >= end
            and all(_seq_on(collector, m) >= start[m] + ticks for m in MEMBERS)
        ),
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
    broker: Broker, tmp_path: Path, small_disk: Path | str
) -> None:
    started = time.monotonic()
    homes = {m: tmp_path / f"h-{m[:4]}" for m in MEMBERS}
    if isinstance(small_disk, Path):
        homes[M1] = small_disk / "history"
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
        _advance(collector, SECONDS / 6, "after the broker restart")

        if isinstance(small_disk, Path):
            faults.append(_disk_full(procs[M1], small_disk, max(8, int(SECONDS / 20 / PERIOD))))
        else:
            faults.append(f"full disk NOT injected ({small_disk})")
        _advance(collector, SECONDS / 6, "after the disk frees up")

        junk = _drop_junk(homes[M2])
        victim = procs[M2]
        incarnation = int(collector.rows_by_member(STATUS)[M2]["INCARNATION"])
        durable_before_kill[incarnation] = int(
            _metric(victim, "grstats_history_rows_written_total")
        )
        victim.kill9()
        faults.append("a corrupt segment in M2's partition; M2's daemon SIGKILLed and restarted")
        procs[M2] = wait_started(
            spawn_daemon(tmp_path / "m2-again", _member_config(broker, M2, homes[M2]))
        )
        wait_for(
            lambda: _metric(procs[M2], "grstats_history_files_quarantined_total") == 1,
            60,
            "the corrupt segment quarantined by M2's new writer",
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
    quarantined = [p.read_bytes() for p in (homes[M2] / "quarantine").iterdir()]
    assert not junk.exists() and quarantined == [JUNK]  # moved aside whole, nothing else
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
