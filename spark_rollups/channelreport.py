"""The weekly report's "Replication errors this week": each member's channel error episodes.

Strategy: Spark reads the week's `channel_error_episodes` (a run of one
error on one member's channel thread, per day) and joins each member's
pieces of one (channel, thread, error) into one row: first seen, last seen,
how many runs (an error that went and came back is two), samples; collected
once into a `ChannelWeek`. `channel_section` is a pure function of it: the
section is omitted (None) for a week without channel errors -- a healthy
group's report says nothing about channels -- and names each error by
MySQL's number, symbol and text (protocol.mysql_errors, the table the live
`grstats channels --explain` uses).

Invariants: rollups written before the channel table, and histories without
channel figures, have no partition: the week has no errors to show.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from protocol.mysql_errors import ERRORS
from spark_rollups import frames
from spark_rollups.render import Item, Table
from spark_rollups.week import ChannelWeek, member

__all__ = ["HEADING", "ChannelWeek", "channel_section", "collect_channels"]

HEADING = "Replication errors this week"


def collect_channels(episodes: DataFrame) -> dict[str, ChannelWeek]:
    """The week's channel errors of every group, one row per member, channel, thread, error.

    Args:
        episodes: the week's `channel_error_episodes` rows (frames.read_week).

    Returns:
        Group -> its ChannelWeek.
    """
    rows = episodes.groupBy(
        "group_name", "member_id", "channel_name", "thread", "error_number"
    ).agg(
        F.unix_seconds(F.min("first_seen")).alias("first_seen_s"),
        F.unix_seconds(F.max("last_seen")).alias("last_seen_s"),
        F.count("*").alias("runs"),
        F.sum("samples").alias("samples"),
    )
    found = frames.rows_by_group(rows.orderBy("first_seen_s", "member_id", "channel_name"))
    return {name: ChannelWeek(errors=errors) for name, errors in found.items()}


def _time(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%a %m-%d %H:%M:%S")


def _error(number: int) -> str:
    known = ERRORS.get(number)
    return str(number) if known is None else f"{number} {known.symbol}"


def channel_section(
    channels: ChannelWeek | None, labels: Mapping[str, str] | None = None
) -> tuple[str, list[Item]] | None:
    """The report section of one group's week; None when no channel showed an error.

    Args:
        channels: its collected rows (None: no channel table for the week).
        labels: member id -> `host:port` (absent: the short id).

    Returns:
        (heading, items): a summary line and the errors (member, channel, thread,
        MySQL error, first and last seen, runs), earliest first; None for a
        week without channel errors.
    """
    if channels is None or not channels.errors:
        return None
    names = labels or {}
    errors = channels.errors
    members = len({e["member_id"] for e in errors})
    texts = sorted({e["error_number"] for e in errors if e["error_number"] in ERRORS})
    items: list[Item] = [
        f"{len(errors)} replication channel error{'' if len(errors) == 1 else 's'} on "
        f"{members} member{'' if members == 1 else 's'} this week. `grstats channels "
        "--explain` says, while one lasts, which source or donor and what to check."
    ]
    items.append(
        Table(
            "channel_errors",
            "Channel errors: first and last seen",
            [
                "member",
                "channel",
                "thread",
                "MySQL error",
                "first seen (UTC)",
                "last seen (UTC)",
                "runs",
            ],
            [
                [
                    member(names, e["member_id"]),
                    e["channel_name"],
                    e["thread"],
                    _error(e["error_number"]),
                    _time(e["first_seen_s"]),
                    _time(e["last_seen_s"]),
                    e["runs"],
                ]
                for e in errors
            ],
            note="; ".join(f"{n}: {ERRORS[n].text}" for n in texts)
            + (" (MySQL's messages)." if texts else ""),
        )
    )
    return HEADING, items
