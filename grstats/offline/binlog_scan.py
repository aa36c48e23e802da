"""Transactions and hop delays out of binary and relay logs (the logic of `grstats binlog`).

Strategy: a file is read in fixed-size chunks into `protocol.BinlogScanner`,
so memory is one chunk plus the scanner's bound on a decoded event, whatever
the file size. Each GTID event opens a transaction; the next reported event
(the next GTID, a rotate, stop, format description or previous-GTIDs event)
or the end of the file closes it, so its byte span is exact even for writers
that predate transaction_length. Hop delay is immediate - original commit
timestamp, and exists only when both are known and the original is not 0.

Percentiles use `LogHistogram`: exact up to 255 µs, then 128 buckets per power
of two (under 0.8 % relative error), so a summary is bounded in memory however
many transactions it covers.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from protocol import (
    BinlogScanner,
    GtidEvent,
    ProtocolError,
    ScannedEvent,
)

DEFAULT_CHUNK_SIZE: Final = 1024 * 1024
"""Bytes read from a file at a time (the file-side buffer bound)."""

ORIGINAL_UNKNOWN: Final = "original commit timestamp 0: the source predates MySQL 8.0.1"
NO_TIMESTAMPS: Final = "no commit timestamps: the writer predates MySQL 8.0.1"

Progress = Callable[[Path, int, int], None]
"""progress(path, bytes done, file size)."""


class ScanError(Exception):
    """A log could not be read or is malformed; the message names file and offset."""

    def __init__(
        self, path: Path, message: str, offset: int | None = None, *, unreadable: bool = False
    ) -> None:
        self.path = path
        self.offset = offset
        self.unreadable = unreadable
        """True when the file could not be read at all (not a content error)."""
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{path}: {message}{where}")


@dataclass(frozen=True, slots=True)
class Transaction:
    """One transaction of a log: its GTID event and the bytes it occupies.

    Attributes:
        file: the log it was read from.
        start: offset of its GTID event.
        end: offset just past its last event.
        server_id: server_id in the GTID event's header (the originating server).
        header_timestamp: the GTID event's header timestamp, seconds.
        event: the decoded GTID event.
    """

    file: Path
    start: int
    end: int
    server_id: int
    header_timestamp: int
    event: GtidEvent

    @property
    def span(self) -> int:
        return self.end - self.start

    @property
    def hop_delay(self) -> int | None:
        """immediate - original commit timestamp in µs; None when the original is unknown."""
        ev = self.event
        if ev.immediate_commit_timestamp is None or not ev.original_commit_timestamp:
            return None
        return ev.immediate_commit_timestamp - ev.original_commit_timestamp

    @property
    def note(self) -> str:
        """Why there is no hop delay, or ""."""
        if self.event.immediate_commit_timestamp is None:
            return NO_TIMESTAMPS
        if self.event.original_commit_timestamp == 0:
            return ORIGINAL_UNKNOWN
        return ""

    @property
    def commit_time(self) -> int:
        """Commit time on this log's writer, µs (the header's second when nothing finer)."""
        ts = self.event.immediate_commit_timestamp
        return ts if ts is not None else self.header_timestamp * 1_000_000

    @property
    def source(self) -> str:
        """The originating server: its UUID, or its server_id for anonymous GTIDs."""
        return f"server_id {self.server_id}" if self.event.anonymous else self.event.sid

    @property
    def length_matches(self) -> bool | None:
        """Whether transaction_length equals the span; None when not written."""
        length = self.event.transaction_length
        return None if length is None else length == self.span


def scan_file(
    path: Path,
    *,
    checksum: str = "auto",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: Progress | None = None,
) -> Iterator[Transaction]:
    """Yield the transactions of one binary or relay log, in file order.

    Args:
        path: the log.
        checksum: "auto" (as each format description event says), "crc32" or "none".
        chunk_size: bytes read at a time.
        progress: called after each chunk with (path, bytes done, file size).

    Raises:
        ScanError: unreadable file, or malformed content (reason and offset).
    """
    try:
        scanner = BinlogScanner(checksum=checksum)
    except ProtocolError as exc:
        raise ScanError(path, exc.reason) from None
    pending: ScannedEvent | None = None
    try:
        with path.open("rb", buffering=0) as handle:
            size = _file_size(handle.fileno())
            buffer = bytearray(chunk_size)
            view = memoryview(buffer)
            done = 0
            while True:
                count = handle.readinto(buffer)
                if not count:
                    break
                done += count
                for scanned in scanner.feed(view[:count]):
                    if pending is not None:
                        yield _transaction(path, pending, scanned.position)
                        pending = None
                    if isinstance(scanned.body, GtidEvent):
                        pending = scanned
                if progress is not None:
                    progress(path, done, size)
            scanner.finish()
    except OSError as exc:
        raise ScanError(path, f"cannot read: {exc.strerror or exc}", unreadable=True) from None
    except ProtocolError as exc:
        raise ScanError(path, exc.reason, exc.offset) from None
    if pending is not None:
        yield _transaction(path, pending, scanner.position)


def _file_size(fd: int) -> int:
    return os.fstat(fd).st_size


def _transaction(path: Path, scanned: ScannedEvent, end: int) -> Transaction:
    assert isinstance(scanned.body, GtidEvent)
    return Transaction(
        file=path,
        start=scanned.position,
        end=end,
        server_id=scanned.header.server_id,
        header_timestamp=scanned.header.timestamp,
        event=scanned.body,
    )


def scan_files(
    paths: Iterable[Path],
    *,
    checksum: str = "auto",
    since: int | None = None,
    until: int | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: Progress | None = None,
) -> Iterator[Transaction]:
    """Transactions of several logs in the given order, filtered by commit time.

    Args:
        paths: the logs, oldest first.
        checksum: see `scan_file`.
        since: keep transactions committed at or after this time (µs since the epoch).
        until: keep transactions committed before this time (µs).
        chunk_size: bytes read at a time.
        progress: see `scan_file`.

    Raises:
        ScanError: see `scan_file`.
    """
    for path in paths:
        for trx in scan_file(path, checksum=checksum, chunk_size=chunk_size, progress=progress):
            when = trx.commit_time
            if since is not None and when < since:
                continue
            if until is not None and when >= until:
                continue
            yield trx


# --- percentiles in bounded memory ---------------------------------------------------

_EXACT: Final = 256
_SUB: Final = 128


def _bucket(value: int) -> int:
    if value < 0:
        return -_bucket(-value) - 1
    if value < _EXACT:
        return value
    shift = value.bit_length() - 8
    return _EXACT + (shift - 1) * _SUB + ((value >> shift) - _SUB)


def _bucket_low(index: int) -> int:
    if index < 0:
        return -_bucket_high(-index - 1)
    if index < _EXACT:
        return index
    shift = (index - _EXACT) // _SUB + 1
    return ((index - _EXACT) % _SUB + _SUB) << shift


def _bucket_high(index: int) -> int:
    if index < _EXACT:
        return index
    shift = (index - _EXACT) // _SUB + 1
    return _bucket_low(index) + (1 << shift) - 1


@dataclass(slots=True)
class LogHistogram:
    """Counts of values in log-linear buckets; exact min, max and count."""

    counts: dict[int, int] = field(default_factory=dict)
    count: int = 0
    min: int = 0
    max: int = 0

    def add(self, value: int) -> None:
        index = _bucket(value)
        self.counts[index] = self.counts.get(index, 0) + 1
        if self.count == 0 or value < self.min:
            self.min = value
        if self.count == 0 or value > self.max:
            self.max = value
        self.count += 1

    def percentile(self, p: float) -> int | None:
        """Nearest-rank percentile (lower bound of its bucket, clamped to min..max)."""
        if self.count == 0:
            return None
        rank = max(1, -(-self.count * p // 100))  # ceil(count * p / 100)
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return min(max(_bucket_low(index), self.min), self.max)
        return self.max


@dataclass(frozen=True, slots=True)
class DelayStats:
    """Hop-delay figures of one group, µs (None when no transaction had a delay)."""

    key: str
    transactions: int
    with_delay: int
    p50: int | None
    p95: int | None
    p99: int | None
    max: int | None


@dataclass(slots=True)
class _Group:
    total: int = 0
    hist: LogHistogram = field(default_factory=LogHistogram)


@dataclass(slots=True)
class Summary:
    """Hop-delay distribution per originating server and per minute (UTC)."""

    by_source: dict[str, _Group] = field(default_factory=dict)
    by_minute: dict[int, _Group] = field(default_factory=dict)
    transactions: int = 0
    original_unknown: int = 0
    no_timestamps: int = 0

    def add(self, trx: Transaction) -> None:
        self.transactions += 1
        delay = trx.hop_delay
        if delay is None:
            if trx.event.immediate_commit_timestamp is None:
                self.no_timestamps += 1
            else:
                self.original_unknown += 1
        minute = trx.commit_time // 60_000_000
        source = self.by_source.get(trx.source)
        if source is None:
            source = self.by_source[trx.source] = _Group()
        per_minute = self.by_minute.get(minute)
        if per_minute is None:
            per_minute = self.by_minute[minute] = _Group()
        source.total += 1
        per_minute.total += 1
        if delay is not None:
            source.hist.add(delay)
            per_minute.hist.add(delay)

    def rows(self, which: str) -> list[DelayStats]:
        """Figures per source ("source") or per minute ("minute"), sorted by key."""
        if which == "source":
            items = sorted(self.by_source.items())
        else:
            items = [(_minute_text(k), self.by_minute[k]) for k in sorted(self.by_minute)]
        return [
            DelayStats(
                key=key,
                transactions=group.total,
                with_delay=group.hist.count,
                p50=group.hist.percentile(50),
                p95=group.hist.percentile(95),
                p99=group.hist.percentile(99),
                max=group.hist.max if group.hist.count else None,
            )
            for key, group in items
        ]


def summarize(transactions: Iterable[Transaction]) -> Summary:
    """Fold transactions into a `Summary`."""
    summary = Summary()
    for trx in transactions:
        summary.add(trx)
    return summary


def _minute_text(minute: int) -> str:
    moment = dt.datetime.fromtimestamp(minute * 60, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%MZ")


def timestamp_text(micros: int | None) -> str:
    """µs since the epoch as UTC ISO text; "" when None or out of range."""
    if micros is None:
        return ""
    try:
        moment = dt.datetime.fromtimestamp(micros / 1_000_000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> int:
    """--since/--until: ISO 8601 (UTC unless an offset is given) or µs since the epoch.

    Raises:
        ValueError: neither form.
    """
    if text.isdigit():
        return int(text)
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
