"""Applier metrics (WL#15620) from performance_schema rows: the mysql source's part.

Strategy / invariants
---------------------
Pure: SQL texts and rows -> `MemberApplier`, no driver, no I/O (the queries
run in mysql.py, the only asyncmy importer).

- A server with WL#15620 (9.1 Enterprise with component_replication_applier_metrics,
  every edition from 9.7): `replication_applier_metrics` and
  `replication_applier_progress_by_worker` are read with ``SELECT *`` and
  matched by column name; the source is "native" and every figure is MySQL's.
  LAST_APPLIER_START is read in the source's '+00:00' session (see lag.py).
- A server without them (the SELECT is refused, ER_NO_SUCH_TABLE): "derived".
  Only what the 8.0 tables tell honestly is filled, the rest is None (NULL):
  per channel of replication_applier_status_by_worker,
  TRANSACTIONS_ONGOING_COUNT = workers whose APPLYING_TRANSACTION is not
  empty; for group_replication_applier, TRANSACTIONS_PENDING_COUNT =
  COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE of the member's stats row
  (transactions certified and waiting in that channel's relay log). Per
  worker: WORKER_ID and THREAD_ID, ONGOING_TRANSACTION_TYPE 'UNASSIGNED' and
  sizes 0 for an idle worker (that much is known), NULL type and sizes for a
  busy one (8.0 does not say DML or DDL, nor how big).
- Only the Group Replication channels are read (as for the lag).
- A value that is not a non-negative integer (a driver surprise) is None,
  never an error: one odd cell must not lose the sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grstats.core import columns as col
from grstats.core.applier import DERIVED, NATIVE, ApplierChannel, ApplierWorker, MemberApplier
from grstats.core.applierrows import CHANNEL_COLUMNS
from grstats.core.lag import APPLIER_CHANNEL, RECOVERY_CHANNEL
from grstats.sources.mysql.lag import timestamp_us

__all__ = ["SQL_METRICS", "SQL_PROGRESS", "build_derived", "build_native"]

Row = Mapping[str, Any]

_CHANNELS = f"('{APPLIER_CHANNEL}', '{RECOVERY_CHANNEL}')"
SQL_METRICS = (
    "SELECT * FROM performance_schema.replication_applier_metrics"
    f" WHERE CHANNEL_NAME IN {_CHANNELS}"
)
SQL_PROGRESS = (
    "SELECT * FROM performance_schema.replication_applier_progress_by_worker"
    f" WHERE CHANNEL_NAME IN {_CHANNELS}"
)
_MAX = (1 << 63) - 1
_TYPES = ("UNASSIGNED", "DML", "DDL")


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("ascii", "replace")
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit():
            return None
        value = int(value)
    if isinstance(value, int) and 0 <= value <= _MAX:
        return value
    return None


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def _worker(row: Row) -> ApplierWorker | None:
    worker_id = _count(row.get(col.WORKER_ID))
    if worker_id is None or worker_id > 0xFFFFFFFF:
        return None
    kind = _text(row.get(col.ONGOING_TRANSACTION_TYPE)).upper()
    return ApplierWorker(
        channel=_text(row.get(col.CHANNEL_NAME)),
        worker_id=worker_id,
        thread_id=_count(row.get(col.THREAD_ID)),
        transaction_type=kind if kind in _TYPES else None,
        full_bytes=_count(row.get(col.ONGOING_TRANSACTION_FULL_SIZE_BYTES)),
        applied_bytes=_count(row.get(col.ONGOING_TRANSACTION_APPLIED_SIZE_BYTES)),
    )


def build_native(at_us: int, metrics: Sequence[Row], progress: Sequence[Row]) -> MemberApplier:
    """The applier metrics of a server with the WL#15620 tables.

    Args:
        at_us: when the rows were read.
        metrics: replication_applier_metrics rows (column name -> cell).
        progress: replication_applier_progress_by_worker rows.
    """
    channels = []
    for row in metrics:
        name = _text(row.get(col.CHANNEL_NAME))
        if not name:
            continue
        figures = {field: _count(row.get(column)) for field, column in CHANNEL_COLUMNS}
        channels.append(
            ApplierChannel(
                channel=name,
                last_start_us=timestamp_us(row.get(col.LAST_APPLIER_START)),
                **figures,
            )
        )
    workers = [w for w in (_worker(r) for r in progress) if w is not None and w.channel]
    return MemberApplier(at_us, NATIVE, tuple(channels), tuple(workers))


def build_derived(
    at_us: int, by_worker: Sequence[Row], applier_queue: int | None
) -> MemberApplier | None:
    """What a pre-WL#15620 server tells: ongoing per channel, pending of the GR applier.

    None when it tells nothing (no worker rows: no GR channel applier).

    Args:
        at_us: when the rows were read.
        by_worker: replication_applier_status_by_worker rows of the GR channels.
        applier_queue: COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE (None: unknown).
    """
    ongoing: dict[str, int] = {}
    workers = []
    for row in by_worker:
        channel = _text(row.get(col.CHANNEL_NAME))
        worker_id = _count(row.get(col.WORKER_ID))
        if not channel or worker_id is None or worker_id > 0xFFFFFFFF:
            continue
        busy = bool(_text(row.get(col.APPLYING_TRANSACTION)))
        ongoing[channel] = ongoing.get(channel, 0) + busy
        workers.append(
            ApplierWorker(
                channel=channel,
                worker_id=worker_id,
                thread_id=_count(row.get(col.THREAD_ID)),
                transaction_type=None if busy else "UNASSIGNED",
                full_bytes=None if busy else 0,
                applied_bytes=None if busy else 0,
            )
        )
    channels = tuple(
        ApplierChannel(
            channel=name,
            ongoing=count,
            pending=applier_queue if name == APPLIER_CHANNEL else None,
        )
        for name, count in sorted(ongoing.items())
    )
    if not channels:
        return None
    return MemberApplier(at_us, DERIVED, channels, tuple(workers))
