"""The modes of what the history creates: files 0640, directories 0750, whatever the umask.

Strategy: a history holds every member's figures and GTID sets; a unit
without `UMask=` or an operator's shell (umask 022, even 000) must not make
it world-readable. Modes given to `open`/`mkdir` are masked by the umask, so
each file and directory the history creates is set explicitly once created
(`fchmod` on the open descriptor, `chmod` before a rename makes a file
visible). Directories that existed before are the operator's: left as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "make_dirs", "private"]

FILE_MODE = 0o640  # owner writes, the group (a reader's account) reads, nobody else
DIR_MODE = 0o750


def make_dirs(path: Path) -> None:
    """`mkdir -p path`, each directory it creates set to DIR_MODE."""
    missing: list[Path] = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by another writer: its mode is its creator's
        os.chmod(d, DIR_MODE)


def private(target: int | Path) -> None:
    """Set a file the history created (a descriptor or a path) to FILE_MODE."""
    if isinstance(target, int):
        os.fchmod(target, FILE_MODE)
    else:
        os.chmod(target, FILE_MODE)
