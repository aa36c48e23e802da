"""The envelope's `ext.lag` section: one member's replication lag by stage (WL#7374, WL#7319).

Wire form (version 1), a msgpack array, every position fixed::

    [1, at_us, [channel, ...]]                    # 0-4 channels
    channel = [name, receiver_on, applier_on, workers, busy_workers,
               last_queued, queueing, last_processed, processing,
               last_applied, applying]
    stage   = [gtid, original_commit_us, immediate_commit_us, start_us, end_us]

* `at_us`: when the sender read these figures, its own wall clock, µs since
  the epoch (UTC). Lags "now" are computed at this instant (MySQL Shell's
  NOW(6) on the member), never at the receiver's clock.
* `name`: the channel (`group_replication_applier`, `..._recovery`), 1-64
  characters. `receiver_on` / `applier_on`: true, false, or nil (unknown).
  `workers` / `busy_workers`: 0-1024 (MySQL's replica_parallel_workers bound).
* a stage's `gtid` is "" (no transaction), `ANONYMOUS` or a GTID
  `uuid:[tag:]gno`, at most `MAX_GTID_TEXT` characters of `[0-9A-Za-z_:-]`;
  each timestamp is nil (MySQL's all-zero timestamp: none) or an integer
  1..2^55 µs (WL#7319's range), as the server that wrote it read its clock.

Every array has exactly its length; a channel name appears once. One idle
applier channel packs to 79 bytes; with all six stages filled (GTIDs of the
group's UUID), about 530.

Compatibility: receivers ignore `ext` keys they do not know (DESIGN.md
section 3), so a daemon that predates `ext.lag` accepts these envelopes. A
version other than 1 is refused (`ProtocolError`) like any malformed section;
the receiver then applies the envelope's statistics anyway and counts the
section as rejected (`envelopes_lag_malformed`) -- a broken lag report must
not hide a member's stats.

Invariants: only `ProtocolError` leaves `decode_lag`; whatever `encode_lag`
returns, `decode_lag` accepts and returns equal; the codec never reads the
clock.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import starmap
from typing import Any, Final, NoReturn

from protocol.errors import ProtocolError
from protocol.frozen import builder

LAG_VERSION: Final = 1
MAX_LAG_CHANNELS: Final = 4
MAX_CHANNEL_NAME: Final = 64
#: uuid (36) + ":" + tag (<= 32) + ":" + gno (<= 19 digits) = 89; a little slack.
MAX_GTID_TEXT: Final = 96
MAX_WORKERS: Final = 1024
MAX_TIMESTAMP_US: Final = 1 << 55

_GTID_CHARS = re.compile(r"[0-9A-Za-z_:-]*")
_CHANNEL_CHARS = re.compile(r"[0-9A-Za-z_.-]+")
_STAGES: Final = (
    "last_queued",
    "queueing",
    "last_processed",
    "processing",
    "last_applied",
    "applying",
)
_CHANNEL_LEN: Final = 5 + len(_STAGES)


@dataclass(frozen=True, slots=True)
class LagStage:
    """One transaction at one stage; see `grstats.core.lag.StageTrx` for the meaning."""

    gtid: str = ""
    original_commit_us: int | None = None
    immediate_commit_us: int | None = None
    start_us: int | None = None
    end_us: int | None = None


@dataclass(frozen=True, slots=True)
class LagChannel:
    """One channel's stages; see `grstats.core.lag.ChannelLag` for the meaning."""

    channel: str = "group_replication_applier"
    receiver_on: bool | None = None
    applier_on: bool | None = None
    workers: int = 0
    busy_workers: int = 0
    last_queued: LagStage = field(default_factory=LagStage)
    queueing: LagStage = field(default_factory=LagStage)
    last_processed: LagStage = field(default_factory=LagStage)
    processing: LagStage = field(default_factory=LagStage)
    last_applied: LagStage = field(default_factory=LagStage)
    applying: LagStage = field(default_factory=LagStage)


@dataclass(frozen=True, slots=True)
class LagReport:
    """The whole section: when it was read and its channels."""

    at_us: int
    channels: tuple[LagChannel, ...] = ()


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"ext.lag: {where}: {problem}")


def _type_name(value: object) -> str:
    return type(value).__name__


def _int(where: str, value: object, low: int, high: int) -> int:
    if type(value) is not int:  # bool is an int subclass; not here
        _fail(where, f"expected an integer, got {_type_name(value)}")
    if not low <= value <= high:
        _fail(where, f"expected an integer {low}-{high}, got {value}")
    return value


def _timestamp(where: str, value: object) -> int | None:
    if value is None:
        return None
    return _int(where, value, 1, MAX_TIMESTAMP_US)


def _flag(where: str, value: object) -> bool | None:
    if value is None or type(value) is bool:
        return value
    _fail(where, f"expected true, false or nil, got {_type_name(value)}")


def _array(where: str, value: object, length: int | None = None) -> list[Any] | tuple[Any, ...]:
    if type(value) is not list and type(value) is not tuple:
        _fail(where, f"expected an array, got {_type_name(value)}")
    if length is not None and len(value) != length:
        _fail(where, f"expected {length} items, got {len(value)}")
    return value


def _gtid(where: str, value: object) -> str:
    if type(value) is not str:
        _fail(where, f"expected a string, got {_type_name(value)}")
    if len(value) > MAX_GTID_TEXT:
        _fail(where, f"longer than {MAX_GTID_TEXT} characters")
    if _GTID_CHARS.fullmatch(value) is None:
        _fail(where, "characters outside [0-9A-Za-z_:-]")
    return value


def _channel_name(where: str, value: object) -> str:
    if type(value) is not str:
        _fail(where, f"expected a string, got {_type_name(value)}")
    if not 1 <= len(value) <= MAX_CHANNEL_NAME:
        _fail(where, f"expected 1-{MAX_CHANNEL_NAME} characters, got {len(value)}")
    if _CHANNEL_CHARS.fullmatch(value) is None:
        _fail(where, "characters outside [0-9A-Za-z_.-]")
    return value


def _stage(where: str, value: object) -> LagStage:
    items = _array(where, value, 5)
    return LagStage(
        gtid=_gtid(f"{where}.gtid", items[0]),
        original_commit_us=_timestamp(f"{where}.original_commit_us", items[1]),
        immediate_commit_us=_timestamp(f"{where}.immediate_commit_us", items[2]),
        start_us=_timestamp(f"{where}.start_us", items[3]),
        end_us=_timestamp(f"{where}.end_us", items[4]),
    )


def _channel(where: str, value: object) -> LagChannel:
    items = _array(where, value, _CHANNEL_LEN)
    name = _channel_name(f"{where}.name", items[0])
    stages = {s: _stage(f"{where}.{s}", items[5 + i]) for i, s in enumerate(_STAGES)}
    return LagChannel(
        channel=name,
        receiver_on=_flag(f"{where}.receiver_on", items[1]),
        applier_on=_flag(f"{where}.applier_on", items[2]),
        workers=_int(f"{where}.workers", items[3], 0, MAX_WORKERS),
        busy_workers=_int(f"{where}.busy_workers", items[4], 0, MAX_WORKERS),
        **stages,
    )


# The fast path: the well-formed case in one pass of inline comparisons (on
# CPython a builtin call costs several of them, so there are as few as it
# takes: one regex over the joined gtids -- a text is in the character class
# iff every piece is), without building error texts. False sends the caller
# to `_decode_checked`, which finds and names the problem; it accepts exactly
# what that accepts (tested).
_build_stage = builder(LagStage)
_build_channel = builder(LagChannel)
_build_report = builder(LagReport)
_MAX_US: Final = MAX_TIMESTAMP_US


def _well_formed(value: object) -> bool:
    if type(value) is not list or len(value) != 3:
        return False
    version, at_us, raw = value
    if (
        type(version) is not int
        or version != LAG_VERSION
        or type(at_us) is not int
        or not 0 < at_us <= MAX_TIMESTAMP_US
        or type(raw) is not list
        or len(raw) > MAX_LAG_CHANNELS
    ):
        return False
    names: set[str] = set()
    gtids: list[str] = []
    for channel in raw:
        if type(channel) is not list or len(channel) != _CHANNEL_LEN:
            return False
        name, receiver_on, applier_on, workers, busy = channel[:5]
        if (
            type(name) is not str
            or not 0 < len(name) <= MAX_CHANNEL_NAME
            or name in names
            or _CHANNEL_CHARS.fullmatch(name) is None
            or (receiver_on is not None and type(receiver_on) is not bool)
            or (applier_on is not None and type(applier_on) is not bool)
            or type(workers) is not int
            or type(busy) is not int
            or not 0 <= workers <= MAX_WORKERS
            or not 0 <= busy <= MAX_WORKERS
        ):
            return False
        names.add(name)
        for stage in channel[5:]:
            if type(stage) is not list or len(stage) != 5:
                return False
            gtid, orig, imm, start, end = stage
            if (
                type(gtid) is not str
                or len(gtid) > MAX_GTID_TEXT
                or (orig is not None and (type(orig) is not int or not 0 < orig <= _MAX_US))
                or (imm is not None and (type(imm) is not int or not 0 < imm <= _MAX_US))
                or (start is not None and (type(start) is not int or not 0 < start <= _MAX_US))
                or (end is not None and (type(end) is not int or not 0 < end <= _MAX_US))
            ):
                return False
            gtids.append(gtid)
    return _GTID_CHARS.fullmatch("".join(gtids)) is not None


def _build(value: list[Any]) -> LagReport:
    # `value` is well formed: every position holds what the layout says.
    channels = []
    for channel in value[2]:
        stages = starmap(_build_stage, channel[5:])
        channels.append(_build_channel(*channel[:5], *stages))
    return _build_report(value[1], tuple(channels))


def _fast_report(value: object) -> LagReport | None:
    return _build(value) if _well_formed(value) else None  # type: ignore[arg-type]


def decode_lag(value: object) -> LagReport:
    """Validate an `ext.lag` value (already unpacked by the envelope decoder).

    Args:
        value: `envelope.ext["lag"]`: plain msgpack data.

    Returns:
        The report.

    Raises:
        ProtocolError: not the layout above: a wrong version, type, length,
            range, size or character, more than `MAX_LAG_CHANNELS` channels,
            or one channel name twice.
    """
    if _well_formed(value):
        return _build(value)  # type: ignore[arg-type] # well formed: a list
    return _decode_checked(value)


def _decode_checked(value: object) -> LagReport:
    # Field by field, naming the first problem (also the reference the fast path
    # is tested against).
    items = _array("top level", value, 3)
    version = items[0]
    if type(version) is not int or version != LAG_VERSION:
        _fail("version", f"unsupported lag section version {version!r}")
    at_us = _int("at_us", items[1], 1, MAX_TIMESTAMP_US)
    raw = _array("channels", items[2])
    if len(raw) > MAX_LAG_CHANNELS:
        _fail("channels", f"more than {MAX_LAG_CHANNELS}")
    channels = tuple(_channel(f"channels[{i}]", c) for i, c in enumerate(raw))
    if len({c.channel for c in channels}) != len(channels):
        _fail("channels", "a channel name appears twice")
    return LagReport(at_us, channels)


_STAGE_FIELDS: Final = operator.attrgetter(
    "gtid", "original_commit_us", "immediate_commit_us", "start_us", "end_us"
)
_CHANNEL_STAGES: Final = operator.attrgetter(*_STAGES)


def encode_lag(report: LagReport) -> list[Any]:
    """The `ext.lag` value for `report` (plain data for the envelope's msgpack).

    Args:
        report: the sender's lag figures.

    Returns:
        The array described in the module docstring; `decode_lag` returns an
        equal report from it.

    Raises:
        ProtocolError: the report breaks a rule `decode_lag` enforces (the
            encoder refuses to send what receivers would refuse).
    """
    wire: list[Any] = [
        LAG_VERSION,
        report.at_us,
        [
            [
                c.channel,
                c.receiver_on,
                c.applier_on,
                c.workers,
                c.busy_workers,
                *map(list, map(_STAGE_FIELDS, _CHANNEL_STAGES(c))),
            ]
            for c in report.channels
        ],
    ]
    if not _well_formed(wire):  # one set of rules for both directions
        _decode_checked(wire)  # names the problem
    return wire


def stage_names() -> Sequence[str]:
    """The stage fields of `LagChannel`, in wire order."""
    return _STAGES
