"""ext.commit_path_comm: the codec's layout, bounds and refusals (values by hand)."""

from __future__ import annotations

import msgpack
import pytest

from protocol import (
    GroupCommunication,
    ProtocolError,
    decode_commit_path_comm,
    encode_commit_path_comm,
)

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"


def test_a_row_round_trips_in_the_documented_order() -> None:
    comm = GroupCommunication(10, "8.0.27", (A,), (B,), True)
    wire = encode_commit_path_comm(comm)
    assert wire == [1, 10, "8.0.27", [A], [B], 1]
    assert decode_commit_path_comm(msgpack.unpackb(msgpack.packb(wire))) == comm


def test_none_is_nil_and_no_leader_is_an_empty_array() -> None:
    assert encode_commit_path_comm(GroupCommunication()) == [1, None, None, None, None, None]
    assert not GroupCommunication().shown()
    empty = GroupCommunication(leaders_actual=())
    assert decode_commit_path_comm(encode_commit_path_comm(empty)) == empty
    assert empty.shown()


def test_the_section_is_small_and_bounded() -> None:
    most = GroupCommunication((1 << 32) - 1, "9" * 16, (A,) * 9, (B,) * 9, False)
    packed = msgpack.packb(encode_commit_path_comm(most))
    # array 1 + version 1 + uint32 5 + str8 of 16 (1+16), twice (array 1 + 9 x (2 + 36)), 1
    assert len(packed) == 1 + 1 + 5 + 17 + 2 * (1 + 9 * 38) + 1 == 711


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ([2, None, None, None, None, None], "version"),
        ([1, None, None, None, None], "top level"),
        ([1, -1, None, None, None, None], "write_concurrency"),
        ([1, 1 << 32, None, None, None, None], "write_concurrency"),
        ([1, True, None, None, None, None], "write_concurrency"),
        ([1, None, "", None, None, None], "protocol_version"),
        ([1, None, "8" * 17, None, None, None], "protocol_version"),
        ([1, None, 8, None, None, None], "protocol_version"),
        ([1, None, None, [A] * 10, None, None], "leaders_preferred"),
        ([1, None, None, None, ["db1"], None], "leaders_actual"),
        ([1, None, None, None, A, None], "leaders_actual"),
        ([1, None, None, None, None, 2], "single_leader_capable"),
        ([1, None, None, None, None, False], "single_leader_capable"),
        ({"v": 1}, "top level"),
    ],
)
def test_any_other_layout_is_a_protocol_error_naming_the_place(wire: object, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        decode_commit_path_comm(wire)
