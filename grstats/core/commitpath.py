"""grstats_member_commit_path rows: where each member's commit time went.

Strategy / invariants
---------------------
Pure: a member's `CommitPathReport`s over its last period (at least a
second; as the member read its own server) -> one row. No clock: the period is the
difference of the reports' own `at_us`.

- Per operation (columns.COMMIT_PATH_OPS) the row shows the count per second
  over the period, the mean time of one (the summed time's growth over the
  count's growth), its share of the commit path and the running total in
  seconds. Every server time sum is in microseconds.
- The share of an operation is its time's growth over the growth of the time
  of all operations in COMMIT_PATH_SHARED (the message round trip contains the
  consensus round, so it is not shared out). DOMINANT names the largest share
  ("" when the period spent no time; NULL before two reports).
- The communication columns are the member's own
  replication_group_communication_information (ext.commit_path_comm), the
  leaders' UUIDs joined by ",", as MySQL shows them; NULL when not shown.
- The same figures over the last minute (columns ending in `_1M`) run from
  the member's minute anchor (`commit_path_minute`: a report about a minute
  old, anchors kept 5 s apart so a member costs at most 13 reports whatever
  its period) to its latest report.
- A counter that went backwards (Group Replication restarted on the member,
  which resets them) or is None in either report gives NULL for that
  operation's period figures, never a negative or invented rate.
"""

from __future__ import annotations

from collections.abc import Mapping

from grstats.core import columns as col
from protocol import CommitPathCounters, CommitPathReport, GroupCommunication

__all__ = ["OP_FIELDS", "commit_path_minute", "commit_path_row", "commit_path_window"]

Cell = str | int | float | None

MIN_PERIOD_US = 1_000_000  # the shortest period rates are shown over
MAX_WINDOW = 16  # reports kept per member (a period of 0.1 s keeps 11)
MINUTE_US = 60_000_000  # the last minute's span
MINUTE_STEP_US = 5_000_000  # anchors of the last minute are this far apart at least
MAX_MINUTE = 16  # anchors kept per member: 60 / 5 + 1 at most, so never reached

#: operation -> (count fields, time fields in microseconds) of CommitPathCounters
OP_FIELDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "CONSENSUS": (("consensus_proposals",), ("consensus_time_us",)),
    "ROUND_TRIP": (("data_messages", "control_messages"), ("data_rtt_us", "control_rtt_us")),
    "CERTIFICATION_GC": (("gc_runs",), ("gc_time_us",)),
    "BEFORE_BEGIN": (("before_begin",), ("before_begin_us",)),
    "AFTER_TERMINATION": (("after_termination",), ("after_termination_us",)),
    "AFTER_SYNC": (("after_sync",), ("after_sync_us",)),
    "FLOW_CONTROL": (("throttled",), ("throttled_us",)),
}


def commit_path_window(
    window: tuple[CommitPathReport, ...], latest: CommitPathReport | None
) -> tuple[CommitPathReport, ...]:
    """The member's reports after `latest` arrived, older first: the period's start
    (the newest report at least `MIN_PERIOD_US` older than `latest`, or the oldest
    kept) and what followed it, at most `MAX_WINDOW` reports.

    A member that stops sending the section loses its window; a report not
    newer than the last one (a retained copy, a clock step) replaces nothing.
    A period shorter than a second would show a server's counters mid-step
    (MySQL updates them as rounds end), so the period spans one at least.
    """
    if latest is None:
        return ()
    if window and latest.at_us <= window[-1].at_us:
        return window
    kept = [*window, latest][-MAX_WINDOW:]
    while len(kept) > 2 and latest.at_us - kept[1].at_us >= MIN_PERIOD_US:
        kept.pop(0)
    return tuple(kept)


def commit_path_minute(
    minute: tuple[CommitPathReport, ...], latest: CommitPathReport | None
) -> tuple[CommitPathReport, ...]:
    """The member's anchors of the last minute after `latest` arrived, older first.

    An anchor is a report at least `MINUTE_STEP_US` after the previous anchor;
    the first one kept is the newest anchor at least a minute older than
    `latest` (or the oldest kept while less than a minute is known), so the
    minute's figures run from it to `latest` over 60 to 65 s. At most
    `MAX_MINUTE` reports per member, whatever the period. A member that stops
    sending the section loses them, as its window.
    """
    if latest is None:
        return ()
    if minute and latest.at_us - minute[-1].at_us < MINUTE_STEP_US:
        return minute  # not an anchor (or a clock step back)
    kept = [*minute, latest][-MAX_MINUTE:]
    while len(kept) > 2 and latest.at_us - kept[1].at_us >= MINUTE_US:
        kept.pop(0)
    return tuple(kept)


def _sum(counters: CommitPathCounters, names: tuple[str, ...]) -> int | None:
    total = 0
    for name in names:
        value: int | None = getattr(counters, name)
        if value is None:
            return None
        total += value
    return total


def _growth(old: int | None, new: int | None) -> int | None:
    if old is None or new is None or new < old:
        return None
    return new - old


def _communication(row: dict[str, Cell], comm: GroupCommunication) -> None:
    preferred, actual, single = (
        comm.leaders_preferred,
        comm.leaders_actual,
        comm.single_leader_capable,
    )
    row[col.COMMIT_PATH_WRITE_CONCURRENCY] = comm.write_concurrency
    row[col.COMMIT_PATH_PROTOCOL_VERSION] = comm.protocol_version
    row[col.COMMIT_PATH_LEADERS_PREFERRED] = None if preferred is None else ",".join(preferred)
    row[col.COMMIT_PATH_LEADERS_ACTUAL] = None if actual is None else ",".join(actual)
    row[col.COMMIT_PATH_SINGLE_LEADER] = None if single is None else int(single)


def commit_path_row(
    member_id: str,
    window: tuple[CommitPathReport, ...],
    communication: GroupCommunication | None = None,
    minute: tuple[CommitPathReport, ...] = (),
) -> dict[str, Cell]:
    """The member's grstats_member_commit_path row.

    Args:
        member_id: its server UUID.
        window: its reports, older first (`commit_path_window`); () when its server
            shows no Gr_* figures. The period runs from the first to the last.
        communication: its server's replication_group_communication_information.
        minute: its anchors of the last minute (`commit_path_minute`), older first.

    Returns:
        Column -> cell, every column of `columns.COMMIT_PATH`.
    """
    row: dict[str, Cell] = dict.fromkeys(_COLUMNS)
    row[col.MEMBER_ID] = member_id
    if communication is not None:
        _communication(row, communication)
    if not window:
        return row
    latest = _sums(window[-1].counters)
    for op, (_, total) in latest.items():
        row[_TOTAL[op]] = None if total is None else total / 1e6
    if minute:
        _figures(row, minute[0], window[-1], latest, _MINUTE)
    spent = _figures(row, window[0], window[-1], latest, _PERIOD)
    if spent is not None:
        whole = sum(spent.values())
        row[col.COMMIT_PATH_DOMINANT] = max(spent, key=spent.__getitem__).lower() if whole else ""
    return row


def _sums(counters: CommitPathCounters) -> dict[str, tuple[int | None, int | None]]:
    """Per operation: (its count, its time in µs) in `counters`, None where not shown."""
    return {op: (_sum(counters, counts), _sum(counters, times)) for op, (counts, times) in _OPS}


def _figures(
    row: dict[str, Cell],
    old: CommitPathReport,
    new: CommitPathReport,
    new_sums: dict[str, tuple[int | None, int | None]],
    names: dict[str, tuple[str, str, str]],
) -> dict[str, int] | None:
    """Rates, means and shares from `old` to `new` (`new_sums`: its `_sums`) into the
    columns `names` gives; the time each shared operation spent (µs), None when the
    span is under a second.
    """
    if new.at_us - old.at_us < MIN_PERIOD_US:
        return None
    period_s = (new.at_us - old.at_us) / 1e6
    row[names[""][0]] = period_s
    spent: dict[str, int] = {}
    for op, (old_count, old_time) in _sums(old.counters).items():
        new_count, new_time = new_sums[op]
        count = _growth(old_count, new_count)
        time_us = _growth(old_time, new_time)
        if count is None or time_us is None:
            continue
        per_second, mean, _ = names[op]
        row[per_second] = count / period_s
        row[mean] = time_us / count / 1e6 if count else None
        if op in _SHARED:
            spent[op] = time_us
    whole = sum(spent.values())
    for op, time_us in spent.items():
        row[names[op][2]] = time_us / whole if whole else None
    return spent


# Column names by operation, built once (a row is built per member per snapshot).
_COLUMNS = col.COMMIT_PATH.names
_OPS = tuple(OP_FIELDS.items())
_SHARED = frozenset(col.COMMIT_PATH_SHARED)
_TOTAL = {op: f"{op}_SECONDS_TOTAL" for op in OP_FIELDS}


def _names(suffix: str) -> dict[str, tuple[str, str, str]]:
    out = {
        op: (f"{op}_PER_SECOND{suffix}", f"{op}_MEAN_SECONDS{suffix}", f"{op}_SHARE{suffix}")
        for op in OP_FIELDS
    }
    out[""] = (col.COMMIT_PATH_PERIOD + suffix, "", "")
    return out


_PERIOD = _names("")
_MINUTE = _names(col.COMMIT_PATH_MINUTE_SUFFIX)
