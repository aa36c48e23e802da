"""The GTID divergence columns of history rows: counts and method, never the sets.

The publisher records the local member's verdict, the receiver a remote
member's, each as grstats_member_gtids shows it at the row's time. Expected
figures are worked out by hand from the GTID texts (MySQL's format) and the
peers' counts that ride with their sets (core/gtid_divergence.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import zlib
from pathlib import Path

import msgpack
import pytest

from grstats.core.records import GTID_HISTORY_COLUMNS, HISTORY_COLUMNS, HistoryRow
from grstats.core.sample import LocalMember, LocalSample
from grstats.core.tables import MemberTables
from grstats.daemon import receiver as receiver_module
from grstats.daemon.receiver import Receiver
from grstats.history.parquet import read_history, row_values, rows_to_table, write_segments
from grstats.history.wal import encode_record, repair_wal
from protocol import (
    Envelope,
    GtidSet,
    GtidState,
    MemberInfo,
    PipelineStats,
    encode_envelope,
    encode_pipeline_stats,
)
from tests.fixtures.history_files import old_schema_file
from tests.fixtures.member_gtids import GROUP, LOCAL, REMOTE, THIRD, send, tables
from tests.fixtures.member_tables import make_tables
from tests.fixtures.publishing import Sink, make_publisher
from tests.grstats.history.rows import sample_row, wal_file

T0 = 1_700_000_000_000_000
S = 1_000_000
GTIDS = [name for name, _ in GTID_HISTORY_COLUMNS]
TOPIC = f"grstats/v1/{GROUP}/{REMOTE}/stats"


def _gtids(row: HistoryRow) -> tuple[object, ...]:
    return tuple(getattr(row, name) for name in GTIDS)


def _local(at_us: int, executed: str, purged: str = "") -> LocalSample:
    return LocalSample(
        member=LocalMember(GROUP, LOCAL, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "17000000:3"),
        stats=PipelineStats(),
        sampled_at_us=at_us,
        gtid_state=GtidState(at_us, GtidSet.parse(executed), GtidSet.parse(purged)),
    )


def _payload(member: str, seq: int, executed: str, purged: str = "") -> bytes:
    return encode_envelope(
        Envelope(
            GROUP,
            MemberInfo(member, "h", 3306, "ONLINE", "SECONDARY", "8.4.3", "h:33061"),
            "17000000:3",
            7,
            seq,
            T0 + seq * S,
            encode_pipeline_stats(PipelineStats(transaction_gtids_present=True)),
            {"gtids": [1, T0 + seq * S, executed, purged]},
        )
    )


def test_gtid_columns_are_counts_and_the_method_appended_after_flow_control() -> None:
    assert GTID_HISTORY_COLUMNS == (
        ("gtid_errant_count", "int64"),
        ("gtid_missing_count", "int64"),
        ("gtid_recovery_method", "string"),
    )
    names = [n for n, _ in HISTORY_COLUMNS]
    start = names.index("gtid_errant_count")
    assert HISTORY_COLUMNS[start : start + 3] == GTID_HISTORY_COLUMNS
    assert names[start - 1].startswith("fc_")  # right after the flow-control block


def test_publisher_records_the_local_errant_count_once_a_peer_applied_past_it(
    tmp_path: Path,
) -> None:
    t = tables()
    send(t, REMOTE, 1, f"{GROUP}:1-100")
    send(t, THIRD, 1, f"{GROUP}:1-100", f"{GROUP}:1-50")
    # a local write with sql_log_bin on: LOCAL:1-3 is on no other member
    mine = f"{LOCAL}:1-3,\n{GROUP}:1-100"
    samples = [_local(T0 + s * S, mine) for s in (0, 30, 60)]
    sink = Sink()
    publisher = make_publisher(tmp_path, sink, *samples, tables=t)
    # REMOTE's sets read 30 s (one GTID interval) and 60 s after ours, nothing queued nor
    # applied since (its counts fit its unchanged set): followed at 30 s, past its count
    # then, and its next set still lacks LOCAL:1-3
    for tick in range(3):
        if tick:
            send(t, REMOTE, tick + 1, f"{GROUP}:1-100", read_s=30 * tick, applied=0)
        asyncio.run(publisher.tick(tick, None))
    # the others purged GROUP:1-50 only, which we have: INCREMENTAL until errant GTIDs,
    # then refused by the join check whatever the method (REPROVISION)
    assert [_gtids(r) for r in sink.rows] == [
        (0, 0, "INCREMENTAL"),
        (0, 0, "INCREMENTAL"),
        (3, 0, "REPROVISION"),
    ]


def test_receiver_records_a_lagging_member_that_needs_clone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = tables()
    monkeypatch.setattr(receiver_module, "now_us", lambda: T0 + 10 * S)
    sink = Sink()
    receiver = Receiver(t, sink)  # type: ignore[arg-type]
    send(t, THIRD, 1, f"{GROUP}:1-100", f"{GROUP}:1-50")
    receiver.on_message(TOPIC, _payload(REMOTE, 1, f"{GROUP}:1-40"), False)
    t.set_local(_local(T0 + 2 * S, f"{GROUP}:1-100", f"{GROUP}:1-60"), incarnation=1, seq=1)
    receiver.on_message(TOPIC, _payload(REMOTE, 2, f"{GROUP}:1-40"), False)
    first, second = sink.rows
    # before the rule has run on its state (the next local tick): no verdict
    assert _gtids(first) == (None, None, None)
    # missing: (1-100 & 1-100) - 1-40 = 41-100, 60 GTIDs; LOCAL purged 41-60 and
    # THIRD 41-50 of them: no donor for incremental recovery
    assert _gtids(second) == (0, 60, "CLONE")


def test_a_collector_records_no_gtid_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receiver_module, "now_us", lambda: T0 + 10 * S)
    collector: MemberTables = make_tables(group=None, local_member_id=None)
    sink = Sink()
    Receiver(collector, sink).on_message(  # type: ignore[arg-type]
        TOPIC, _payload(REMOTE, 1, f"{GROUP}:1-40"), False
    )
    (row,) = sink.rows
    assert _gtids(row) == (None, None, None)


def test_gtid_columns_survive_a_parquet_round_trip(tmp_path: Path) -> None:
    errant = dataclasses.replace(
        sample_row(1), gtid_errant_count=2, gtid_missing_count=0, gtid_recovery_method="CLONE"
    )
    write_segments(tmp_path, rows_to_table([errant, sample_row(2)]), segment_id="s")
    table = read_history(tmp_path).sort_by("seq")
    assert table["gtid_errant_count"].to_pylist() == [2, None]
    assert table["gtid_missing_count"].to_pylist() == [0, None]
    assert table["gtid_recovery_method"].to_pylist() == ["CLONE", None]


def test_a_file_from_before_the_gtid_columns_reads_them_as_null(tmp_path: Path) -> None:
    old = dataclasses.replace(sample_row(1), fc_throttling=1)
    old_schema_file(tmp_path, [old], newer=tuple(GTIDS))
    new = dataclasses.replace(sample_row(2), gtid_errant_count=5, gtid_recovery_method="CLONE")
    write_segments(tmp_path, rows_to_table([new]), segment_id="new")
    table = read_history(tmp_path).sort_by("seq")
    assert table["fc_throttling"].to_pylist() == [1, None]  # the old file has flow figures
    assert table["gtid_errant_count"].to_pylist() == [None, 5]
    assert table["gtid_recovery_method"].to_pylist() == [None, "CLONE"]


def test_a_wal_record_from_before_the_gtid_columns_reads_them_as_null(tmp_path: Path) -> None:
    # a daemon of the flow-control wave: its values end with fc_failover_ready
    flowing = dataclasses.replace(sample_row(1), fc_throttling=1)
    payload = msgpack.packb(list(row_values(flowing))[: -len(GTIDS)], use_bin_type=True)
    record = struct.pack("<II", len(payload), zlib.crc32(payload)) + payload
    errant = dataclasses.replace(sample_row(2), gtid_errant_count=1, gtid_missing_count=7)
    path = wal_file(tmp_path, "000000000001-ee", record + encode_record(errant))
    scan = repair_wal(path)
    assert scan is not None
    assert scan.rows[0] == flowing
    assert _gtids(scan.rows[1]) == (1, 7, None)
