"""ext.applier codec: golden values by hand, fast path == checked path, malformed refused."""

from __future__ import annotations

import copy
from typing import Any

import msgpack
import pytest

from protocol import (
    MAX_APPLIER_WORKERS,
    ApplierChannel,
    ApplierReport,
    ApplierWorker,
    ProtocolError,
    decode_applier,
    encode_applier,
)
from protocol.applier import _decode_checked

CH = "group_replication_applier"
FIGS = list(range(100, 121))  # 21 figures, by hand
WIRE: list[Any] = [
    1,
    1_700_000_000_000_000,
    "native",
    [[CH, 5_000_000_000, 1_699_999_000_000_000, *FIGS]],
    [[CH, 1, 51, "DML", 1200, 600], [CH, 2, 52, "UNASSIGNED", 0, 0]],
]


def _report() -> ApplierReport:
    return ApplierReport(
        at_us=1_700_000_000_000_000,
        source="native",
        channels=(ApplierChannel(CH, 5_000_000_000, 1_699_999_000_000_000, *FIGS),),
        workers=(
            ApplierWorker(CH, 1, 51, "DML", 1200, 600),
            ApplierWorker(CH, 2, 52, "UNASSIGNED", 0, 0),
        ),
    )


def test_encode_gives_the_hand_written_layout() -> None:
    assert encode_applier(_report()) == WIRE


def test_decode_of_the_hand_written_layout() -> None:
    report = decode_applier(copy.deepcopy(WIRE))
    assert report == _report()
    assert report.channels[0].committed == 100
    assert report.channels[0].read_relay_log_ns == 120


def test_round_trip_through_msgpack_and_all_null_figures() -> None:
    derived = ApplierReport(1, "derived", (ApplierChannel(CH, ongoing=2),), (ApplierWorker(CH, 3),))
    packed = msgpack.packb(encode_applier(derived))
    assert decode_applier(msgpack.unpackb(packed)) == derived


def _mutations() -> list[Any]:
    out: list[Any] = []
    bad_values: list[Any] = [None, -1, 1 << 63, 1.5, True, "x", [], {}]
    for path in (
        (0,),
        (1,),
        (2,),
        (3,),
        (4,),
        (3, 0, 0),
        (3, 0, 1),
        (3, 0, 2),
        (3, 0, 3),
        (3, 0, 23),
        (4, 0, 0),
        (4, 0, 1),
        (4, 0, 2),
        (4, 0, 3),
        (4, 0, 4),
        (4, 0, 5),
    ):
        for value in bad_values:
            wire = copy.deepcopy(WIRE)
            target = wire
            for i in path[:-1]:
                target = target[i]
            target[path[-1]] = value
            out.append(wire)
    dup = copy.deepcopy(WIRE)
    dup[4][1][1] = 1
    out.append(dup)
    twice = copy.deepcopy(WIRE)
    twice[3].append(copy.deepcopy(twice[3][0]))
    out.append(twice)
    short = copy.deepcopy(WIRE)
    short[3][0].pop()
    out.append(short)
    out.append(WIRE[:4])
    out.append([*WIRE, 0])
    too_many = copy.deepcopy(WIRE)
    too_many[4] = [[CH, i, None, None, None, None] for i in range(MAX_APPLIER_WORKERS + 1)]
    out.append(too_many)
    return out


@pytest.mark.parametrize("wire", _mutations())
def test_fast_path_accepts_exactly_what_the_checked_path_accepts(wire: Any) -> None:
    try:
        expected: ApplierReport | None = _decode_checked(wire)
    except ProtocolError:
        expected = None
    if expected is None:
        with pytest.raises(ProtocolError):
            decode_applier(wire)
    else:
        assert decode_applier(wire) == expected


def test_bad_values_are_protocol_errors_naming_the_field() -> None:
    wire = copy.deepcopy(WIRE)
    wire[3][0][4] = -1
    with pytest.raises(ProtocolError, match=r"channels\[0\]\.ongoing"):
        decode_applier(wire)
    wire = copy.deepcopy(WIRE)
    wire[4][0][3] = "DCL"
    with pytest.raises(ProtocolError, match=r"workers\[0\]\.type"):
        decode_applier(wire)
    with pytest.raises(ProtocolError, match="version"):
        decode_applier([2, *WIRE[1:]])


def test_encoder_refuses_what_receivers_refuse() -> None:
    with pytest.raises(ProtocolError):
        encode_applier(ApplierReport(1, "native", (ApplierChannel(CH, committed=-5),)))
    with pytest.raises(ProtocolError):
        encode_applier(ApplierReport(1, "other"))
