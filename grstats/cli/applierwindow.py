"""`grstats applier --explain --since`: the verdict over a recent window, from the history.

Strategy: replication_applier_metrics are totals since the applier started,
so shares judged on them describe its whole life ("active 28406670 s"), not
the last hour.  A window's figures are the increase from an earlier
reading: each member's last history sample with counters at or before
`now - since` (the history keeps the group_replication_applier channel's
counters, on the last sample of each 10 s window), read from
the at most two UTC-date partitions that can hold it, applier columns only.
`core.applier_verdict.explain(current, previous)` judges the increase (a
reset inside the window: the totals).

Invariants: reads are bounded (two dates of one member set, a dozen
columns); a member without a sample that old gets no earlier reading and is
judged since the applier started, and the output says so.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from pathlib import Path

from grstats.core.columns import APPLIER_METRICS
from grstats.core.explain.applier import WINDOW_CHANNEL

__all__ = ["WINDOW_CHANNEL", "earlier_readings", "parse_since"]

_SINCE = re.compile(r"^(\d+)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
#: history column -> the replication_applier_metrics column it records
_METRIC_OF: Mapping[str, str] = {
    str(c.history): c.name
    for c in APPLIER_METRICS.columns
    if c.history is not None and c.kind == "counter"
}


def parse_since(text: str) -> float | None:
    """Seconds of a window written `30m`, `1h`, `2d`; None for `start`.

    Args:
        text: the --since value.

    Returns:
        The window in seconds, or None: since the applier started.

    Raises:
        ValueError: neither `start` nor a positive count with a unit s, m, h or d.
    """
    if text == "start":
        return None
    match = _SINCE.match(text)
    if match is None or int(match[1]) == 0:
        raise ValueError(f"expected start or a duration like 30m, 1h, 2d; got {text!r}")
    return float(int(match[1]) * _UNIT_S[match[2]])


def earlier_readings(history: Path, at: dt.datetime) -> dict[str, dict[str, object]]:
    """Each member's applier counters in its last history sample at or before `at`.

    Args:
        history: the history root (group=*/date=*/part-*.parquet, and wal/).
        at: the start of the window (aware).

    Returns:
        member id -> {replication_applier_metrics column: value, "sampled_at": datetime};
        members without a sample that old are absent.
    """
    # pyarrow only when a window is asked for: every other command starts without it
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415
    import pyarrow.parquet as pq  # noqa: PLC0415

    from grstats.history.parquet import partitions, replaced_by_compaction  # noqa: PLC0415
    from grstats.history.tail import WalTail  # noqa: PLC0415

    dates = {at.astimezone(dt.UTC).date().isoformat()}
    dates.add((at.astimezone(dt.UTC).date() - dt.timedelta(days=1)).isoformat())
    wanted = ["member_id", "sampled_at", *_METRIC_OF]
    found: dict[str, dict[str, object]] = {}
    latest: dict[str, dt.datetime] = {}
    tables: list[pa.Table] = []
    for partition in partitions(history):
        if partition.name.removeprefix("date=") not in dates:
            continue
        files = sorted(partition.glob("part-*.parquet"))
        replaced = replaced_by_compaction(files)
        tables.extend(
            pq.read_table(path, columns=wanted) for path in files if path.name not in replaced
        )
    # the rows of the last flush interval are still in the write-ahead log (a copy in
    # both while a flush runs is harmless: the latest reading is kept)
    tables.append(WalTail(history).table().select(wanted))
    for table in tables:
        limit = pa.scalar(at, table.schema.field("sampled_at").type)
        # a reading has counters: the history keeps them on one sample of each 10 s
        # window (history.cadence), the others hold NULL
        known = functools.reduce(pc.or_, (pc.is_valid(table[n]) for n in _METRIC_OF))
        at_or_before = pc.less_equal(table["sampled_at"], limit)
        for row in table.filter(pc.and_(at_or_before, known)).to_pylist():
            member, sampled = str(row["member_id"]), row["sampled_at"]
            if member not in latest or sampled > latest[member]:
                latest[member] = sampled
                found[member] = {
                    "sampled_at": sampled,
                    **{_METRIC_OF[name]: row[name] for name in _METRIC_OF},
                }
    return found
