"""Issue 39 row 11: history files are 0640 and its directories 0750, whatever the umask.

Strategy: the process's umask is set to 000 (the worst an operator's shell or
a unit without UMask= can give), then a real `HistoryWriter` creates the
history from nothing: the WAL, a Parquet segment from a flush, and the
quarantine (a damaged WAL file copied there, a file of an unknown format
moved there). Every file and directory below the history root, the root
included, is then checked by hand against the two modes.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from grstats.history.wal import WAL_MAGIC, encode_record
from tests.fixtures.daemons import wait_for
from tests.fixtures.history_faults import fast_writer
from tests.grstats.history.rows import sample_row

pytestmark = pytest.mark.faults


@pytest.fixture
def open_umask() -> Iterator[None]:
    before = os.umask(0)
    try:
        yield
    finally:
        os.umask(before)


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in sorted(root.rglob("*")):
        out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


@pytest.mark.usefixtures("open_umask")
async def test_wal_parquet_and_quarantine_are_private_under_umask_000(tmp_path: Path) -> None:
    root = tmp_path / "history"
    writer = fast_writer(root)
    await writer.start()
    for seq in (1, 2, 3):
        writer.record(sample_row(seq))
    await writer.flush()  # a Parquet segment, its partition directories
    writer.record(sample_row(4))
    # the writer's thread opens the next WAL file: wait for it in a thread, with a deadline
    await asyncio.to_thread(wait_for, lambda: list((root / "wal").glob("wal-*")), 30, "a WAL file")
    live_wal = {
        f"wal/{p.name}": stat.S_IMODE(p.stat().st_mode) for p in (root / "wal").glob("wal-*")
    }  # the open WAL file (the close segments it)
    await writer.close()

    records = [encode_record(sample_row(seq)) for seq in (5, 6, 7)]
    bad = bytearray(records[1])
    bad[-3] ^= 0xFF  # copied to the quarantine, its good records segmented
    wal = root / "wal"
    (wal / "wal-000000000009-aa.log").write_bytes(WAL_MAGIC + records[0] + bad + records[2])
    (wal / "wal-000000000010-ab.log").write_bytes(b"GRSWAL9\n" + b"\x01" * 40)  # moved there
    writer = fast_writer(root)
    await writer.start()
    await writer.close()

    modes = {**live_wal, **_modes(root)}
    assert any(name.startswith("quarantine/") for name in modes), modes
    assert any(name.endswith(".parquet") for name in modes), modes
    assert any(name.startswith("wal/wal-") for name in modes), modes
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o750 if (root / name).is_dir() else 0o640)
    }
    assert wrong == {}
