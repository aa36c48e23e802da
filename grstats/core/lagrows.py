"""Rows of `grstats_member_lag`: WL#7374's stage columns plus the derived lags.

Strategy: one row per member and channel, from that member's `MemberLag`
(the local source's sample, or a remote member's last `ext.lag`). The derived
figures are pure functions of those values and of the instant the member read
them (`MemberLag.at_us`, its own clock) -- never of the receiver's clock, so
every daemon shows the same figures for a member.

REPLICATION_LAG follows MySQL Shell's `cluster.status()` replicationLag
(mysql-shell `modules/adminapi/cluster/status.cc`, `k_calculate_lag_query`,
8.0.x-8.4/9.x, unchanged since its introduction): over the
`group_replication_applier` channel's workers,
1. the receiver (`replication_connection_status`) or the coordinator
   (`..._by_coordinator`) SERVICE_STATE is OFF -> NULL;
2. else, the worker chosen is the busy one applying the transaction with the
   oldest APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP, idle workers last;
   a worker is idle when GTID_SUBTRACT(LAST_QUEUED_TRANSACTION, its
   LAST_APPLIED_TRANSACTION) = '' or its applying immediate commit timestamp
   is 0. Chosen worker idle -> 'applier_queue_applied';
3. else TIMEDIFF(NOW(6), APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP),
   text 'HH:MM:SS.ffffff' (negative with '-', clipped to MySQL's TIME range).
A `ChannelLag` has already picked that worker (`applying`) and the latest
`last_applied`, so the rule reads: nothing queued, nothing applying, or the
last queued transaction already applied -> applied. grstats applies the same
rule to every channel (Shell only asks about the applier channel).

Per-stage seconds: QUEUE_LAG = end_queue - original commit of the last queued
transaction, APPLY_LAG = end_apply - original commit and APPLY_TIME =
end_apply - start_apply of the last applied one; NULL when a term is missing.

Clocks: every lag but APPLY_TIME subtracts a time read on the transaction's
source from one read on this member. CLOCK_OFFSET_SECONDS is the member's
clock minus the daemon's (`core.registry` estimates it; 0 for the local
member) and LAG_WITHIN_CLOCK_OFFSET is 1 when a cross-clock figure is
negative or no larger than the widest clock difference between this member
and any other member of the group (the source of a transaction is one of
them), 0 when every such figure is larger, NULL without figures or offsets.

Timestamps are shown as MySQL shows TIMESTAMP(6): 'YYYY-MM-DD HH:MM:SS.ffffff',
in UTC (members may run in different time zones; the API and CLI show one
time for all), and the all-zero value when there is none (WL#7374 F5).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache

from grstats.core import columns as col
from grstats.core.lag import ChannelLag, MemberLag, StageTrx
from grstats.core.snapshot import Row

ZERO_TIMESTAMP = "0000-00-00 00:00:00.000000"
APPLIER_QUEUE_APPLIED = "applier_queue_applied"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZERO_DATE = "0000-00-00 00:00:00"  # MySQL's zero TIMESTAMP, any precision
_TIME_MAX_US = ((838 * 60 + 59) * 60 + 59) * 1_000_000  # MySQL TIME '838:59:59'


# Every snapshot formats every member's stage timestamps again (and /metrics
# parses them back), but they change only when a member moves on to a new
# transaction: memoised, bounded.
@lru_cache(maxsize=8192)
def format_timestamp(us: int | None, fsp: int = 6) -> str:
    """A µs timestamp as MySQL prints a TIMESTAMP(fsp), in UTC; None: the zero timestamp.

    Args:
        us: microseconds since the epoch, or None.
        fsp: the column's fractional digits (6 for TIMESTAMP(6), 0 for TIMESTAMP).
    """
    text = (
        ZERO_TIMESTAMP
        if us is None
        else (_EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%d %H:%M:%S.%f")
    )
    return text[: 20 + fsp] if fsp else text[:19]


@lru_cache(maxsize=8192)
def parse_timestamp(text: object) -> int | None:
    """The µs of a `format_timestamp` text; None for the zero timestamp or anything else."""
    if not isinstance(text, str) or text.startswith(_ZERO_DATE):
        return None
    try:
        shape = "%Y-%m-%d %H:%M:%S.%f" if len(text) > 19 else "%Y-%m-%d %H:%M:%S"
        when = datetime.strptime(text, shape).replace(tzinfo=UTC)
    except ValueError:
        return None
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def timediff(us: int) -> str:
    """MySQL's TIMEDIFF text for a difference of `us` µs ('-01:02:03.000004'), clipped."""
    sign = "-" if us < 0 else ""
    us = min(abs(us), _TIME_MAX_US)
    seconds, micros = divmod(us, 1_000_000)
    minutes, secs = divmod(seconds, 60)
    hours, mins = divmod(minutes, 60)
    return f"{sign}{hours:02d}:{mins:02d}:{secs:02d}.{micros:06d}"


def _diff_s(end: int | None, start: int | None) -> float | None:
    if end is None or start is None:
        return None
    return (end - start) / 1e6


def replication_lag(channel: ChannelLag, now_us: int) -> tuple[str | None, float | None]:
    """MySQL Shell's replicationLag of one channel (see the module docstring).

    Args:
        channel: the member's channel.
        now_us: Shell's NOW(6): when the member read the figures, its clock.

    Returns:
        (REPLICATION_LAG text or None, REPLICATION_LAG_SECONDS or None):
        (None, None) when a thread is off, ('applier_queue_applied', 0.0) when
        nothing waits, else (TIMEDIFF text, seconds).
    """
    if channel.receiver_on is False or channel.applier_on is False:
        return None, None
    queued = channel.last_queued.gtid
    applying = channel.applying
    if (
        not queued
        or queued == channel.last_applied.gtid
        or not applying.gtid
        or applying.immediate_commit_us is None
    ):
        return APPLIER_QUEUE_APPLIED, 0.0
    lag_us = now_us - applying.immediate_commit_us
    return timediff(lag_us), lag_us / 1e6


# (stage field of ChannelLag, its GTID column, original, immediate, start, end column)
_STAGE_COLUMNS: tuple[tuple[str, str, str, str, str, str | None], ...] = (
    (
        "last_queued",
        col.LAST_QUEUED_TRANSACTION,
        col.LAST_QUEUED_ORIGINAL_COMMIT,
        col.LAST_QUEUED_IMMEDIATE_COMMIT,
        col.LAST_QUEUED_START_QUEUE,
        col.LAST_QUEUED_END_QUEUE,
    ),
    (
        "last_processed",
        col.LAST_PROCESSED_TRANSACTION,
        col.LAST_PROCESSED_ORIGINAL_COMMIT,
        col.LAST_PROCESSED_IMMEDIATE_COMMIT,
        col.LAST_PROCESSED_START_BUFFER,
        col.LAST_PROCESSED_END_BUFFER,
    ),
    (
        "last_applied",
        col.LAST_APPLIED_TRANSACTION,
        col.LAST_APPLIED_ORIGINAL_COMMIT,
        col.LAST_APPLIED_IMMEDIATE_COMMIT,
        col.LAST_APPLIED_START_APPLY,
        col.LAST_APPLIED_END_APPLY,
    ),
    (
        "applying",
        col.APPLYING_TRANSACTION,
        col.APPLYING_ORIGINAL_COMMIT,
        col.APPLYING_IMMEDIATE_COMMIT,
        col.APPLYING_START_APPLY,
        None,
    ),
)


def _stage_cells(channel: ChannelLag) -> dict[str, str]:
    cells: dict[str, str] = {}
    for field, gtid, original, immediate, start, end in _STAGE_COLUMNS:
        s: StageTrx = getattr(channel, field)
        cells[gtid] = s.gtid
        cells[original] = format_timestamp(s.original_commit_us)
        cells[immediate] = format_timestamp(s.immediate_commit_us)
        cells[start] = format_timestamp(s.start_us)
        if end is not None:
            cells[end] = format_timestamp(s.end_us)
    return cells


def within_clock_offset(figures: tuple[float | None, ...], spread_s: float | None) -> int | None:
    """LAG_WITHIN_CLOCK_OFFSET: 1 when clock skew could explain a figure (see module docstring).

    Args:
        figures: the cross-clock lags (None: not known).
        spread_s: the widest clock difference between the member and another; None unknown.

    Returns:
        1, 0, or None when there is no figure or no offset.
    """
    known = [f for f in figures if f is not None]
    if not known or spread_s is None:
        return None
    return 1 if any(f < 0 or abs(f) <= spread_s for f in known) else 0


def lag_rows(
    member_id: str, lag: MemberLag, *, offset_s: float | None, spread_s: float | None
) -> list[Row]:
    """The grstats_member_lag rows of one member.

    Args:
        member_id: the member's server UUID.
        lag: its figures.
        offset_s: its clock minus ours (CLOCK_OFFSET_SECONDS); None unknown.
        spread_s: the widest clock difference between it and another member.

    Returns:
        One row per channel, keyed by the column names in table order.
    """
    rows: list[Row] = []
    for ch in lag.channels:
        text, seconds = replication_lag(ch, lag.at_us)
        queue_lag = _diff_s(ch.last_queued.end_us, ch.last_queued.original_commit_us)
        apply_lag = _diff_s(ch.last_applied.end_us, ch.last_applied.original_commit_us)
        busy_lag = seconds if text not in (None, APPLIER_QUEUE_APPLIED) else None
        values: dict[str, str | int | float | None] = {
            col.MEMBER_ID: member_id,
            col.CHANNEL_NAME: ch.channel,
            col.REPLICATION_LAG: text,
            col.REPLICATION_LAG_SECONDS: seconds,
            col.QUEUE_LAG_SECONDS: queue_lag,
            col.APPLY_LAG_SECONDS: apply_lag,
            col.APPLY_TIME_SECONDS: _diff_s(ch.last_applied.end_us, ch.last_applied.start_us),
            col.CLOCK_OFFSET_SECONDS: offset_s,
            col.LAG_WITHIN_CLOCK_OFFSET: within_clock_offset(
                (busy_lag, queue_lag, apply_lag), spread_s
            ),
        }
        values.update(_stage_cells(ch))
        rows.append({name: values[name] for name in col.MEMBER_LAG.names})
    return rows
