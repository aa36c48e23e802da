"""The quarantine: where history files that cannot be read are kept for a human.

Strategy: a file the writer cannot read (a corrupt Parquet segment, a WAL
file of an unknown format) is *moved* into `<history>/quarantine/`, out of
the partitions every reader lists, so nothing else trips over it and the
writer goes on.  A WAL file with damage inside is *copied* there before its
valid records are segmented: the damaged bytes are kept, the samples around
them are not held back.  The directory lives inside the history root (like
`wal/`): the same file system, so a move is one atomic rename, and the same
permissions the daemon already has.

Invariants:
- Nothing is deleted or truncated: a quarantined file has exactly the bytes
  it had; a name that is taken gets a `.N` suffix instead of replacing it.
- Names keep the file's place: `group=g/date=d/part-x.parquet` becomes
  `group=g+date=d+part-x.parquet`.
- Copying the same WAL file again (a retried segment write) adds nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import structlog

from grstats.history.modes import make_dirs, private
from grstats.history.rowcheck import fsync_path

__all__ = ["QUARANTINE_DIR", "quarantine_file"]

log = structlog.get_logger("grstats.history")

QUARANTINE_DIR = "quarantine"


def _names(directory: Path, path: Path) -> list[Path]:
    """The quarantine names taken by `path` so far, then the next free one."""
    try:
        relative = path.relative_to(directory).as_posix()
    except ValueError:
        relative = path.name
    base = directory / QUARANTINE_DIR / relative.replace("/", "+")
    names, n = [base], 0
    while names[-1].exists():
        n += 1
        names.append(base.with_name(f"{base.name}.{n}"))
    return names


def quarantine_file(directory: Path, path: Path, reason: str, *, copy: bool = False) -> Path | None:
    """Move (or copy) an unreadable file of the history into the quarantine.

    Args:
        directory: the history root.
        path: the file (inside `directory`).
        reason: why it cannot be read (logged).
        copy: keep the original in place (a damaged WAL file still being segmented).

    Returns:
        Where the file is kept now; None when `copy` found the same copy already kept.

    Raises:
        OSError: the quarantine directory or the move/copy failed (the file is untouched).
    """
    qdir = directory / QUARANTINE_DIR
    if not qdir.is_dir():
        make_dirs(qdir)
        fsync_path(directory)
    *taken, target = _names(directory, path)
    if copy:
        data = path.read_bytes()  # a WAL file: bounded by its rotation, a few MB
        if any(kept.read_bytes() == data for kept in taken):
            return None
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data)
        private(tmp)
        fsync_path(tmp)
        os.replace(tmp, target)
    else:
        private(path)  # a file dropped in by someone else is kept private too
        os.replace(path, target)
        fsync_path(path.parent)
    fsync_path(qdir)
    log.error(
        "history.file_quarantined",
        path=str(path),
        kept_as=str(target),
        reason=reason,
        copied=copy,
    )
    return target
