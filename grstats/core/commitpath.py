"""grstats_member_commit_path rows: where each member's commit time went.

Strategy / invariants
---------------------
Pure: a member's `CommitPathReport`s over its last period (at least a
second; as the member read its own server) -> one row. No clock: the period is the
difference of the reports' own `at_us`.

- Per operation (columns.COMMIT_PATH_OPS) the row shows the count per second
  over the period, the mean time of one (the summed time's growth over the
  count's growth) and the running total in seconds. Every server time sum is
  in microseconds.
- The shares are those of one transaction's commit overhead, not of every
  proposal: Gr_all_consensus_* counts every round, the per-second stats
  messages included, so an idle member's "consensus" is the group's chatter.
  The member's own transactions are its data messages
  (Gr_data_messages_sent_count, TRANSACTIONS_PER_SECOND: plugin/group_replication/
  src/plugin_handlers/metrics_handler.cc, add_message_sent, counts a
  transaction's message as data and the stats messages, CT_PIPELINE_STATS_
  MEMBER_MESSAGE, as control, and only messages this member sent); each one's
  overhead is its message's round trip (send to delivery on the sender, the
  consensus round included: Gr_data_messages_sent_roundtrip_time_sum), and
  the consistency waits and flow-control holds its sessions spent
  (COMMIT_PATH_SHARED), one after the other on the commit's path.
  COMMIT_OVERHEAD_SECONDS is their sum over the period per transaction; a
  share is one part of it. The certification garbage collector runs in the
  background, on no transaction's path: shown (per second, mean), not shared
  out. A member with no transaction of its own in the period is idle: no
  shares, DOMINANT "".
- DOMINANT names a cost only when it is abnormal for this group, against the
  other members' and the member's own baseline (`core.commitjudge`, applied by
  `CommitPathRows` over every member's row): never on a tie, never on an idle
  member; "" when nothing is abnormal; NULL before two reports.
- The communication columns are the member's own
  replication_group_communication_information (ext.commit_path_comm), the
  leaders' UUIDs joined by ",", as MySQL shows them; NULL when not shown.
  `core.commitpath_comm` fills them, and checks a member's section again only
  when it differs from the member's previous one.
- The same figures over the last minute (columns ending in `_1M`) run from
  the member's minute anchor (`commit_path_minute`: a report about a minute
  old, anchors kept 5 s apart so a member costs at most 13 reports whatever
  its period) to its latest report.
- A counter that went backwards (Group Replication restarted on the member,
  which resets them) or is None in either report gives NULL for that
  operation's period figures, never a negative or invented rate.
- `CommitPathRows` keeps the rows between snapshots: a member's row is built
  again only when the reports it is made of (the period's first and last, the
  minute's first) or its communication information change, and each report's
  per-operation sums are taken once. It holds the members of its last call only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter, itemgetter

from grstats.core import columns as col
from grstats.core.commitjudge import Baselines, costs_of, dominant
from grstats.core.commitpath_comm import communication_cells
from protocol import CommitPathCounters, CommitPathReport, GroupCommunication

__all__ = [
    "OP_FIELDS",
    "CommitPathRows",
    "commit_path_minute",
    "commit_path_row",
    "commit_path_window",
]

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
# the member's own transactions: its data messages and their round trips (the shares')
_SUM_OPS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **OP_FIELDS,
    "TRANSACTIONS": (("data_messages",), ("data_rtt_us",)),
}
_TX = 2 * len(OP_FIELDS)  # its count's position in `_Sums`; the round trips' is next


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
    return _row(member_id, window, communication, minute, {})


class CommitPathRows:
    """The table's rows across snapshots: a member's row is rebuilt only when its
    reports or communication information change (a reader between two reports gets
    the same row), and each report's sums are taken once (its successor's period and
    the minute's figures start from it).

    Bounded: it keeps one entry per member of the last `rows` call, nothing else.
    Entries are reused by the identity of the reports they were made of, so one
    member id in two groups (a collector) only costs rebuilds, never a wrong row.
    """

    def __init__(self) -> None:
        self._last: dict[str, _Entry] = {}
        self._baselines = Baselines()
        self._judged: dict[str, tuple[dict[str, Cell], dict[str, Cell]]] = {}

    def rows(self, members: Iterable[_MemberInputs]) -> list[dict[str, Cell]]:
        """One row per (member_id, window, communication, minute), as `commit_path_row`,
        DOMINANT judged against the other members and the member's own baseline.

        The rows are shared with earlier snapshots: readers never change them.
        """
        built = self._built(members)
        costs = {m: costs_of(row) for m, row, _ in built}
        out = []
        judged = {}
        for member_id, row, latest in built:
            others = [c for m, c in costs.items() if m != member_id and c]
            verdict = row
            if row[col.COMMIT_PATH_DOMINANT] is not None:
                name = dominant(costs[member_id], others, self._baselines.of(member_id))
                before = self._judged.get(member_id)
                if (
                    before is not None
                    and before[0] is row
                    and before[1][col.COMMIT_PATH_DOMINANT] == name
                ):
                    verdict = before[1]  # the same row as before: readers compare identities
                elif name != row[col.COMMIT_PATH_DOMINANT]:
                    verdict = {**row, col.COMMIT_PATH_DOMINANT: name}
                if latest is not None:
                    self._baselines.take(member_id, costs[member_id], latest)
            judged[member_id] = (row, verdict)
            out.append(verdict)
        self._judged = judged
        self._baselines.keep(set(judged))
        return out

    def _built(
        self, members: Iterable[_MemberInputs]
    ) -> list[tuple[str, dict[str, Cell], int | None]]:
        """Each member's row as its reports make it (rebuilt only when they change), with
        its latest report's time."""
        last, kept = self._last, {}
        out = []
        for member_id, window, communication, minute in members:
            entry = last.get(member_id)
            first, latest = (window[0], window[-1]) if window else (None, None)
            anchor = minute[0] if minute else None
            if (
                entry is None
                or entry[0] is not first
                or entry[1] is not latest
                or entry[2] is not anchor
                or entry[3] != communication
            ):
                known = {} if entry is None else entry[4]
                sums = {
                    id(r): (r, _sums_of(r, known)) for r in (first, latest, anchor) if r is not None
                }
                row = _row(member_id, window, communication, minute, sums)
                entry = (first, latest, anchor, communication, sums, row)
            kept[member_id] = entry
            out.append((member_id, entry[5], None if latest is None else latest.at_us))
        self._last = kept
        return out


_MemberInputs = tuple[
    str, tuple[CommitPathReport, ...], GroupCommunication | None, tuple[CommitPathReport, ...]
]
#: id(report) -> (the report, its sums): the report kept so that its id stays its own
_Known = dict[int, tuple[CommitPathReport, "_Sums"]]
#: a member's last row and what it was made of: the period's first and last
#: reports, the minute's first, the communication, the reports' sums
_Entry = tuple[
    CommitPathReport | None,
    CommitPathReport | None,
    CommitPathReport | None,
    GroupCommunication | None,
    _Known,
    dict[str, Cell],
]


def _row(
    member_id: str,
    window: tuple[CommitPathReport, ...],
    communication: GroupCommunication | None,
    minute: tuple[CommitPathReport, ...],
    known: _Known,
) -> dict[str, Cell]:
    """`commit_path_row`, with the sums of the reports in `known` already taken."""
    row = _EMPTY.copy()
    row[col.MEMBER_ID] = member_id
    if communication is not None:
        communication_cells(row, communication)
    if not window:
        return row
    latest = window[-1]
    new = _sums_of(latest, known)
    for name, index in _TOTAL:
        total = new[index]
        row[name] = None if total is None else total / 1e6
    end = (latest.at_us, new)
    if minute:
        _figures(row, (minute[0].at_us, _sums_of(minute[0], known)), end, _MINUTE)
    spent = _figures(row, (window[0].at_us, _sums_of(window[0], known)), end, _PERIOD)
    if spent is not None:
        row[col.COMMIT_PATH_DOMINANT] = ""  # judged against the group (`CommitPathRows`)
    return row


#: per operation of OP_FIELDS in order: its count, then its time in µs (None: not shown)
_Sums = tuple[int | None, ...]


def _sums_of(report: CommitPathReport, known: _Known) -> _Sums:
    hit = known.get(id(report))
    return hit[1] if hit is not None and hit[0] is report else _sums(report.counters)


def _sums(counters: CommitPathCounters) -> _Sums:
    """Every operation's count and time in `counters`: one attrgetter and one itemgetter
    call, then the sums of the parts of two fields (the round trip's data and control)."""
    values = _GET(counters)
    out = list(_FIRST(values))
    for at, second in _SECOND:
        first, other = out[at], values[second]
        out[at] = None if first is None or other is None else first + other
    return tuple(out)


def _figures(
    row: dict[str, Cell],
    start: tuple[int, _Sums],
    end: tuple[int, _Sums],
    names: _Names,
) -> dict[str, float] | None:
    """Rates, means, the overhead per transaction and its shares from `start` to `end`
    ((at_us, its sums) each) into the columns `names` gives; each shared cost per
    transaction (seconds) by lower-case name ({} for an idle member), None when the
    span is under a second.

    A count or time that is None at either end, or went backwards (Group
    Replication restarted), leaves that operation's columns NULL.
    """
    (old_us, old), (new_us, new) = start, end
    if new_us - old_us < MIN_PERIOD_US:
        return None
    period_s = (new_us - old_us) / 1e6
    period_name, per_op, share_of, tx_names = names
    row[period_name] = period_s
    times: dict[str, int] = {}
    for per_second, mean, op, c, t in per_op:
        grown = _grown(old, new, c, t)
        if grown is None:
            continue
        count, time_us = grown
        row[per_second] = count / period_s
        row[mean] = time_us / count / 1e6 if count else None
        if op in share_of:
            times[op] = time_us
    transactions = _grown(old, new, _TX, _TX + 1)
    if transactions is None:
        return {}
    tx, tx_rtt_us = transactions
    per_second_name, overhead_name = tx_names
    row[per_second_name] = tx / period_s
    if not tx:
        return {}  # idle: no transaction of its own, nothing to share out
    times["consensus"] = tx_rtt_us  # its transactions' rounds, not every proposal's
    whole = sum(times.values())
    row[overhead_name] = whole / tx / 1e6
    for op, time_us in times.items():
        row[share_of[op]] = time_us / whole if whole else None
    return {op: time_us / tx / 1e6 for op, time_us in times.items()}


def _grown(old: _Sums, new: _Sums, c: int, t: int) -> tuple[int, int] | None:
    """The growth of a count and a time between two sums; None when not both known and
    growing (a restart)."""
    old_count, new_count, old_time, new_time = old[c], new[c], old[t], new[t]
    if (
        old_count is None
        or new_count is None
        or old_time is None
        or new_time is None
        or new_count < old_count
        or new_time < old_time
    ):
        return None
    return new_count - old_count, new_time - old_time


# Column names and field positions by operation, built once (a row is built per
# member whenever its reports change).
_EMPTY: dict[str, Cell] = dict.fromkeys(col.COMMIT_PATH.names)
_SHARED = frozenset(col.COMMIT_PATH_SHARED)
_FIELDS = tuple(f for counts, times in _SUM_OPS.values() for f in (*counts, *times))
_GET = attrgetter(*_FIELDS)
_PARTS = tuple(
    tuple(_FIELDS.index(f) for f in names)
    for counts, times in _SUM_OPS.values()
    for names in (counts, times)
)
_FIRST = itemgetter(*(indexes[0] for indexes in _PARTS))
_SECOND = tuple((at, indexes[1]) for at, indexes in enumerate(_PARTS) if len(indexes) == 2)
assert all(len(indexes) <= 2 for indexes in _PARTS)  # OP_FIELDS' shape
_TOTAL = tuple((f"{op}_SECONDS_TOTAL", 2 * i + 1) for i, op in enumerate(OP_FIELDS))


#: a span's columns: its period column; per operation (per-second column, mean
#: column, lower-case name, count and time positions in `_Sums`); shared operation -> share
#: column; the transactions' per-second and overhead columns
_Names = tuple[str, tuple[tuple[str, str, str, int, int], ...], Mapping[str, str], tuple[str, str]]


def _names(suffix: str) -> _Names:
    per_op = tuple(
        (f"{op}_PER_SECOND{suffix}", f"{op}_MEAN_SECONDS{suffix}", op.lower(), 2 * i, 2 * i + 1)
        for i, op in enumerate(OP_FIELDS)
    )
    shares = {op.lower(): f"{op}_SHARE{suffix}" for op in OP_FIELDS if op in _SHARED}
    tx = (col.COMMIT_PATH_TRANSACTIONS + suffix, col.COMMIT_PATH_OVERHEAD + suffix)
    return col.COMMIT_PATH_PERIOD + suffix, per_op, shares, tx


_PERIOD = _names("")
_MINUTE = _names(col.COMMIT_PATH_MINUTE_SUFFIX)
