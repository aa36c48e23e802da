"""Write-time de-duplication: the newest seq written per (group, member, incarnation).

Strategy: a collector restart gets the retained (and QoS 1 unacknowledged)
samples again; they must not be written twice.  A sample's identity is
(group, member, incarnation, seq) and a member's seq only grows within an
incarnation, so it is enough to remember, per (member, incarnation), the
highest seq already written -- per (group, UTC date) partition, because that
is where the earlier copy must be.  A partition's marks are read lazily from
its Parquet files (three columns only) the first time a row of it arrives,
so a restart costs one small read per partition it actually receives, and a
retained sample from days ago is caught as well as today's.  Only this
writer's files (and files without a writer id) are read: another writer on
the tree (a collector of the same shared group) writes seqs this one has not
seen yet, and taking its marks would drop this writer's older, still
unwritten samples as duplicates.  Copies across writers are the rollup's to
drop (on the same key).

Invariants:
- A row is a duplicate iff its seq is <= the mark of its (member,
  incarnation) in its partition (a late, out-of-order row counts as one too).
- Marks of rows not yet durable are tentative: `commit()` after the fsync,
  `rollback()` when the write failed (the rows are retried, not duplicates).
- Marks of rows only in the WAL (not yet in Parquet) are never evicted:
  `trim()` is called only when every WAL file is in segments.  Bound: the
  partitions touched since the last segment write, plus `max_partitions`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from grstats.core.records import HistoryRow
from grstats.history.rowcheck import partition_dir

if TYPE_CHECKING:  # pyarrow only where marks are read (grstats.history.offload)
    import pyarrow as pa

__all__ = ["MarksReader", "SeenIndex", "read_marks"]

_US_PER_DAY = 86_400_000_000
_COLUMNS = ["member_id", "incarnation", "seq"]
_RELIST_ATTEMPTS = 3  # compaction may delete files between the listing and the read
_WRITER_TAG = re.compile(r"part-\d{16}-(w[0-9a-f]{10})-")  # as parquet/housekeeping name files

_Partition: TypeAlias = tuple[str, int]
_Marks: TypeAlias = dict[tuple[str, int], int]
_OnCorrupt: TypeAlias = Callable[[Path, str], None] | None
# reads the marks of several partition directories at once (in a child process)
MarksReader: TypeAlias = Callable[[list[Path]], dict[Path, _Marks]]


class SeenIndex:
    """The highest seq written per (member, incarnation), per partition.

    Args:
        directory: the history root.
        max_partitions: partitions kept after `trim()` (most recently used).
        writer: the writer id whose files hold the marks ("" reads every file).
        on_corrupt: called with a file that cannot be read and why; it must
            move the file out of the partition (quarantine).  None: raise.
        reader: reads the marks of partitions that have files of this writer
            (the offloaded writer's child process); None: read here.
    """

    def __init__(
        self,
        directory: Path,
        max_partitions: int = 16,
        writer: str = "",
        on_corrupt: Callable[[Path, str], None] | None = None,
        reader: MarksReader | None = None,
    ) -> None:
        self.directory = directory
        self.reader = reader
        self.on_corrupt = on_corrupt
        self.writer = writer
        self.max_partitions = max_partitions
        self._marks: OrderedDict[_Partition, _Marks] = OrderedDict()
        self._tentative: dict[_Partition, _Marks] = {}

    def admit(self, row: HistoryRow) -> bool:
        """Whether `row` is new; if so, mark it tentatively.

        Args:
            row: a valid row (its values fit the schema).

        Returns:
            False for a duplicate.

        Raises:
            OSError: the partition's files could not be read.
        """
        part = (row.group_name, row.sampled_at // _US_PER_DAY)
        marks = self._load(part)
        key = (row.member_id, row.incarnation)
        tentative = self._tentative.setdefault(part, {})
        best = max(marks.get(key, 0), tentative.get(key, 0))
        if row.seq <= best:
            return False
        tentative[key] = row.seq
        return True

    def commit(self) -> None:
        """The tentatively marked rows are durable."""
        for part, tentative in self._tentative.items():
            marks = self._load(part)
            for key, seq in tentative.items():
                marks[key] = max(marks.get(key, 0), seq)
        self._tentative.clear()

    def rollback(self) -> None:
        """The tentatively marked rows were not written."""
        self._tentative.clear()

    def note(self, rows: list[HistoryRow]) -> None:
        """Mark rows durable elsewhere (a WAL file whose segments are not written yet).

        Args:
            rows: valid rows.
        """
        for row in rows:
            self.admit(row)
        self.commit()

    def trim(self) -> None:
        """Forget the least recently used partitions beyond the bound (all are in Parquet)."""
        while len(self._marks) > self.max_partitions:
            self._marks.popitem(last=False)

    def preload(self, rows: list[HistoryRow]) -> None:
        """Read the marks of every partition of `rows` not known yet, in one go.

        Raises:
            OSError: a partition's files could not be read.
        """
        if self.reader is None:
            return
        parts = {(r.group_name, r.sampled_at // _US_PER_DAY) for r in rows} - self._marks.keys()
        paths = {self._path(part): part for part in parts}
        with_files = [path for path in paths if _files(path, self.writer)]
        read = self.reader(with_files) if with_files else {}
        for path, part in paths.items():
            self._marks[part] = read.get(path, {})

    def _path(self, part: _Partition) -> Path:
        group, day_number = part
        return partition_dir(
            self.directory, group, dt.date(1970, 1, 1) + dt.timedelta(days=day_number)
        )

    def _load(self, part: _Partition) -> _Marks:
        marks = self._marks.get(part)
        if marks is not None:
            self._marks.move_to_end(part)
            return marks
        path = self._path(part)
        if self.reader is None:
            marks = read_marks(path, self.writer, self.on_corrupt)
        else:  # a partition `preload` did not see (a replayed WAL's rows)
            marks = self.reader([path]).get(path, {}) if _files(path, self.writer) else {}
        self._marks[part] = marks
        return marks


def _files(partition: Path, writer: str) -> list[Path]:
    files = list(partition.glob("part-*.parquet"))
    if not writer:
        return files
    return [p for p in files if (owner := _WRITER_TAG.match(p.name)) is None or owner[1] == writer]


def _read(path: Path, on_corrupt: _OnCorrupt) -> pa.Table | None:
    import pyarrow as pa  # noqa: PLC0415 - pyarrow only where marks are read
    import pyarrow.parquet as pq  # noqa: PLC0415

    from grstats.history.parquet import is_corrupt  # noqa: PLC0415

    try:
        return pq.read_table(path, columns=_COLUMNS)
    except (pa.ArrowException, OSError) as exc:
        if on_corrupt is None or isinstance(exc, FileNotFoundError) or not is_corrupt(exc):
            raise
        # A damaged file must not stop the writing (its marks are lost: at worst a
        # redelivered sample of it is written again, which the rollup drops by key).
        on_corrupt(path, str(exc))
        return None


def _read_columns(partition: Path, writer: str, on_corrupt: _OnCorrupt) -> list[pa.Table]:
    for attempt in range(_RELIST_ATTEMPTS):
        try:
            tables = (_read(p, on_corrupt) for p in _files(partition, writer))
            return [t for t in tables if t is not None]
        except FileNotFoundError:
            if attempt == _RELIST_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def read_marks(partition: Path, writer: str, on_corrupt: _OnCorrupt) -> _Marks:
    """The highest seq per (member, incarnation) in `writer`'s files of one partition."""
    # inputs replaced by a compaction hold the same rows as their compacted file: harmless
    tables = _read_columns(partition, writer, on_corrupt)
    if not tables:
        return {}
    import pyarrow as pa  # noqa: PLC0415 - pyarrow only where marks are read

    table = pa.concat_tables(tables)
    grouped = table.group_by(["member_id", "incarnation"]).aggregate([("seq", "max")])
    return {
        (member, incarnation): seq
        for member, incarnation, seq in zip(
            grouped["member_id"].to_pylist(),
            grouped["incarnation"].to_pylist(),
            grouped["seq_max"].to_pylist(),
            strict=True,
        )
    }
