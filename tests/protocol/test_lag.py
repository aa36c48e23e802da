"""protocol.lag: the ext.lag codec, from one golden table, plus bounded fuzzing."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol.lag as lag_module
from protocol import (
    Envelope,
    LagChannel,
    LagReport,
    LagStage,
    MemberInfo,
    ProtocolError,
    decode_envelope,
    decode_lag,
    encode_envelope,
    encode_lag,
)

UUID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
AT = 1_700_000_003_250_000
EMPTY = ["", None, None, None, None]
APPLIER = "group_replication_applier"

# (name, report, its wire value written out by hand)
GOLDEN: list[tuple[str, LagReport, list[Any]]] = [
    ("no channels", LagReport(AT), [1, AT, []]),
    (
        "idle channel",
        LagReport(AT, (LagChannel(APPLIER, True, True, 4, 0),)),
        [1, AT, [[APPLIER, True, True, 4, 0, EMPTY, EMPTY, EMPTY, EMPTY, EMPTY, EMPTY]]],
    ),
    (
        "busy channel, threads unknown",
        LagReport(
            AT,
            (
                LagChannel(
                    APPLIER,
                    last_queued=LagStage(f"{UUID}:10", 1, 2, 3, 4),
                    applying=LagStage(f"{UUID}:9", 5, 6, 7, None),
                    workers=1,
                    busy_workers=1,
                ),
            ),
        ),
        [
            1,
            AT,
            [
                [
                    APPLIER,
                    None,
                    None,
                    1,
                    1,
                    [f"{UUID}:10", 1, 2, 3, 4],
                    EMPTY,
                    EMPTY,
                    EMPTY,
                    EMPTY,
                    [f"{UUID}:9", 5, 6, 7, None],
                ]
            ],
        ],
    ),
    (
        "tagged gtid, recovery channel off",
        LagReport(
            AT,
            (
                LagChannel(
                    "group_replication_recovery",
                    False,
                    False,
                    last_applied=LagStage(f"{UUID}:{'t' * 32}:9223372036854775807", 1, 1, 1, 1),
                ),
            ),
        ),
        [
            1,
            AT,
            [
                [
                    "group_replication_recovery",
                    False,
                    False,
                    0,
                    0,
                    EMPTY,
                    EMPTY,
                    EMPTY,
                    EMPTY,
                    [f"{UUID}:{'t' * 32}:9223372036854775807", 1, 1, 1, 1],
                    EMPTY,
                ]
            ],
        ],
    ),
]


@pytest.mark.parametrize(("name", "report", "wire"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_encode_gives_the_golden_wire_value(name: str, report: LagReport, wire: Any) -> None:
    assert encode_lag(report) == wire


@pytest.mark.parametrize(("name", "report", "wire"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_decode_of_the_golden_wire_value_after_msgpack(
    name: str, report: LagReport, wire: Any
) -> None:
    unpacked = msgpack.unpackb(msgpack.packb(wire), raw=False)
    assert decode_lag(unpacked) == report


def _channel(**changes: Any) -> list[Any]:
    ch: list[Any] = [APPLIER, True, True, 4, 1, *([list(EMPTY)] * 6)]
    for index, value in changes.items():
        ch[int(index.removeprefix("i"))] = value
    return ch


BAD: list[tuple[str, Any, str]] = [
    ("not an array", {"v": 1}, "expected an array"),
    ("short top level", [1, AT], "expected 3 items"),
    ("version 2", [2, AT, []], "unsupported lag section version 2"),
    ("version as bool", [True, AT, []], "unsupported lag section version True"),
    ("at_us zero", [1, 0, []], "at_us"),
    ("at_us negative", [1, -5, []], "at_us"),
    ("five channels", [1, AT, [_channel(i0=f"c{i}") for i in range(5)]], "more than 4"),
    ("same channel twice", [1, AT, [_channel(), _channel()]], "appears twice"),
    ("channel short", [1, AT, [_channel()[:10]]], "expected 11 items"),
    ("empty channel name", [1, AT, [_channel(i0="")]], "name"),
    ("long channel name", [1, AT, [_channel(i0="c" * 65)]], "name"),
    ("control char in name", [1, AT, [_channel(i0="a\x1b[2J")]], "characters"),
    ("receiver_on as int", [1, AT, [_channel(i1=1)]], "receiver_on"),
    ("workers as bool", [1, AT, [_channel(i3=True)]], "workers"),
    ("workers too many", [1, AT, [_channel(i3=1025)]], "workers"),
    ("stage short", [1, AT, [_channel(i5=["", None, None, None])]], "expected 5 items"),
    ("gtid as bytes", [1, AT, [_channel(i5=[b"x", None, None, None, None])]], "gtid"),
    ("gtid too long", [1, AT, [_channel(i5=["a" * 97, None, None, None, None])]], "longer"),
    ("gtid escape", [1, AT, [_channel(i5=["\x1b]0;x", None, None, None, None])]], "gtid"),
    ("zero timestamp", [1, AT, [_channel(i6=["", 0, None, None, None])]], "original_commit"),
    ("float timestamp", [1, AT, [_channel(i7=["", None, None, 1.5, None])]], "start_us"),
    ("huge timestamp", [1, AT, [_channel(i10=["", None, None, None, 2**55 + 1])]], "end_us"),
]


@pytest.mark.parametrize(("name", "value", "reason"), BAD, ids=[b[0] for b in BAD])
def test_malformed_sections_are_protocol_errors_naming_the_problem(
    name: str, value: Any, reason: str
) -> None:
    with pytest.raises(ProtocolError, match=r"ext\.lag") as caught:
        decode_lag(value)
    assert reason in caught.value.reason


def test_the_encoder_refuses_what_receivers_refuse() -> None:
    with pytest.raises(ProtocolError, match="gtid"):
        encode_lag(LagReport(AT, (LagChannel(APPLIER, last_queued=LagStage("x" * 97)),)))


def test_an_envelope_carries_the_section_and_a_receiver_that_ignores_it_still_decodes() -> None:
    wire = encode_lag(GOLDEN[2][1])
    member = MemberInfo(UUID, "h", 3306, "ONLINE", "PRIMARY", "8.4.3", "h:33061")
    env = Envelope(UUID, member, "v:1", 1, 1, AT, b"\x01", {"lag": wire, "future": {"x": 1}})
    decoded = decode_envelope(encode_envelope(env))
    assert decode_lag(decoded.ext["lag"]) == GOLDEN[2][1]


# -- fuzzing ----------------------------------------------------------------------

plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=12),
    max_leaves=40,
)
timestamps = st.none() | st.integers(-2, 2**56)
stages = st.lists(
    st.one_of(st.text(max_size=100), st.none(), st.integers()), min_size=5, max_size=5
).map(lambda s: [s[0], *s[1:]]) | st.tuples(
    st.text(alphabet="0123456789abcdef:-_tA", max_size=100),
    timestamps,
    timestamps,
    timestamps,
    timestamps,
).map(list)


# channels one step from valid: names, flags, worker counts and stages drawn near the rules
near_valid_channels = st.lists(
    st.tuples(
        st.text(max_size=70),
        st.none() | st.booleans() | st.integers(0, 2),
        st.none() | st.booleans(),
        st.integers(-1, 1100),
        st.integers(-1, 1100),
        st.lists(stages, min_size=6, max_size=6),
    ),
    max_size=6,
)


@pytest.mark.slow  # 600 examples, CPU-bound: not in make test-fast
@settings(max_examples=600, deadline=None)
@given(plain)
def test_decode_of_any_plain_value_raises_only_protocol_error(value: Any) -> None:
    with contextlib.suppress(ProtocolError):
        decode_lag(value)


@pytest.mark.slow  # 600 examples, CPU-bound: not in make test-fast
@settings(max_examples=600, deadline=None)
@given(st.integers(-1, 2**56), near_valid_channels)
def test_decode_of_near_valid_sections_round_trips_or_raises_protocol_error(
    at_us: int, channels: list[Any]
) -> None:
    value = [1, at_us, [[*c[:5], *c[5]] for c in channels]]
    try:
        report = decode_lag(value)
    except ProtocolError:
        return
    assert decode_lag(encode_lag(report)) == report


@pytest.mark.slow  # 600 examples, CPU-bound: not in make test-fast
@settings(max_examples=600, deadline=None)
@given(st.integers(-1, 2**56), near_valid_channels)
def test_fast_path_accepts_exactly_what_the_checked_path_accepts(
    at_us: int, channels: list[Any]
) -> None:
    value = [1, at_us, [[*c[:5], *c[5]] for c in channels]]
    fast = lag_module._fast_report(value)
    try:
        checked = lag_module._decode_checked(value)
    except ProtocolError:
        assert fast is None
        return
    assert fast == checked


def _busy_wire() -> list[Any]:
    stage = [f"{UUID}:7", 1, 2, 3, 4]
    return [1, AT, [_channel(**{f"i{i}": list(stage) for i in range(5, 11)}), _channel(i0="c2")]]


def _position_mutations() -> list[Any]:
    """The busy wire value with one position (channel head, stage item) made bad."""
    bad: list[Any] = [None, -1, 0, 2**55 + 1, True, False, 1.5, "", "x", "é", "a" * 97, [], b"x"]
    out: list[Any] = []
    paths: list[tuple[int, ...]] = [(2, c, i) for c in (0, 1) for i in range(5)]
    paths += [(2, c, s, i) for c in (0, 1) for s in (5, 8, 10) for i in range(5)]
    for path in paths:
        for value in bad:
            wire = copy.deepcopy(_busy_wire())
            target = wire
            for i in path[:-1]:
                target = target[i]
            target[path[-1]] = value
            out.append(wire)
    renamed = copy.deepcopy(_busy_wire())
    renamed[2][1][0] = APPLIER  # the same channel twice
    out.append(renamed)
    return out


@pytest.mark.parametrize("value", _position_mutations())
def test_fast_path_refuses_each_bad_position_as_the_checked_path_does(value: Any) -> None:
    try:
        expected: LagReport | None = lag_module._decode_checked(value)
    except ProtocolError:
        expected = None
    assert lag_module._fast_report(value) == expected
    if expected is not None:  # what decodes, encodes back to the same value
        assert encode_lag(expected) == value
