"""Crash-safe history: write-ahead log, then Parquet segments, then housekeeping.

Modules (each imports only the standard library, pyarrow, msgpack, structlog
and `grstats.core`):
- `wal`: WAL record codec, torn-tail repair, the one open WAL file.
- `parquet`: schema, segment layout and format, atomic writes, reading.
- `housekeeping`: retention by age and compaction of finished days.
- `stats`: the writer's typed counters.
- `writer`: `HistoryWriter`, the buffer and the thread that owns the files.

The daemon imports this package only when history is configured (pyarrow).
"""

from grstats.history.parquet import history_schema, read_history, rows_to_table, write_segments
from grstats.history.stats import HistoryStats
from grstats.history.wal import WAL_MAGIC, WalScan, encode_record, repair_wal, scan_wal
from grstats.history.writer import HistoryError, HistoryWriter

__all__ = [
    "WAL_MAGIC",
    "HistoryError",
    "HistoryStats",
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
