"""Crash-safe history: write-ahead log, then Parquet segments, then housekeeping.

Modules import pyarrow; the daemon imports this package only when history is
configured.
"""
