"""An event the scanner does not report, verified across chunks and never kept.

Strategy: a row event (or any type `BinlogScanner` does not decode) may be far
larger than a chunk and than the scanner's buffer bound. When it straddles
chunks, `SkippedEvent` takes its bytes as they come and keeps none of them:
with checksums on, the CRC32 runs over everything but the last 4 bytes and
only those 4 (the stored checksum) are held, so its memory is constant
whatever the event's size.

Invariants: offsets are absolute in the log; an event with checksums on has
room for its checksum (checked before any byte is taken); the CRC is compared
only once every byte of the event has been taken.
"""

from __future__ import annotations

import zlib

from protocol.binlog import CHECKSUM_LEN, COMMON_HEADER_LEN, CRC_FAILED, EVENT_TOO_SMALL
from protocol.errors import ProtocolError


def check_checksum_room(size: int, start: int) -> None:
    """Refuse an event too small to end in a checksum (checksums on).

    Args:
        size: the event's event_size.
        start: offset of its first byte in the log.

    Raises:
        ProtocolError: `size` is below header plus checksum; the offset is
            that of the event_size field.
    """
    if size < COMMON_HEADER_LEN + CHECKSUM_LEN:
        raise ProtocolError(f"{EVENT_TOO_SMALL}: no room for a checksum", start + 9)


class SkippedEvent:
    """One unreported event whose end is in a later chunk.

    Attributes:
        start: offset of the event's first byte in the log.
        summed: bytes of the event fed to the CRC32 so far.
    """

    __slots__ = ("_crc", "_crc_on", "_end", "_left", "_tail", "start", "summed")

    def __init__(self, header: bytes, start: int, size: int, *, crc_on: bool) -> None:
        """Begin the event.

        Args:
            header: its bytes already read (its common header, or none); never
                part of the checksum.
            start: offset of its first byte in the log.
            size: its event_size.
            crc_on: whether the event ends in a CRC32 to verify.

        Raises:
            ProtocolError: checksums are on and `size` leaves no room for one.
        """
        if crc_on:
            check_checksum_room(size, start)
        self.start = start
        self._end = start + size
        self._left = size - len(header)
        self._crc_on = crc_on
        self._crc = zlib.crc32(header) if crc_on else 0
        self.summed = len(header) if crc_on else 0
        self._tail = bytearray()  # the stored checksum, as its bytes arrive

    @property
    def done(self) -> bool:
        """True once every byte of the event has been taken."""
        return self._left == 0

    def take(self, chunk: memoryview) -> int:
        """Take the event's next bytes from the start of `chunk`.

        Returns:
            How many bytes of `chunk` belong to the event (all, or up to its end).
        """
        take = min(self._left, len(chunk))
        part = chunk[:take]
        if self._crc_on:
            # Bytes before the last 4 feed the CRC; the last 4 are the stored checksum.
            body_left = self._left - CHECKSUM_LEN
            if body_left > 0:
                body = part[:body_left]
                self._crc = zlib.crc32(body, self._crc)
                self.summed += len(body)
                if take > body_left:
                    self._tail += part[body_left:]
            else:
                self._tail += part
        self._left -= take
        return take

    def verify(self) -> None:
        """Compare the stored checksum with the CRC of the event (once `done`).

        Raises:
            ProtocolError: they differ; the offset is the stored checksum's.
        """
        if self._crc_on and int.from_bytes(self._tail, "little") != self._crc:
            raise ProtocolError(CRC_FAILED, self._end - CHECKSUM_LEN)
