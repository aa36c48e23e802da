"""A local file read whole only when it is a regular file within a stated size.

Strategy: an operator's file (a config, a password file, bytes to decode)
is opened without blocking (a FIFO or a terminal must not hang the command),
checked with `fstat` on the open descriptor (no race with a rename), refused
when it is not a regular file (a device such as /dev/zero never ends) or is
over the caller's bound, and read in chunks that stop one byte past the
bound (a file growing while it is read is refused too, not read without end).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["LocalInputError", "read_local_file"]

_CHUNK = 1 << 20


class LocalInputError(Exception):
    """A local file that was not read; `str()` is the reason (without the file name)."""


def read_local_file(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`.

    Args:
        path: the file.
        max_bytes: the bound; a larger file is refused before it is read.

    Returns:
        Its bytes.

    Raises:
        LocalInputError: it cannot be opened, is not a regular file, or is over the bound.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LocalInputError(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LocalInputError("not a regular file (a device, FIFO or directory is not read)")
        if st.st_size > max_bytes:
            raise LocalInputError(f"{st.st_size} bytes: at most {max_bytes} bytes are read")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(_CHUNK, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise LocalInputError(
                    f"grew past {max_bytes} bytes while read: at most {max_bytes} bytes are read"
                )
        return b"".join(chunks)
    except OSError as exc:
        raise LocalInputError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
