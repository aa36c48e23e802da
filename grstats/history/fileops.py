"""The history writer's OS-call boundary.

Strategy: every call by which the writer thread changes the disk (WAL
open/write/fsync/truncate/close, Parquet segment writes) goes through one
`FileOps` object, so a fault (ENOSPC, EIO) can be injected at exactly that
boundary in tests while everything else uses the real file system.  The
default implementation is the plain `os` call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyarrow only where segments are written (grstats.history.offload)
    import pyarrow as pa

__all__ = ["FileOps"]


class FileOps:
    """Plain file-system calls; subclass to inject faults."""

    def open(self, path: Path, flags: int, mode: int) -> int:
        """`os.open`."""
        return os.open(path, flags, mode)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """`os.write` (may write less than asked)."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """`os.fsync`."""
        os.fsync(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        """`os.ftruncate`."""
        os.ftruncate(fd, size)

    def close(self, fd: int) -> None:
        """`os.close`."""
        os.close(fd)

    def write_segments(
        self, directory: Path, table: pa.Table, *, segment_id: str, writer: str = ""
    ) -> list[Path]:
        """`grstats.history.parquet.write_segments` (pyarrow's own writes)."""
        from grstats.history.parquet import write_segments  # noqa: PLC0415 - pyarrow when used

        return write_segments(directory, table, segment_id=segment_id, writer=writer)
