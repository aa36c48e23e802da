"""Bus input bounded by bytes (issue 21): unknown `ext` sections, decoding cost, member caps.

Driven through `MemberTables.receive` with envelopes packed by plain msgpack
(an attacker does not use our encoder), so every byte is what the wire
carries. Expected counts are the attack's own figures, worked out by hand.
"""

from __future__ import annotations

import tracemalloc
import uuid
from typing import Any

import msgpack
import pytest
from prometheus_client import generate_latest

import protocol
from grstats.api.metrics import snapshot_registry
from grstats.core.pending_gtids import ENTRY_BYTES
from protocol import ProtocolError, decode_envelope
from tests.fixtures.member_tables import (
    REMOTE,
    T0,
    envelope,
    local_sample,
    make_tables,
    online_tables,
    topic,
)

pytestmark = pytest.mark.faults

JUNK_MAPS = 60_000  # empty maps: one byte each on the wire, a Python dict each in memory


def _with_ext(ext: dict[str, Any], **kwargs: Any) -> bytes:
    """A good envelope of REMOTE with `ext` spliced in by plain msgpack."""
    message = msgpack.unpackb(envelope(**kwargs), raw=False)
    message["ext"] = ext
    packed: bytes = msgpack.packb(message, use_bin_type=True)
    return packed


def test_unknown_ext_sections_are_dropped_at_admission_and_counted_by_name() -> None:
    tables = online_tables()
    payload = _with_ext(
        {"communication_stack": "MySQL", "junk": [{}] * JUNK_MAPS, "extra": "x" * 100}
    )
    assert 60_000 < len(payload) <= 65_536  # under the envelope limit: admission must cope
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tables.receive(topic(), payload, T0)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    remote = tables.registry.get((tables.group or "", REMOTE))
    assert remote is not None  # the envelope itself is good and applied
    assert dict(remote.envelope.ext) == {"communication_stack": "MySQL"}
    # 60 000 dicts kept would be ~4 MB; the tables hold one small envelope more
    assert held - before < 256 * 1024, held - before
    assert tables.counters().ext_dropped == {"extra": 1, "junk": 1}
    text = generate_latest(snapshot_registry(lambda: tables.snapshot(T0))).decode()
    assert 'grstats_ext_sections_dropped_total{section="junk"} 1.0' in text
    assert 'grstats_ext_sections_dropped_total{section="extra"} 1.0' in text


def test_dropped_section_names_are_bounded() -> None:
    tables = online_tables()
    names = {f"s{i:02d}": 0 for i in range(40)} | {"bad\nname": 0, "x" * 65: 0}
    tables.receive(topic(), _with_ext(names), T0)
    counts = tables.counters().ext_dropped
    # 32 names one by one; the other 8 and the two unfit names share one series
    assert counts == {f"s{i:02d}": 1 for i in range(32)} | {"(other)": 10}


def test_junk_sections_are_skipped_unread() -> None:
    payload = _with_ext({"junk": [{}] * JUNK_MAPS})
    tracemalloc.start()
    try:
        decoded, dropped = protocol.decode_envelope_sections(payload, keep=("lag",))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dropped == ("junk",)
    assert decoded.ext == {}
    assert peak < 512 * 1024, peak  # 60 000 dicts would be ~4 MB at the peak


def test_a_kept_generic_section_is_refused_by_size_before_its_key_walk() -> None:
    # 5 000 one-key maps (5 000 calls of the duplicate-key hook) in a section
    # the decoder keeps: refused for its 20 000 bytes, before any map is built
    payload = _with_ext({"communication_stack": [{"k": 1}] * 5_000})
    with pytest.raises(ProtocolError, match="over 4096"):
        decode_envelope(payload)


def test_a_non_canonical_envelope_with_a_duplicate_ext_key_is_still_refused() -> None:
    # "ext" written as map16 (non-canonical for 2 entries) with "lag" twice
    good = _with_ext({"lag": 1})
    head, _, _ = good.partition(b"\xa3ext")
    top = bytes([good[0]])
    ext = b"\xde\x00\x02" + msgpack.packb("lag") + b"\x01" + msgpack.packb("lag") + b"\x02"
    payload = top + head[1:] + b"\xa3ext" + ext
    with pytest.raises(ProtocolError, match="duplicate key"):
        decode_envelope(payload)


def test_max_members_per_group_counts_the_local_member() -> None:
    tables = make_tables(max_members_per_group=4)
    tables.set_local(local_sample(), incarnation=1, seq=1)
    for i in range(10):
        member = str(uuid.UUID(int=i + 500))
        tables.receive(topic(member), envelope(member=member), T0)
    snap = tables.snapshot(T0)
    assert len(snap.table("replication_group_members")) == 4  # the local member and 3 remotes
    assert tables.received.rejected["over_limit"] == 10 - 3


def test_a_collector_has_every_seat_for_remote_members() -> None:
    tables = make_tables(group=None, local_member_id=None, max_members_per_group=4)
    for i in range(10):
        member = str(uuid.UUID(int=i + 500))
        tables.receive(topic(member), envelope(member=member), T0)
    assert len(tables.snapshot(T0).table("replication_group_members")) == 4
    assert tables.received.rejected["over_limit"] == 10 - 4


# -- pending gtids: expire and bounded in bytes ------------------------------------------

GTID_TEXT = 2_000  # bytes of committed GTID set in each gtids envelope below


def _gtids(member: str, *, seq: int = 5) -> bytes:
    committed = (b"aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-" + b"9" * GTID_TEXT)[:GTID_TEXT]
    return envelope(
        member=member,
        seq=seq,
        transaction_gtids_present=True,
        transactions_committed_all_members=committed,
    )


def test_pending_gtids_expire_after_forget_after() -> None:
    tables = online_tables()  # forget_after 60 s
    tables.receive(topic(REMOTE, "gtids"), _gtids(REMOTE), T0)
    held = tables.snapshot(T0).gauges["pending_gtids_bytes"]
    assert held == GTID_TEXT + ENTRY_BYTES  # the GTID text and the entry's charge
    tables.expire(T0 + 60_000_000)  # exactly forget_after: still waiting
    assert tables.snapshot(T0).gauges["pending_gtids_bytes"] == held
    tables.expire(T0 + 60_000_001)
    snap = tables.snapshot(T0 + 60_000_001)
    assert snap.gauges["pending_gtids_bytes"] == 0
    assert snap.counters.pending_gtids_expired == 1


def test_pending_gtids_are_bounded_in_bytes_and_refusals_counted() -> None:
    tables = make_tables(max_pending_gtids_bytes=10_000)
    tables.set_local(local_sample(), incarnation=1, seq=1)
    members = [str(uuid.UUID(int=i + 900)) for i in range(10)]
    for member in members:
        tables.receive(topic(member, "gtids"), _gtids(member), T0)
    # each entry is charged 2 000 + 256 = 2 256 bytes: 4 fit in 10 000 (9 024), 6 do not
    snap = tables.snapshot(T0)
    assert snap.gauges["pending_gtids_bytes"] == 4 * 2_256
    assert snap.counters.pending_gtids_refused == 6
    assert tables.received.rejected["over_limit"] == 6
    assert snap.health.codes() == ("pending_gtids_full",)
    assert any("pending gtids" in detail for detail in snap.health.details())
    # a held one is applied when its member's stats come, and frees its bytes
    tables.receive(topic(members[0]), envelope(member=members[0], seq=6), T0 + 1)
    snap = tables.snapshot(T0 + 1)
    assert snap.gauges["pending_gtids_bytes"] == 3 * 2_256
    assert snap.health.ok and "pending_gtids_full" in snap.health.checked


# -- departure: one rule for the tables, /metrics and alerts -----------------------------


def _series(tables: Any, now_us: int) -> str:
    return generate_latest(snapshot_registry(lambda: tables.snapshot(now_us))).decode()


def test_a_forgotten_member_leaves_the_tables_and_its_series_together_and_stays_departed() -> None:
    tables = online_tables()  # unreachable after 5 s, forgotten after 60 s
    tables.receive(topic(), envelope(seq=1), T0)
    member = f'group="{tables.group}",member_id="{REMOTE}"'
    state = f"mysql_perf_schema_replication_group_member_state{{{member}}}"
    assert f"{state} 1.0" in _series(tables, T0)  # ONLINE
    assert f"{state} 5.0" in _series(tables, T0 + 6_000_000)  # UNREACHABLE, still listed
    forgotten = T0 + 60_000_001
    tables.expire(forgotten)
    text = _series(tables, forgotten)
    assert REMOTE not in {
        row["MEMBER_ID"] for row in tables.snapshot(forgotten).table("replication_group_members")
    }
    # no member series outlives the tables' row ...
    assert state not in text
    assert f"grstats_member_last_seen_timestamp_seconds{{{member}}}" not in text
    # ... the departure is said instead, and for as long as the member stays away
    departed = f'grstats_member_departed{{{member},state="UNREACHABLE"}} 1.0'
    assert departed in text
    a_day_later = forgotten + 86_400_000_000
    tables.expire(a_day_later)
    assert departed in _series(tables, a_day_later)
    # the Will's `offline` after the silence does not turn the crash into a leave
    tables.receive(topic(REMOTE, "status"), b"offline", a_day_later)
    assert departed in _series(tables, a_day_later)
    # it comes back: no longer departed
    tables.receive(topic(), envelope(incarnation=8, seq=1), a_day_later)
    text = _series(tables, a_day_later)
    assert "grstats_member_departed{" not in text
    assert f"{state} 1.0" in text


def test_a_member_reporting_error_departs_as_error() -> None:
    tables = online_tables()
    tables.receive(topic(), envelope(seq=1), T0)
    tables.receive(topic(), envelope(seq=2, state="ERROR"), T0 + 1)
    member = f'group="{tables.group}",member_id="{REMOTE}"'
    assert f'grstats_member_departed{{{member},state="ERROR"}} 1.0' in _series(tables, T0 + 1)
