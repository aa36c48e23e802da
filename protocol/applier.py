"""The envelope's `ext.applier` section: one member's applier metrics (WL#15620).

Wire form (version 1), a msgpack array, every position fixed::

    [1, at_us, source, [channel, ...], [worker, ...]]   # 0-4 channels, 0-256 workers
    channel = [name, active_ns, last_start_us, *figures]     # 3 + 22 items
    worker  = [channel, worker_id, thread_id, type, full_bytes, applied_bytes]

* `at_us`: when the sender read these figures, its own wall clock, µs since
  the epoch (UTC).
* `source`: "native" (the server's replication_applier_metrics and
  replication_applier_progress_by_worker) or "derived" (a server without
  them: only what its 8.0 tables tell; the rest nil).
* `name` / `channel`: the channel, 1-64 characters of `[0-9A-Za-z_.-]`.
* every figure is nil (unknown) or an integer 0..2^63-1, in the order of
  `CHANNEL_FIGURES` (durations in nanoseconds, sizes in bytes, as MySQL has
  them). `last_start_us` is nil or 1..2^55 µs.
* `worker_id`: 0..2^32-1; `thread_id`: nil or 0..2^63-1; `type`: "UNASSIGNED",
  "DML", "DDL" or nil (unknown); the sizes nil or 0..2^63-1.

Every array has exactly its length; a channel name appears once among the
channels, a (channel, worker_id) once among the workers. One busy applier
channel with four workers packs to about 230 bytes.

Compatibility and faults: as `ext.lag` -- receivers ignore unknown `ext` keys;
a malformed section is refused (`ProtocolError`), the receiver applies the
envelope's statistics anyway and counts `envelopes_applier_malformed`.

Invariants: only `ProtocolError` leaves `decode_applier`; whatever
`encode_applier` returns, `decode_applier` accepts and returns equal; the
fast path accepts exactly what the checked path accepts (tested).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from itertools import starmap
from typing import Any, Final, NoReturn

from protocol.errors import ProtocolError
from protocol.frozen import builder

APPLIER_VERSION: Final = 1
MAX_APPLIER_CHANNELS: Final = 4
MAX_APPLIER_WORKERS: Final = 256
MAX_FIGURE: Final = (1 << 63) - 1
MAX_WORKER_ID: Final = (1 << 32) - 1
_MAX_TIMESTAMP_US: Final = 1 << 55
_MAX_CHANNEL_NAME: Final = 64
APPLIER_SOURCES: Final = ("native", "derived")
TRANSACTION_TYPES: Final = ("UNASSIGNED", "DML", "DDL")
_CHANNEL_CHARS = re.compile(r"[0-9A-Za-z_.-]+")

#: The per-channel figures after name, active_ns and last_start_us, in wire order.
CHANNEL_FIGURES: Final = (
    "committed",
    "ongoing",
    "pending",
    "committed_bytes",
    "ongoing_full_bytes",
    "ongoing_progress_bytes",
    "pending_bytes",
    "events_committed",
    "waits_for_work_count",
    "waits_for_work_ns",
    "waits_for_worker_count",
    "waits_for_worker_ns",
    "waits_dependency_count",
    "waits_dependency_ns",
    "waits_queue_memory_count",
    "waits_queue_memory_ns",
    "waits_queues_full_count",
    "waits_queues_full_ns",
    "waits_commit_order_count",
    "waits_commit_order_ns",
    "read_relay_log_ns",
)
_CHANNEL_LEN: Final = 3 + len(CHANNEL_FIGURES)
_CHANNEL_FIELDS: Final = operator.attrgetter(
    "channel", "active_ns", "last_start_us", *CHANNEL_FIGURES
)
_WORKER_FIELDS: Final = operator.attrgetter(
    "channel", "worker_id", "thread_id", "transaction_type", "full_bytes", "applied_bytes"
)


@dataclass(frozen=True, slots=True)
class ApplierChannel:
    """One channel's row of replication_applier_metrics; None: unknown (NULL)."""

    channel: str
    active_ns: int | None = None
    last_start_us: int | None = None
    committed: int | None = None
    ongoing: int | None = None
    pending: int | None = None
    committed_bytes: int | None = None
    ongoing_full_bytes: int | None = None
    ongoing_progress_bytes: int | None = None
    pending_bytes: int | None = None
    events_committed: int | None = None
    waits_for_work_count: int | None = None
    waits_for_work_ns: int | None = None
    waits_for_worker_count: int | None = None
    waits_for_worker_ns: int | None = None
    waits_dependency_count: int | None = None
    waits_dependency_ns: int | None = None
    waits_queue_memory_count: int | None = None
    waits_queue_memory_ns: int | None = None
    waits_queues_full_count: int | None = None
    waits_queues_full_ns: int | None = None
    waits_commit_order_count: int | None = None
    waits_commit_order_ns: int | None = None
    read_relay_log_ns: int | None = None


@dataclass(frozen=True, slots=True)
class ApplierWorker:
    """One row of replication_applier_progress_by_worker; None: unknown (NULL)."""

    channel: str
    worker_id: int
    thread_id: int | None = None
    transaction_type: str | None = None
    full_bytes: int | None = None
    applied_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class ApplierReport:
    """The whole section."""

    at_us: int
    source: str = "native"
    channels: tuple[ApplierChannel, ...] = ()
    workers: tuple[ApplierWorker, ...] = ()


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"ext.applier: {where}: {problem}")


def _int(where: str, value: object, low: int, high: int) -> int:
    if type(value) is not int:  # bool is an int subclass; not here
        _fail(where, f"expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        _fail(where, f"expected an integer {low}-{high}, got {value}")
    return value


def _opt(where: str, value: object, low: int, high: int) -> int | None:
    return None if value is None else _int(where, value, low, high)


def _array(where: str, value: object, length: int | None = None) -> list[Any]:
    if type(value) is not list:
        _fail(where, f"expected an array, got {type(value).__name__}")
    if length is not None and len(value) != length:
        _fail(where, f"expected {length} items, got {len(value)}")
    return value


def _name(where: str, value: object) -> str:
    if type(value) is not str:
        _fail(where, f"expected a string, got {type(value).__name__}")
    if not 1 <= len(value) <= _MAX_CHANNEL_NAME or _CHANNEL_CHARS.fullmatch(value) is None:
        _fail(where, f"expected 1-{_MAX_CHANNEL_NAME} characters of [0-9A-Za-z_.-]")
    return value


def _channel(where: str, value: object) -> ApplierChannel:
    items = _array(where, value, _CHANNEL_LEN)
    figures = {
        f: _opt(f"{where}.{f}", items[3 + i], 0, MAX_FIGURE) for i, f in enumerate(CHANNEL_FIGURES)
    }
    return ApplierChannel(
        channel=_name(f"{where}.name", items[0]),
        active_ns=_opt(f"{where}.active_ns", items[1], 0, MAX_FIGURE),
        last_start_us=_opt(f"{where}.last_start_us", items[2], 1, _MAX_TIMESTAMP_US),
        **figures,
    )


def _worker(where: str, value: object) -> ApplierWorker:
    items = _array(where, value, 6)
    kind = items[3]
    if kind is not None and (type(kind) is not str or kind not in TRANSACTION_TYPES):
        _fail(f"{where}.type", f"expected one of {', '.join(TRANSACTION_TYPES)} or nil")
    return ApplierWorker(
        channel=_name(f"{where}.channel", items[0]),
        worker_id=_int(f"{where}.worker_id", items[1], 0, MAX_WORKER_ID),
        thread_id=_opt(f"{where}.thread_id", items[2], 0, MAX_FIGURE),
        transaction_type=kind,
        full_bytes=_opt(f"{where}.full_bytes", items[4], 0, MAX_FIGURE),
        applied_bytes=_opt(f"{where}.applied_bytes", items[5], 0, MAX_FIGURE),
    )


def _decode_checked(value: object) -> ApplierReport:
    # Field by field, naming the first problem (the reference the fast path is tested against).
    items = _array("top level", value, 5)
    if type(items[0]) is not int or items[0] != APPLIER_VERSION:
        _fail("version", f"unsupported applier section version {items[0]!r}")
    at_us = _int("at_us", items[1], 1, _MAX_TIMESTAMP_US)
    source = items[2]
    if type(source) is not str or source not in APPLIER_SOURCES:
        _fail("source", f"expected one of {', '.join(APPLIER_SOURCES)}")
    raw_channels = _array("channels", items[3])
    if len(raw_channels) > MAX_APPLIER_CHANNELS:
        _fail("channels", f"more than {MAX_APPLIER_CHANNELS}")
    raw_workers = _array("workers", items[4])
    if len(raw_workers) > MAX_APPLIER_WORKERS:
        _fail("workers", f"more than {MAX_APPLIER_WORKERS}")
    channels = tuple(_channel(f"channels[{i}]", c) for i, c in enumerate(raw_channels))
    workers = tuple(_worker(f"workers[{i}]", w) for i, w in enumerate(raw_workers))
    if len({c.channel for c in channels}) != len(channels):
        _fail("channels", "a channel name appears twice")
    if len({(w.channel, w.worker_id) for w in workers}) != len(workers):
        _fail("workers", "a (channel, worker_id) appears twice")
    return ApplierReport(at_us, source, channels, workers)


# The fast path: the well-formed case in one pass of inline comparisons (on
# CPython a builtin call costs several of them, so there are as few as it
# takes: one regex over the joined names -- a text is in the character class
# iff every piece is), without building error texts. False sends the caller
# to `_decode_checked`, which finds and names the problem; it accepts exactly
# what that accepts (tested).
_build_channel = builder(ApplierChannel)
_build_worker = builder(ApplierWorker)
_build_report = builder(ApplierReport)


def _well_formed(value: object) -> bool:
    if type(value) is not list or len(value) != 5:
        return False
    version, at_us, source, channels, workers = value
    if (
        type(version) is not int
        or version != APPLIER_VERSION
        or type(at_us) is not int
        or not 0 < at_us <= _MAX_TIMESTAMP_US
        or type(source) is not str
        or source not in APPLIER_SOURCES
        or type(channels) is not list
        or len(channels) > MAX_APPLIER_CHANNELS
        or type(workers) is not list
        or len(workers) > MAX_APPLIER_WORKERS
    ):
        return False
    names: set[str] = set()
    for c in channels:
        if type(c) is not list or len(c) != _CHANNEL_LEN:
            return False
        name, start = c[0], c[2]
        if type(name) is not str or not 0 < len(name) <= _MAX_CHANNEL_NAME or name in names:
            return False
        if start is not None and (type(start) is not int or not 0 < start <= _MAX_TIMESTAMP_US):
            return False
        for f in c[1:]:  # active_ns, last_start_us (within both bounds) and the figures
            if f is not None and (type(f) is not int or not 0 <= f <= MAX_FIGURE):
                return False
        names.add(name)
    pairs: set[tuple[str, int]] = set()
    for w in workers:
        if type(w) is not list or len(w) != 6:
            return False
        name, wid, tid, kind, full, applied = w
        if (
            type(name) is not str
            or not 0 < len(name) <= _MAX_CHANNEL_NAME
            or type(wid) is not int
            or not 0 <= wid <= MAX_WORKER_ID
            or (kind is not None and (type(kind) is not str or kind not in TRANSACTION_TYPES))
            or (tid is not None and (type(tid) is not int or not 0 <= tid <= MAX_FIGURE))
            or (full is not None and (type(full) is not int or not 0 <= full <= MAX_FIGURE))
            or (
                applied is not None and (type(applied) is not int or not 0 <= applied <= MAX_FIGURE)
            )
        ):
            return False
        names.add(name)
        pairs.add((name, wid))
    if len(pairs) != len(workers):
        return False
    return not names or _CHANNEL_CHARS.fullmatch("".join(names)) is not None


def _build(value: list[Any]) -> ApplierReport:
    # `value` is well formed: every position holds what the layout says.
    channels = tuple(starmap(_build_channel, value[3]))
    workers = tuple(starmap(_build_worker, value[4]))
    return _build_report(value[1], value[2], channels, workers)


def _fast(value: object) -> ApplierReport | None:
    return _build(value) if _well_formed(value) else None  # type: ignore[arg-type]


def decode_applier(value: object) -> ApplierReport:
    """Validate an `ext.applier` value (already unpacked by the envelope decoder).

    Args:
        value: `envelope.ext["applier"]`: plain msgpack data.

    Returns:
        The report.

    Raises:
        ProtocolError: not the layout above (version, type, length, range,
            characters, too many channels or workers, a duplicate key).
    """
    if _well_formed(value):
        return _build(value)  # type: ignore[arg-type] # well formed: a list
    return _decode_checked(value)


def encode_applier(report: ApplierReport) -> list[Any]:
    """The `ext.applier` value for `report` (plain data for the envelope's msgpack).

    Raises:
        ProtocolError: the report breaks a rule `decode_applier` enforces.
    """
    wire: list[Any] = [
        APPLIER_VERSION,
        report.at_us,
        report.source,
        [list(_CHANNEL_FIELDS(c)) for c in report.channels],
        [list(_WORKER_FIELDS(w)) for w in report.workers],
    ]
    if not _well_formed(wire):  # one set of rules for both directions
        _decode_checked(wire)  # names the problem
    return wire
