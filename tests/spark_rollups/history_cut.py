"""Test helper: a simulated history cut to the minutes around every hour (or some hours).

A whole simulated day is 86,400 samples a member; the tests of run semantics
and of cluster against local mode need every hour and every date of it (the
hour and day buckets, the midnight between two days), not every second.  The
cut keeps each file apart (same relative path, same rows otherwise), so that
a history's files, duplicates and all, stay what they were.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

AROUND_THE_HOUR = (58, 59, 0, 1, 2)  # minutes of the hour kept: hh:58:00 .. hh+1:02:59
MINUTE_US = 60_000_000


def cut_around_the_hour(history: Path, out: Path, *, hours: Collection[int] | None = None) -> Path:
    """Write every `part-*.parquet` of `history` under `out`, only the kept minutes.

    Args:
        history: the history root to read.
        out: where the cut files go (same relative paths).
        hours: keep only the minutes around these full hours (UTC, 0..23: 10 keeps
            09:58:00 .. 10:02:59); None = around every hour.
    """
    for source in sorted(history.rglob("part-*.parquet")):
        table = pq.read_table(source)
        minutes = pc.cast(table["sampled_at"], pa.int64()).to_numpy() // MINUTE_US
        keep = np.isin(minutes % 60, AROUND_THE_HOUR)
        if hours is not None:  # the full hour a kept minute is around: hh:58 -> hh+1
            keep &= np.isin((minutes + 2) // 60 % 24, list(hours))
        target = out / source.relative_to(history)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.filter(pa.array(keep)), target)
    return out
