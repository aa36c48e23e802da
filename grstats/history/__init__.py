"""Crash-safe history: write-ahead log, then Parquet segments, then housekeeping.

Modules (each imports only the standard library, pyarrow, msgpack, structlog
and `grstats.core`):
- `writer`: `HistoryWriter`, the thread that owns the files, flush, close, health.
- `buffer`: the bounded buffer of recorded rows (drops counted).
- `phase`: one step of the writer's thread: its fault, backoff, rate-limited log.
- `journal`: one writer's WAL files -> Parquet segments (no threads, no retries),
  its lock.
- `wal`: WAL record codec, torn-tail repair, the one open WAL file, names.
- `dedupe`: the newest seq written per (group, member, incarnation).
- `parquet`: schema, value ranges, segment layout and format, atomic writes, reading.
- `housekeeping`: retention by age and compaction of finished days.
- `stats`: typed counters, health, rate-limited logging.
- `fileops`: the OS-call boundary (where tests inject ENOSPC).

The daemon imports this package only when history is configured; pyarrow is
loaded only where Parquet is read or written (`offload`: in a child process).
The names below load their module when first used (see `_MODULE_OF`).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grstats.history.fileops import FileOps
    from grstats.history.parquet import history_schema, read_history, rows_to_table, write_segments
    from grstats.history.stats import DropCounts, HistoryFigures, HistoryHealth
    from grstats.history.wal import WAL_MAGIC, WalScan, encode_record, repair_wal, scan_wal
    from grstats.history.writer import HistoryError, HistoryWriter

__all__ = [
    "WAL_MAGIC",
    "DropCounts",
    "FileOps",
    "HistoryError",
    "HistoryFigures",
    "HistoryHealth",
    "HistoryWriter",
    "WalScan",
    "encode_record",
    "history_schema",
    "read_history",
    "repair_wal",
    "rows_to_table",
    "scan_wal",
    "write_segments",
]

# Each name loads its module when first asked for: the Parquet ones load pyarrow
# (the daemon never asks), and the history's short-lived child, which imports
# this package for its Parquet step, does not load the writer's side.
_MODULE_OF = {
    "FileOps": "fileops",
    "DropCounts": "stats",
    "HistoryFigures": "stats",
    "HistoryHealth": "stats",
    "WAL_MAGIC": "wal",
    "WalScan": "wal",
    "encode_record": "wal",
    "repair_wal": "wal",
    "scan_wal": "wal",
    "HistoryError": "writer",
    "HistoryWriter": "writer",
    "history_schema": "parquet",
    "read_history": "parquet",
    "rows_to_table": "parquet",
    "write_segments": "parquet",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_MODULE_OF[name]}")
    return getattr(module, name)
