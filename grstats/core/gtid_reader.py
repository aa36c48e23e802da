"""A member's ext.gtids read again only when its sets changed (issue 39 row 1).

Strategy: see `GtidStateReader`. Pure, bounded in bytes, no clock.
"""

from __future__ import annotations

from protocol import GtidState, decode_gtid_state

__all__ = ["MAX_READER_TEXT_BYTES", "GtidStateReader"]


#: Bytes of GTID set texts `GtidStateReader` keeps (the oldest member's forgotten first).
MAX_READER_TEXT_BYTES = 4 * 1024 * 1024


class GtidStateReader:
    """`protocol.decode_gtid_state` per member, the sets parsed again only when they changed.

    A member repeats its GTID sets (a resend after a reconnect or a timed-out
    publish, the gtids topic's copy, an idle server): parsing 24 KiB of single
    GTIDs costs milliseconds, comparing the texts microseconds. The member's
    last texts are kept with their parsed sets; a value with the same texts is
    checked by protocol's decoder with empty sets (its version and time) and
    given the kept sets. Bounded: at most `MAX_READER_TEXT_BYTES` of texts,
    the member kept longest forgotten first (a member forgotten is only parsed
    again).
    """

    def __init__(self, max_text_bytes: int = MAX_READER_TEXT_BYTES) -> None:
        self.max_text_bytes = max_text_bytes
        self._last: dict[tuple[str, str], tuple[str, str, GtidState]] = {}
        self._bytes = 0

    def read(self, key: tuple[str, str], value: object) -> GtidState:
        """`decode_gtid_state(value)`, the section of member `key` (group, id).

        Raises:
            ProtocolError: as `decode_gtid_state` (a refused value is not kept).
        """
        last = self._last.get(key)
        if (
            last is not None
            and type(value) is list
            and len(value) == 4
            and value[2] == last[0]
            and value[3] == last[1]
        ):
            checked = decode_gtid_state([value[0], value[1], "", ""])
            return GtidState(checked.at_us, last[2].executed, last[2].purged)
        state = decode_gtid_state(value)
        assert isinstance(value, list | tuple)  # decode_gtid_state accepted it
        executed, purged = value[2], value[3]
        self._forget(key)
        self._last[key] = (executed, purged, state)
        self._bytes += len(executed) + len(purged)
        while self._bytes > self.max_text_bytes and self._last:
            self._forget(next(iter(self._last)))
        return state

    def _forget(self, key: tuple[str, str]) -> None:
        gone = self._last.pop(key, None)
        if gone is not None:
            self._bytes -= len(gone[0]) + len(gone[1])
