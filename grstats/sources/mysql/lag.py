"""Replication lag by stage from performance_schema rows (WL#7374): the mysql source's part.

Strategy / invariants
---------------------
Pure: SQL texts and row -> `ChannelLag` conversion, no driver, no I/O (the
queries run in mysql.py, the only asyncmy importer). Four tables are read
whole (every channel: they are four of the WL#3656 channel tables, channels.py)
and the rows of group_replication_applier and group_replication_recovery kept
(``SELECT *``, columns matched by name, so a server without the WL#7374
columns -- 5.7 -- yields None/"" for them, never an error):

- replication_connection_status: SERVICE_STATE (receiver), LAST_QUEUED_* and
  QUEUEING_* with START_QUEUE / END_QUEUE;
- replication_applier_status: SERVICE_STATE of the applier (SQL/coordinator
  thread);
- replication_applier_status_by_coordinator: LAST_PROCESSED_* and
  PROCESSING_* with START_BUFFER / END_BUFFER (no row on a single-threaded
  applier: both stay empty);
- replication_applier_status_by_worker: one row per worker (a single-threaded
  applier shows its one thread), LAST_APPLIED_* and APPLYING_* with
  START_APPLY / END_APPLY.

Picks: `last_applied` is the worker whose last applied transaction ended
last (MySQL Shell's "latest_w": ORDER BY
LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP DESC LIMIT 1,
mysqlshdk/libs/mysql/replication.cc); `applying` is, among busy workers
(APPLYING_TRANSACTION not empty), the one with the oldest immediate commit --
the one that has been waiting longest. The recovery channel is shown only
while the member is RECOVERING (its rows stay behind afterwards, stale).

Timestamps: the columns are TIMESTAMP(6), which MySQL shows in the *session*
time zone (WL#7374: "converted to the user timezone when displayed"); the
source sets the session's time_zone to '+00:00' (`SQL_UTC_SESSION`) before it
reads them, so a naive value is UTC here and never goes through the local
clock's zone. MySQL's all-zero "none" ('0000-00-00 00:00:00.000000', which the
driver hands over as a string) is None, as are NULL and unparsable values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from grstats.core import columns as col
from grstats.core.columns import CHANNEL_NAME
from grstats.core.lag import APPLIER_CHANNEL, RECOVERY_CHANNEL, ChannelLag, StageTrx
from grstats.sources.mysql.channels import select_all
from grstats.sources.mysql.values import Result

__all__ = [
    "SQL_APPLIER",
    "SQL_CONNECTION",
    "SQL_COORDINATOR",
    "SQL_UTC_SESSION",
    "SQL_WORKERS",
    "build_lag",
    "timestamp_us",
]

Row = Mapping[str, Any]

_GR_CHANNELS = (APPLIER_CHANNEL, RECOVERY_CHANNEL)
SQL_UTC_SESSION = "SET @@session.time_zone = '+00:00'"
# Every channel: these four are also four of the six WL#3656 channel tables
# (channels.py); the lag keeps the GR channels' rows (build_lag, gr_channels_only).
SQL_CONNECTION = select_all(col.CONNECTION_STATUS)
SQL_APPLIER = select_all(col.APPLIER_STATUS)
SQL_COORDINATOR = select_all(col.APPLIER_STATUS_BY_COORDINATOR)
SQL_WORKERS = select_all(col.APPLIER_STATUS_BY_WORKER)

_EPOCH = datetime(1970, 1, 1)
_ONE_US = timedelta(microseconds=1)
_TIMESTAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_GTID_MAX = 90  # CHAR(90) in P_S from 8.4 (a tagged GTID is up to 89 characters)


def timestamp_us(value: Any) -> int | None:
    """A TIMESTAMP(6) value read in a '+00:00' session, as µs since the epoch (UTC).

    Args:
        value: what the driver returned: a naive datetime (UTC), an aware
            datetime, a string or bytes ('YYYY-MM-DD HH:MM:SS[.ffffff]'), or None.

    Returns:
        Microseconds since the epoch; None for NULL, MySQL's all-zero "none",
        anything at or before the epoch, and anything unparsable.
    """
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("ascii", "replace")
    if isinstance(value, str):
        match = _TIMESTAMP.fullmatch(value.strip())
        if match is None:
            return None
        year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
        fraction = int((match.group(7) or "").ljust(6, "0"))
        try:
            value = datetime(year, month, day, hour, minute, second, fraction)
        except ValueError:  # the all-zero "none", or no such date
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    us = (value - _EPOCH) // _ONE_US
    return us if us > 0 else None


def _gtid(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", "replace")
    return _CONTROL.sub("", str(value)).strip()[:_GTID_MAX]


def _stage(row: Row, prefix: str, start: str, end: str | None) -> StageTrx:
    """One transaction's columns: PREFIX, PREFIX_ORIGINAL/IMMEDIATE_COMMIT_TIMESTAMP,
    PREFIX_<start>_TIMESTAMP and, for a finished stage, PREFIX_<end>_TIMESTAMP."""
    stage = StageTrx(
        gtid=_gtid(row.get(prefix)),
        original_commit_us=timestamp_us(row.get(f"{prefix}_ORIGINAL_COMMIT_TIMESTAMP")),
        immediate_commit_us=timestamp_us(row.get(f"{prefix}_IMMEDIATE_COMMIT_TIMESTAMP")),
        start_us=timestamp_us(row.get(f"{prefix}_{start}_TIMESTAMP")),
        end_us=None if end is None else timestamp_us(row.get(f"{prefix}_{end}_TIMESTAMP")),
    )
    return stage


def _on(row: Row | None) -> bool | None:
    if row is None or row.get("SERVICE_STATE") is None:
        return None
    return _gtid(row.get("SERVICE_STATE")).upper() == "ON"


def _worker_id(row: Row) -> int:
    try:
        return int(row.get("WORKER_ID") or 0)
    except (TypeError, ValueError):
        return 0


def _channel(
    name: str,
    connection: Row | None,
    applier: Row | None,
    coordinator: Row | None,
    workers: Sequence[Row],
) -> ChannelLag:
    applier_on = _on(applier)
    if applier_on is None:
        applier_on = _on(coordinator)
    if applier_on is None and workers:
        states = [_on(w) for w in workers]
        applier_on = None if None in states else any(states)
    applied = [
        (_stage(w, col.LAST_APPLIED_TRANSACTION, "START_APPLY", "END_APPLY"), _worker_id(w))
        for w in workers
    ]
    applied = [(t, i) for t, i in applied if t.gtid]
    busy = [
        (_stage(w, col.APPLYING_TRANSACTION, "START_APPLY", None), _worker_id(w)) for w in workers
    ]
    busy = [(t, i) for t, i in busy if t.gtid]
    never = 1 << 62
    last_applied = max(
        applied,
        key=lambda ti: (-1 if ti[0].end_us is None else ti[0].end_us, ti[1]),
        default=(StageTrx(), 0),
    )[0]
    applying = min(
        busy,
        key=lambda ti: (
            never if ti[0].immediate_commit_us is None else ti[0].immediate_commit_us,
            never if ti[0].start_us is None else ti[0].start_us,
            ti[1],
        ),
        default=(StageTrx(), 0),
    )[0]
    conn: Row = connection or {}
    coord: Row = coordinator or {}
    return ChannelLag(
        channel=name,
        receiver_on=_on(connection),
        applier_on=applier_on,
        last_queued=_stage(conn, col.LAST_QUEUED_TRANSACTION, "START_QUEUE", "END_QUEUE"),
        queueing=_stage(conn, "QUEUEING_TRANSACTION", "START_QUEUE", None),
        last_processed=_stage(coord, col.LAST_PROCESSED_TRANSACTION, "START_BUFFER", "END_BUFFER"),
        processing=_stage(coord, "PROCESSING_TRANSACTION", "START_BUFFER", None),
        last_applied=last_applied,
        applying=applying,
        workers=len(workers),
        busy_workers=len(busy),
    )


def gr_channels_only(result: Result | None) -> Result | None:
    """`result` with only the GR channels' rows (group_replication_applier, _recovery)."""
    if result is None:
        return None
    names, rows = result
    upper = [str(n).upper() for n in names]
    if CHANNEL_NAME not in upper:
        return result
    at = upper.index(CHANNEL_NAME)
    return names, [r for r in rows if _gtid(r[at]) in _GR_CHANNELS]


def build_lag(
    member_state: str,
    connection: Sequence[Row],
    applier: Sequence[Row],
    coordinator: Sequence[Row],
    workers: Sequence[Row],
) -> tuple[ChannelLag, ...]:
    """The local member's channels from the four tables' rows (names upper-case).

    Args:
        member_state: the local MEMBER_STATE (the recovery channel counts only
            while RECOVERING).
        connection, applier, coordinator, workers: the rows of
            replication_connection_status, replication_applier_status,
            replication_applier_status_by_coordinator and
            replication_applier_status_by_worker ([] when a table is absent).

    Returns:
        The applier channel, then the recovery channel while RECOVERING; a
        channel no table shows a row for is left out (GR never configured: ()).
    """
    wanted = [APPLIER_CHANNEL] + ([RECOVERY_CHANNEL] if member_state == "RECOVERING" else [])
    out = []
    for name in wanted:

        def mine(rows: Sequence[Row], name: str = name) -> list[Row]:
            return [r for r in rows if _gtid(r.get(CHANNEL_NAME)) == name]

        conn, appl, coord, work = mine(connection), mine(applier), mine(coordinator), mine(workers)
        if not (conn or appl or coord or work):
            continue
        out.append(
            _channel(
                name,
                conn[0] if conn else None,
                appl[0] if appl else None,
                coord[0] if coord else None,
                sorted(work, key=_worker_id),
            )
        )
    return tuple(out)
