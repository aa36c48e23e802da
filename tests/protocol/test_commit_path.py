"""ext.commit_path: the codec's layout, bounds and refusals (values by hand)."""

from __future__ import annotations

import msgpack
import pytest

from protocol import (
    CommitPathCounters,
    CommitPathReport,
    ProtocolError,
    decode_commit_path,
    encode_commit_path,
)

AT = 1_700_000_000_000_000
FULL = CommitPathCounters(*range(1, 24), AT)  # 23 counters, then the timestamp


def test_a_report_round_trips_in_the_documented_order() -> None:
    wire = encode_commit_path(CommitPathReport(AT, FULL))
    assert wire == [1, AT, [*range(1, 24), AT]]
    assert decode_commit_path(msgpack.unpackb(msgpack.packb(wire))) == CommitPathReport(AT, FULL)


def test_none_is_nil_and_stays_none() -> None:
    empty = CommitPathReport(AT, CommitPathCounters())
    wire = encode_commit_path(empty)
    assert wire == [1, AT, [None] * 24]
    assert decode_commit_path(wire) == empty
    assert not empty.counters.shown()


def test_the_section_is_small_and_bounded() -> None:
    most = CommitPathCounters(*([(1 << 64) - 1] * 23), 1 << 55)
    packed = msgpack.packb(encode_commit_path(CommitPathReport(1 << 55, most)))
    # 3 array headers (1+1+3) + version 1 + at_us 9 + 23 x 9 + 9 = 230 bytes at most
    assert len(packed) == 1 + 1 + 9 + 3 + 23 * 9 + 9


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ([2, AT, [None] * 24], "version"),
        ([1, AT, [None] * 23], "counters"),
        ([1, AT, [None] * 25], "counters"),
        ([1, 0, [None] * 24], "at_us"),
        ([1, AT, [True, *[None] * 23]], "consensus_proposals"),
        ([1, AT, [-1, *[None] * 23]], "consensus_proposals"),
        ([1, AT, [1 << 64, *[None] * 23]], "consensus_proposals"),
        ([1, AT, [*[None] * 23, (1 << 55) + 1]], "last_consensus_end_us"),
        # one bad item among good ones (the well-formed case is checked all at once)
        ([1, AT, [*[7] * 22, -1, AT]], "throttled_us"),
        ([1, AT, [0, 5, False, *[5] * 20, None]], "empty_proposals"),
        ([1, AT, [*[5] * 20, 5.0, 5, 5, None]], "gc_time_us"),
        ([1, AT, [*[5] * 9, 1 << 64, *[0] * 13, AT]], "control_rtt_us"),
        ({"v": 1}, "top level"),
        ([1, AT], "top level"),
    ],
)
def test_any_other_layout_is_a_protocol_error_naming_the_place(wire: object, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        decode_commit_path(wire)


def test_the_encoder_refuses_what_receivers_would() -> None:
    with pytest.raises(ProtocolError):
        encode_commit_path(CommitPathReport(AT, CommitPathCounters(consensus_proposals=-5)))
