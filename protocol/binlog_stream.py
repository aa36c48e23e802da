"""Cut a binary or relay log byte stream into events, in bounded memory.

Strategy: `BinlogScanner` is fed the log in chunks of any size (bytes in,
`ScannedEvent` records out; no I/O). An event wholly inside the chunk is
handled in place through memoryview slices, without a copy. An event that
straddles chunks is either buffered -- only the types decoded here (format
description, previous GTIDs, GTID events), each up to `max_event_size`
bytes -- or streamed (`protocol.binlog_skip.SkippedEvent`): its CRC32 is
carried across chunks and nothing of it is kept. So memory is bounded by the
chunk size plus `max_event_size`, whatever the log's size or its largest row
event.

Invariants: `position` counts bytes from the start of the log (the magic is
bytes 0-3); events are contiguous, so an event ends where the next begins;
the checksum algorithm in force is the one of the last FORMAT_DESCRIPTION_EVENT
(a relay log carries its own and its source's), unless a mode is forced.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Final

from protocol.binlog import (
    BAD_MAGIC,
    BINLOG_MAGIC,
    CHECKSUM_CRC32,
    CHECKSUM_LEN,
    COMMON_HEADER_LEN,
    CRC_FAILED,
    EVENT_TOO_SMALL,
    EVENT_TRUNCATED,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT_TYPES,
    HEARTBEAT_LOG_EVENT,
    HEARTBEAT_LOG_EVENT_V2,
    PREVIOUS_GTIDS_LOG_EVENT,
    ROTATE_EVENT,
    STOP_EVENT,
    EventHeader,
    FormatDescription,
    GtidEvent,
    decode_body,
    event_crc,
)
from protocol.binlog_skip import SkippedEvent, check_checksum_room
from protocol.errors import ProtocolError
from protocol.gtid import GtidSet

DEFAULT_MAX_EVENT_SIZE: Final = 16 * 1024 * 1024
"""Largest event the scanner buffers (only the types it decodes; others stream)."""

_DECODED_TYPES: Final = (
    frozenset({FORMAT_DESCRIPTION_EVENT, PREVIOUS_GTIDS_LOG_EVENT}) | GTID_EVENT_TYPES
)
_REPORTED_TYPES: Final = _DECODED_TYPES | {
    ROTATE_EVENT,
    STOP_EVENT,
    HEARTBEAT_LOG_EVENT,
    HEARTBEAT_LOG_EVENT_V2,
}
"""Types reported to the caller: the decoded ones, and those that end a transaction."""

_MODES: Final = ("auto", "crc32", "none")
_U32 = struct.Struct("<I")
_HEADER = struct.Struct("<IBIIIH")


@dataclass(frozen=True, slots=True)
class ScannedEvent:
    """One reported event.

    Attributes:
        position: offset of the event's first byte in the log.
        header: its common header.
        checksum_ok: True when a CRC32 was verified; None when there was none.
        body: decoded body for GTID, format description and previous GTIDs
            events; None for rotate, stop and heartbeat events.
    """

    position: int
    header: EventHeader
    checksum_ok: bool | None
    body: GtidEvent | FormatDescription | GtidSet | None


class BinlogScanner:
    """Incremental reader of one log, magic first (sans-IO).

    Only events of the types in `ScannedEvent` are reported; every event is
    size-checked and, when checksums are on, CRC-verified.
    """

    def __init__(
        self, *, checksum: str = "auto", max_event_size: int = DEFAULT_MAX_EVENT_SIZE
    ) -> None:
        """Args:
        checksum: "auto" (follow each format description event), "crc32" or "none".
        max_event_size: bound on a buffered (decoded-type) event.

        Raises:
            ProtocolError: an unknown checksum mode.
        """
        if checksum not in _MODES:
            raise ProtocolError(f"unknown checksum mode {checksum!r}", None)
        self._mode = checksum
        self._crc_on = checksum == "crc32"
        self._max_event_size = max_event_size
        self._position = 0  # absolute offset of the next byte not yet consumed
        self._magic_done = False
        self._pending = bytearray()  # magic, a partial header or a partial buffered event
        self._skip: SkippedEvent | None = None  # a streamed (not buffered) event in progress
        self.events_seen = 0
        """Events read so far, of every type."""
        self.bytes_checksummed = 0
        """Bytes whose CRC32 was computed (a measure of verification work)."""

    @property
    def position(self) -> int:
        """Offset of the next byte the scanner expects."""
        return self._position

    def feed(self, data: bytes | bytearray | memoryview) -> list[ScannedEvent]:
        """Consume the next chunk of the log.

        Args:
            data: the next bytes, any length.

        Returns:
            The reported events that completed within these bytes, in order.

        Raises:
            ProtocolError: bad magic, an event size below 19, a buffered event
                above the bound, a checksum mismatch or a malformed body; the
                offset is absolute in the log.
        """
        out: list[ScannedEvent] = []
        view = memoryview(data).cast("B")
        i = 0
        n = len(view)
        while i < n:
            if self._skip is not None:
                i = self._continue_skip(view, i)
                continue
            if not self._magic_done or self._pending:
                i = self._fill_pending(view, i, out)
                continue
            i = self._whole_events(view, i, out)
            if n - i < COMMON_HEADER_LEN:
                if i < n:
                    self._pending += view[i:n]
                    self._position += n - i
                    i = n
                continue
            i = self._start_partial(view, i)
        return out

    def _whole_events(self, view: memoryview, i: int, out: list[ScannedEvent]) -> int:
        """The fast path: every event wholly inside `view` from `i`, handled in place.

        Returns the offset of the first event not wholly inside `view`. Skipped
        events cost one CRC32 call and no copy; the hot loop keeps its counters
        in locals and writes them back once.
        """
        n = len(view)
        base = self._position - i  # absolute offset of view[0]
        unpack = _U32.unpack_from
        crc32 = zlib.crc32
        reported = _REPORTED_TYPES
        skipped = 0
        summed = 0
        try:
            while n - i >= COMMON_HEADER_LEN:
                size = unpack(view, i + 9)[0]
                if size < COMMON_HEADER_LEN:
                    raise ProtocolError(f"{EVENT_TOO_SMALL}: event_size {size}", base + i + 9)
                if n - i < size:
                    break
                if view[i + 4] in reported:
                    self._position = base + i
                    self._whole_event(view[i : i + size], out)
                elif self._crc_on:
                    end = i + size - CHECKSUM_LEN
                    if size < COMMON_HEADER_LEN + CHECKSUM_LEN:
                        raise ProtocolError(
                            f"{EVENT_TOO_SMALL}: no room for a checksum", base + i + 9
                        )
                    if crc32(view[i:end]) != unpack(view, end)[0]:
                        raise ProtocolError(CRC_FAILED, base + end)
                    skipped += 1
                    summed += size - CHECKSUM_LEN
                else:
                    skipped += 1
                i += size
        finally:
            self._position = base + i
            self.events_seen += skipped
            self.bytes_checksummed += summed
        return i

    def finish(self) -> None:
        """Declare the end of the log.

        Raises:
            ProtocolError: the log ends inside the magic or an event.
        """
        if not self._magic_done:
            raise ProtocolError(BAD_MAGIC, self._position)
        if self._skip is not None:
            raise ProtocolError(EVENT_TRUNCATED, self._skip.start)
        if self._pending:
            raise ProtocolError(EVENT_TRUNCATED, self._position - len(self._pending))

    # --- internals ------------------------------------------------------------------

    def _fill_pending(self, view: memoryview, i: int, out: list[ScannedEvent]) -> int:
        n = len(view)
        if not self._magic_done:
            take = min(len(BINLOG_MAGIC) - len(self._pending), n - i)
            self._pending += view[i : i + take]
            self._position += take
            if len(self._pending) == len(BINLOG_MAGIC):
                if bytes(self._pending) != BINLOG_MAGIC:
                    raise ProtocolError(BAD_MAGIC, 0)
                self._magic_done = True
                self._pending.clear()
            return i + take
        have = len(self._pending)
        if have < COMMON_HEADER_LEN:
            take = min(COMMON_HEADER_LEN - have, n - i)
            self._pending += view[i : i + take]
            self._position += take
            i += take
            if len(self._pending) < COMMON_HEADER_LEN:
                return i
        size = int.from_bytes(self._pending[9:13], "little")
        start = self._position - len(self._pending)
        if size < COMMON_HEADER_LEN:
            raise ProtocolError(f"{EVENT_TOO_SMALL}: event_size {size}", start + 9)
        event_type = self._pending[4]
        if event_type not in _REPORTED_TYPES:
            # Switch to streaming: the header bytes start the running CRC.
            self._begin_skip(bytes(self._pending), start, size)
            self._pending.clear()
            return i
        self._check_bound(size, start)
        take = min(size - len(self._pending), n - i)
        self._pending += view[i : i + take]
        self._position += take
        i += take
        if len(self._pending) == size:
            event = bytes(self._pending)
            self._pending.clear()
            self._position -= size  # _whole_event advances it again
            self._whole_event(memoryview(event), out)
        return i

    def _start_partial(self, view: memoryview, i: int) -> int:
        """An event whose header is complete but whose end is in a later chunk."""
        n = len(view)
        event_type = view[i + 4]
        size = int.from_bytes(view[i + 9 : i + 13], "little")
        if event_type in _REPORTED_TYPES:
            self._check_bound(size, self._position)
            self._pending += view[i:n]
            self._position += n - i
            return n
        self._begin_skip(b"", self._position, size)
        return i

    def _check_bound(self, size: int, start: int) -> None:
        if size > self._max_event_size:
            raise ProtocolError(
                f"Event too big: {size} bytes (bound {self._max_event_size})", start + 9
            )

    def _begin_skip(self, header: bytes, start: int, size: int) -> None:
        skip = SkippedEvent(header, start, size, crc_on=self._crc_on)
        self.bytes_checksummed += skip.summed
        if skip.done:  # a bare header, no checksum
            self.events_seen += 1
        else:
            self._skip = skip

    def _continue_skip(self, view: memoryview, i: int) -> int:
        skip = self._skip
        assert skip is not None
        summed = skip.summed
        take = skip.take(view[i:])
        self.bytes_checksummed += skip.summed - summed
        self._position += take
        if skip.done:
            self._skip = None
            self.events_seen += 1
            skip.verify()
        return i + take

    def _whole_event(self, event: memoryview, out: list[ScannedEvent]) -> None:
        start = self._position
        size = len(event)
        self._position += size
        self.events_seen += 1
        event_type = event[4]
        checksum_ok: bool | None = None
        if event_type == FORMAT_DESCRIPTION_EVENT:
            fde = _decode(event_type, event[COMMON_HEADER_LEN:], start)
            assert isinstance(fde, FormatDescription)
            if self._mode == "auto":
                self._crc_on = fde.checksum_alg == CHECKSUM_CRC32
            if self._crc_on:
                self._verify(event, start)
                checksum_ok = True
            out.append(ScannedEvent(start, _header(event), checksum_ok, fde))
            return
        end = size
        if self._crc_on:
            check_checksum_room(size, start)
            self._verify(event, start)
            checksum_ok = True
            end -= CHECKSUM_LEN
        if event_type in _REPORTED_TYPES:
            body = _decode(event_type, event[COMMON_HEADER_LEN:end], start)
            out.append(ScannedEvent(start, _header(event), checksum_ok, body))

    def _verify(self, event: memoryview, start: int) -> None:
        end = len(event) - CHECKSUM_LEN
        self.bytes_checksummed += end
        crc = event_crc(event) if event[4] == FORMAT_DESCRIPTION_EVENT else zlib.crc32(event[:end])
        if crc != int.from_bytes(event[end:], "little"):
            raise ProtocolError(CRC_FAILED, start + end)


def _decode(
    event_type: int, body: memoryview, start: int
) -> GtidEvent | FormatDescription | GtidSet | None:
    """`decode_body`, its error offset made absolute in the log (`start`: the event's)."""
    try:
        return decode_body(event_type, body)
    except ProtocolError as exc:
        offset = None if exc.offset is None else start + COMMON_HEADER_LEN + exc.offset
        raise ProtocolError(exc.reason, offset) from None


def _header(event: memoryview) -> EventHeader:
    return EventHeader(*_HEADER.unpack_from(event))
