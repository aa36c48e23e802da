"""The ext.commit_path section's own rules (core/sections.py declares it with them).

Strategy: what a receiver does with a member's Gr_* counters beyond protocol's
codec -- a counter past what MySQL can hold is refused, a counter that went
back is a reset (issue 39 row 9) -- how the member's reports are kept (the
period's window and the minute's anchors, `core.commitpath`), and its history
block: the newest counters once per bucket of the member's own clock, for the
local and a remote member alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from operator import attrgetter
from typing import Any, Final

from grstats.core.commitpath import commit_path_minute, commit_path_window
from grstats.core.rows import commit_path_due, commit_path_history
from grstats.core.sample import LocalSample
from protocol import (
    CommitPathCounters,
    CommitPathReport,
    PipelineStats,
    ProtocolError,
    decode_commit_path,
)

__all__ = [
    "MAX_SERVER_COUNTER",
    "commit_path_history_of",
    "commit_path_out",
    "decode_commit_path_checked",
    "keep_commit_path",
]

_ALL_FIGURES = attrgetter(*(f.name for f in fields(CommitPathCounters)))
# the cumulative ones (Gr_last_consensus_end_timestamp is a time, not a count)
_COUNTS = attrgetter(
    *(f.name for f in fields(CommitPathCounters) if f.name != "last_consensus_end_us")
)


_NULL: Final[Mapping[str, Any]] = {}  # no block: the row's defaults, NULL


def commit_path_out(sample: LocalSample) -> CommitPathReport | None:
    counters = sample.commit_path
    return None if counters is None else CommitPathReport(sample.sampled_at_us, counters)


#: MySQL shows its Gr_* status variables as signed 64-bit integers (SHOW_LONGLONG): a
#: larger counter on the wire came from no server (issue 39 row 9).
MAX_SERVER_COUNTER: Final = 2**63 - 1


def decode_commit_path_checked(value: object) -> CommitPathReport:
    """`ext.commit_path`, its counters within what MySQL can hold (signed 64-bit).

    Raises:
        ProtocolError: malformed (protocol.commit_path), or a counter past 2^63 - 1.
    """
    report = decode_commit_path(value)
    top = max((v for v in _ALL_FIGURES(report.counters) if v is not None), default=0)
    if top > MAX_SERVER_COUNTER:
        raise ProtocolError(f"ext.commit_path: a counter past {MAX_SERVER_COUNTER}: {top}")
    return report


def _went_back(before: CommitPathReport, after: CommitPathReport) -> bool:
    """A counter lower than before: the member's Group Replication restarted (MySQL's
    Gr_* counters start again from 0), so the period starts again."""
    pairs = zip(_COUNTS(before.counters), _COUNTS(after.counters), strict=True)
    return any(b is not None and a is not None and a < b for b, a in pairs)


def keep_commit_path(old: Any, new: Any, _stats: PipelineStats) -> Any:
    """Its last two reports (the period's rates) and the minute's anchors (core.commitpath);
    a report whose counters went back is a reset: both start again from it."""
    window, minute = old if old is not None else ((), ())
    if new is not None and window and _went_back(window[-1], new):
        return (new,), (new,)
    window, minute = commit_path_window(window, new), commit_path_minute(minute, new)
    return (window, minute) if window or minute else None


def commit_path_history_of(kept: Any, _context: object) -> Mapping[str, Any]:
    """Its newest report's counters, once per bucket of the member's clock (commit_path_due)."""
    window = kept[0] if kept is not None else ()
    if window and commit_path_due(window[-2].at_us if len(window) > 1 else None, window[-1].at_us):
        return commit_path_history(window[-1].counters)
    return _NULL
