"""The weekly report's "GTID divergence this week": errant transactions and clone-needed members.

Strategy: Spark sums `gtid_member_hour` of the week per member (minutes with
a verdict, errant and clone-needed minutes; the largest errant and missing
counts; the first and last errant sample); at most one row per member,
collected once into a `GtidWeek`.  `gtid_section` and `errant_findings` are
pure functions of it: which member had errant transactions, from when to
when and how many, and which members would have needed clone to rejoin (no
donor left with what they lacked, or errant GTIDs of their own).

Invariants: rollups written before the GTID tables, and histories without
any verdict (collectors, daemons without ext.gtids), have no partition: the
section then says so in one line.  "From when to when" is the first and last
errant sample of the week; the errant minutes say how long of it was errant.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from protocol.humanize import duration
from spark_rollups import frames
from spark_rollups.render import Item, Table
from spark_rollups.week import GtidWeek, member

__all__ = ["HEADING", "GtidWeek", "collect_gtids", "errant_findings", "gtid_section"]

HEADING = "GTID divergence this week"
_ADVICE = (
    "Errant GTIDs: inject an empty transaction for each on the primary so every member "
    "has them (`grstats gtids --explain` prints the statements) if the data is to stay, "
    "or rebuild the member with clone; a member that would need clone has no donor left "
    "holding the GTIDs it lacks: keep binary logs longer (binlog_expire_logs_seconds) "
    "or plan for a clone-based rejoin."
)


def collect_gtids(hours: DataFrame) -> dict[str, GtidWeek]:
    """The GTID divergence rows of every group, summed per member.

    Args:
        hours: the week's `gtid_member_hour` rows (frames.read_week).

    Returns:
        Group -> its GtidWeek.
    """
    members = hours.groupBy("group_name", "member_id").agg(
        *(F.sum(c).alias(c) for c in ("minutes", "errant_minutes", "clone_minutes")),
        F.max("errant_max").alias("errant_max"),
        F.max("missing_max").alias("missing_max"),
        F.unix_seconds(F.min("first_errant")).alias("first_errant_s"),
        F.unix_seconds(F.max("last_errant")).alias("last_errant_s"),
    )
    found = frames.rows_by_group(members.orderBy("member_id"))
    return {name: GtidWeek(members=rows) for name, rows in found.items()}


def _minute_text(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M")


def _errant(gtids: GtidWeek) -> list[dict[str, Any]]:
    found = [m for m in gtids.members if (m["errant_minutes"] or 0) > 0]
    return sorted(found, key=lambda m: (m["first_errant_s"] or 0, m["member_id"]))


def _clone(gtids: GtidWeek) -> list[dict[str, Any]]:
    found = [m for m in gtids.members if (m["clone_minutes"] or 0) > 0]
    return sorted(found, key=lambda m: (-(m["clone_minutes"] or 0), m["member_id"]))


def _by_label(members: list[dict[str, Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    return sorted(members, key=lambda m: (str(member(names, m["member_id"])), m["member_id"]))


def errant_findings(gtids: GtidWeek | None, labels: Mapping[str, str]) -> list[str]:
    """One finding per member that had errant transactions, the earliest first.

    Args:
        gtids: the collected week (None: no GTID figures).
        labels: member id -> `host:port`.

    Returns:
        Sentences (Markdown bold around the member).
    """
    sentences = []
    for m in _errant(gtids) if gtids is not None else []:
        first = dt.datetime.fromtimestamp(m["first_errant_s"], dt.UTC)
        last = dt.datetime.fromtimestamp(m["last_errant_s"], dt.UTC)
        until = last.strftime("%H:%M" if last.date() == first.date() else "%a %m-%d %H:%M")
        sentences.append(
            f"**{member(labels, m['member_id'])}** had errant transactions (up to "
            f"{m['errant_max']:,} GTID{'' if m['errant_max'] == 1 else 's'} a member that had "
            "applied past them lacked) from "
            f"{first.strftime('%a %m-%d %H:%M')} to {until} UTC, "
            f"{duration(60 * (m['errant_minutes'] or 0))} in all; inject empty transactions "
            "for them on the primary (`grstats gtids --explain`) or re-provision it before it "
            "is promoted or rejoins (Group Replication refuses it as it is)."
        )
    return sentences


def gtid_section(
    gtids: GtidWeek | None, labels: Mapping[str, str] | None = None
) -> tuple[str, list[Item]]:
    """The report section of one group's week.

    Args:
        gtids: its collected rows (None: no GTID divergence figures).
        labels: member id -> `host:port` (absent: the short id).

    Returns:
        (heading, items): a summary line, the members with errant transactions
        (first and last errant sample, errant minutes, most errant GTIDs) and
        the members that would have needed clone; one line for a clean week.
    """
    names = labels or {}
    if gtids is None or not gtids.members:
        return HEADING, [
            "No GTID divergence figures this week (the history predates them, was "
            "recorded by a collector, or no daemon sent its GTID sets)."
        ]
    errant, clone = _errant(gtids), _clone(gtids)
    judged = len(gtids.members)
    if not errant and not clone:
        return HEADING, [
            f"No errant transactions and no member that would have needed clone this week "
            f"({judged} members judged by their daemons)."
        ]
    items: list[Item] = [
        f"{len(errant)} of {judged} members had errant transactions (GTIDs executed there "
        "that a member the servers' view listed lacked, though it had applied past them); "
        f"{len(clone)} would have needed clone to rejoin at some point. {_ADVICE}"
    ]
    if errant:
        items.append(
            Table(
                "gtid_errant",
                "Members with errant transactions",
                [
                    "member",
                    "first errant (UTC)",
                    "last errant (UTC)",
                    "errant minutes",
                    "most errant GTIDs",
                ],
                [
                    [
                        member(names, m["member_id"]),
                        _minute_text(m["first_errant_s"]),
                        _minute_text(m["last_errant_s"]),
                        m["errant_minutes"],
                        m["errant_max"],
                    ]
                    for m in _by_label(errant, names)
                ],
            )
        )
    if clone:
        items.append(
            Table(
                "gtid_clone",
                "Members that would have needed clone",
                ["member", "clone-needed minutes", "share of its minutes", "most GTIDs missing"],
                [
                    [
                        member(names, m["member_id"]),
                        m["clone_minutes"],
                        m["clone_minutes"] / m["minutes"] if m["minutes"] else None,
                        m["missing_max"],
                    ]
                    for m in _by_label(clone, names)
                ],
                note="A member needs clone when no ONLINE donor still holds every GTID it "
                "lacks (they were purged), or when it lacks group_replication_clone_threshold "
                "of them or more. A member with errant GTIDs is refused whatever the method "
                "(re-provision it): it is counted with the errant ones above.",
                percent=frozenset({"share of its minutes"}),
            )
        )
    return HEADING, items
