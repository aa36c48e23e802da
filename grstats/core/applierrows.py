"""Rows of `replication_applier_metrics` and `replication_applier_progress_by_worker`.

Strategy: the member's `MemberApplier` (the local sample's or a remote
member's last `ext.applier`) becomes MySQL's rows with MEMBER_ID added as
the first key, column for column: the values are shown as the member's server
reported them (nanoseconds, bytes), NULL where it could not tell.
LAST_APPLIER_START is shown as MySQL prints its TIMESTAMP (whole seconds,
no fraction: MySQL declares it without one), in UTC, NULL when unknown.

Invariants: one row per (member, channel) and per (member, channel, worker);
a value is never invented (None stays NULL).
"""

from __future__ import annotations

from typing import Final

from grstats.core import columns as col
from grstats.core.applier import MemberApplier
from grstats.core.lagrows import format_timestamp
from grstats.core.snapshot import Row

__all__ = ["CHANNEL_COLUMNS", "metrics_rows", "worker_rows"]

#: `protocol.ApplierChannel` field -> column of replication_applier_metrics.
CHANNEL_COLUMNS: Final = (
    ("active_ns", col.TOTAL_ACTIVE_TIME_DURATION),
    ("committed", col.TRANSACTIONS_COMMITTED_COUNT),
    ("ongoing", col.TRANSACTIONS_ONGOING_COUNT),
    ("pending", col.TRANSACTIONS_PENDING_COUNT),
    ("committed_bytes", col.TRANSACTIONS_COMMITTED_SIZE_BYTES_SUM),
    ("ongoing_full_bytes", col.TRANSACTIONS_ONGOING_FULL_SIZE_BYTES_SUM),
    ("ongoing_progress_bytes", col.TRANSACTIONS_ONGOING_PROGRESS_SIZE_BYTES_SUM),
    ("pending_bytes", col.TRANSACTIONS_PENDING_SIZE_BYTES_SUM),
    ("events_committed", col.EVENTS_COMMITTED_COUNT),
    ("waits_for_work_count", col.WAITS_FOR_WORK_FROM_SOURCE_COUNT),
    ("waits_for_work_ns", col.WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME),
    ("waits_for_worker_count", col.WAITS_FOR_AVAILABLE_WORKER_COUNT),
    ("waits_for_worker_ns", col.WAITS_FOR_AVAILABLE_WORKER_SUM_TIME),
    ("waits_dependency_count", col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_COUNT),
    ("waits_dependency_ns", col.WAITS_COMMIT_SCHEDULE_DEPENDENCY_SUM_TIME),
    ("waits_queue_memory_count", col.WAITS_FOR_WORKER_QUEUE_MEMORY_COUNT),
    ("waits_queue_memory_ns", col.WAITS_FOR_WORKER_QUEUE_MEMORY_SUM_TIME),
    ("waits_queues_full_count", col.WAITS_WORKER_QUEUES_FULL_COUNT),
    ("waits_queues_full_ns", col.WAITS_WORKER_QUEUES_FULL_SUM_TIME),
    ("waits_commit_order_count", col.WAITS_DUE_TO_COMMIT_ORDER_COUNT),
    ("waits_commit_order_ns", col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME),
    ("read_relay_log_ns", col.TIME_TO_READ_FROM_RELAY_LOG_SUM_TIME),
)


def metrics_rows(member_id: str, applier: MemberApplier) -> list[Row]:
    """The member's replication_applier_metrics rows, in channel order."""
    rows: list[Row] = []
    for c in sorted(applier.channels, key=lambda c: c.channel):
        row: dict[str, str | int | None] = {col.MEMBER_ID: member_id, col.CHANNEL_NAME: c.channel}
        for field, name in CHANNEL_COLUMNS:
            row[name] = getattr(c, field)
        row[col.LAST_APPLIER_START] = (
            None if c.last_start_us is None else format_timestamp(c.last_start_us, fsp=0)
        )
        rows.append({name: row[name] for name in col.APPLIER_METRICS.names})
    return rows


def worker_rows(member_id: str, applier: MemberApplier) -> list[Row]:
    """The member's replication_applier_progress_by_worker rows, by channel and worker."""
    return [
        {
            col.MEMBER_ID: member_id,
            col.CHANNEL_NAME: w.channel,
            col.WORKER_ID: w.worker_id,
            col.THREAD_ID: w.thread_id,
            col.ONGOING_TRANSACTION_TYPE: w.transaction_type,
            col.ONGOING_TRANSACTION_FULL_SIZE_BYTES: w.full_bytes,
            col.ONGOING_TRANSACTION_APPLIED_SIZE_BYTES: w.applied_bytes,
        }
        for w in sorted(applier.workers, key=lambda w: (w.channel, w.worker_id))
    ]
