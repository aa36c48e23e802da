"""The one error family of the codecs.

Any other exception escaping a decoder is a bug.
"""

from __future__ import annotations


class ProtocolError(ValueError):
    """A message, envelope or GTID text that cannot be decoded.

    Attributes:
        reason: MySQL's wording where one exists (e.g. "Malformed payload item").
        offset: byte (or character) offset at which decoding stopped, or None.
    """

    def __init__(self, reason: str, offset: int | None = None) -> None:
        self.reason = reason
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{reason}{where}")
