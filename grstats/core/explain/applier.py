"""`grstats applier --explain`: why each member's applier is slow, with its numbers.

Strategy: each replication_applier_metrics row (or the increase since an
earlier reading of it) turned into a verdict by `grstats.core.applier_verdict`,
printed with the shares behind it and what an operator would change.

Invariants: pure; every text from a row is escaped; members in host:port
order, then channel.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Final

from grstats.core import columns as col
from grstats.core.applier_verdict import explain
from grstats.core.explain.names import NO_LABELS, who
from grstats.core.visible import visible
from protocol.humanize import duration

__all__ = ["WINDOW_CHANNEL", "applier_text", "applier_verdicts"]

#: the channel whose earlier reading the history keeps (the group's applier)
WINDOW_CHANNEL: Final = "group_replication_applier"

Earlier = Mapping[str, Mapping[str, object]]


def _order(
    rows: Sequence[Mapping[str, object]], labels: Mapping[str, str]
) -> list[Mapping[str, object]]:
    return sorted(
        rows, key=lambda r: (who(r.get(col.MEMBER_ID), labels), str(r.get(col.CHANNEL_NAME)))
    )


def _earlier(row: Mapping[str, object], earlier: Earlier | None) -> Mapping[str, object] | None:
    if earlier is None or row.get(col.CHANNEL_NAME) != WINDOW_CHANNEL:
        return None
    return earlier.get(str(row.get(col.MEMBER_ID)))


def _utc(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _shown(value: object) -> str:
    return "NULL" if value is None else visible(str(value))


def applier_verdicts(
    rows: Sequence[Mapping[str, object]],
    labels: Mapping[str, str] = NO_LABELS,
    earlier: Earlier | None = None,
) -> list[dict[str, object]]:
    """The verdict of every member and channel as data (the CLI's `--format json`).

    Args:
        rows: replication_applier_metrics rows.
        labels: member_labels() of the group.
        earlier: member id -> an earlier reading of its group_replication_applier
            channel; None or absent: judged on the totals since the applier started.

    Returns:
        One dict per row: MEMBER_ID, member, CHANNEL_NAME, verdict, shares,
        active_seconds, advice.
    """
    out: list[dict[str, object]] = []
    for row in _order(rows, labels):
        verdict = explain(row, _earlier(row, earlier))
        out.append(
            {
                col.MEMBER_ID: row.get(col.MEMBER_ID),
                "member": who(row.get(col.MEMBER_ID), labels),
                col.CHANNEL_NAME: row.get(col.CHANNEL_NAME),
                "verdict": verdict.kind,
                "shares": dict(verdict.shares),
                "active_seconds": verdict.active_s,
                "advice": verdict.advice,
            }
        )
    return out


def applier_text(
    rows: Sequence[Mapping[str, object]],
    labels: Mapping[str, str] = NO_LABELS,
    earlier: Earlier | None = None,
    window_start: dt.datetime | None = None,
) -> str:
    """The verdict of every member and channel, with its numbers and advice.

    Args:
        rows: replication_applier_metrics rows.
        labels: member_labels() of the group.
        earlier: member id -> an earlier reading of its group_replication_applier
            channel (the history's); None or absent: judged on the totals since
            the applier started.
        window_start: the start of the --since window asked for, named where a
            member has no reading that old.

    Returns:
        The text, one block per row.
    """
    out: list[str] = []
    for row in _order(rows, labels):
        previous = _earlier(row, earlier)
        verdict = explain(row, previous)
        member = who(row.get(col.MEMBER_ID), labels)
        out.append(f"{member} {_shown(row.get(col.CHANNEL_NAME))}: {verdict.kind}")
        if previous is not None:
            since = previous["sampled_at"]
            shown = (
                since.strftime("%Y-%m-%d %H:%M:%S")
                if isinstance(since, dt.datetime)
                else _shown(since)
            )
            out.append(f"  window: since {shown} UTC (the history's reading)")
        elif earlier is not None:
            # why not the window asked for, said for this member (not "no reading
            # that old" where there may be no reading of it at all)
            asked = "" if window_start is None else f" at or before {_utc(window_start)} UTC"
            out.append(
                "  window: since the applier started (the history holds no reading of "
                f"this member{asked})"
            )
        if verdict.active_s is not None:
            out.append(f"  active {duration(verdict.active_s)}; share of active time:")
        for name, share in verdict.shares.items():
            out.append(f"    {name:<18} {100 * share:6.1f} %")
        pending = row.get(col.TRANSACTIONS_PENDING_COUNT)
        ongoing = row.get(col.TRANSACTIONS_ONGOING_COUNT)
        out.append(f"  transactions pending {_shown(pending)}, ongoing {_shown(ongoing)}")
        out.append(f"  advice: {verdict.advice}")
    if not out:
        out.append("no applier metrics from any member")
    return "\n".join(out) + "\n"
