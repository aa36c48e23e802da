"""The members dimension: each member's host, port, role and version as the history saw them.

Strategy: every history row already carries the member's MEMBER_HOST,
MEMBER_PORT, MEMBER_ROLE and MEMBER_VERSION (replication_group_members as
the daemon read it), so the least invasive source of names is the history
itself: the rollup writes `member_hosts`, one row per (member, UTC day,
host, port, role, version) with the first and last sample and the sample
count, from its own narrow scan of the same dates (the other tables do not
read these columns).  The report reads the week of it and labels every
member `host:port` (`member_labels`): the address it had last that week;
two members that end the week on the same address (a member replaced on
the same host and port) are told apart by their UUID's first 8 characters.
A member the dimension does not know (rollups from before it) keeps its id.

Invariants: the table is partitioned like the others (group, UTC date), so
an incremental rollup redoes exactly the days it redoes; a row with an
empty or NULL host is kept (labelled by id) rather than dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampType

from spark_rollups import frames
from spark_rollups.schema import DAY, GROUP_NAME, MEMBER_ID, SAMPLED_AT

__all__ = [
    "MEMBER_HOSTS",
    "MEMBER_HOSTS_SCHEMA",
    "address",
    "collect_member_hosts",
    "member_hosts",
    "member_labels",
    "short_id",
]

MEMBER_HOSTS = "member_hosts"
_ATTRIBUTES = ("member_host", "member_port", "member_role", "member_version")
MEMBER_HOSTS_SCHEMA = StructType(
    [
        StructField(GROUP_NAME, StringType()),
        StructField(MEMBER_ID, StringType()),
        StructField("member_host", StringType()),
        StructField("member_port", IntegerType()),
        StructField("member_role", StringType()),
        StructField("member_version", StringType()),
        StructField(SAMPLED_AT, TimestampType()),
    ]
)


def member_hosts(history: DataFrame) -> DataFrame:
    """One row per (group, member, UTC day, host, port, role, version).

    Args:
        history: history rows read with MEMBER_HOSTS_SCHEMA.

    Returns:
        group_name, member_id, member_host, member_port, member_role,
        member_version, first_seen, last_seen, samples, day.
    """
    return (
        history.groupBy(GROUP_NAME, MEMBER_ID, F.to_date(SAMPLED_AT).alias(DAY), *_ATTRIBUTES)
        .agg(
            F.min(SAMPLED_AT).alias("first_seen"),
            F.max(SAMPLED_AT).alias("last_seen"),
            F.count("*").alias("samples"),
        )
        .select(GROUP_NAME, MEMBER_ID, *_ATTRIBUTES, "first_seen", "last_seen", "samples", DAY)
    )


def collect_member_hosts(week: DataFrame) -> dict[str, list[dict[str, Any]]]:
    """The week's addresses of every member, per group.

    Args:
        week: the week's member_hosts rows.

    Returns:
        Group -> one row per (member, host, port): first_seen, last_seen
        (UTC text), samples, roles and versions (comma-joined), by member and
        first_seen.
    """
    weekly = week.groupBy(GROUP_NAME, MEMBER_ID, "member_host", "member_port").agg(
        F.date_format(F.min("first_seen"), "yyyy-MM-dd HH:mm").alias("first_seen"),
        F.date_format(F.max("last_seen"), "yyyy-MM-dd HH:mm").alias("last_seen"),
        F.sum("samples").alias("samples"),
        F.array_join(F.array_sort(F.collect_set("member_role")), ", ").alias("roles"),
        F.array_join(F.array_sort(F.collect_set("member_version")), ", ").alias("versions"),
    )
    result: dict[str, list[dict[str, Any]]] = {}
    ordered = weekly.orderBy(GROUP_NAME, MEMBER_ID, "first_seen", "member_host", "member_port")
    for row in frames.rows(ordered):
        result.setdefault(row.pop(GROUP_NAME), []).append(row)
    return result


def address(row: Mapping[str, Any]) -> str | None:
    """`host:port` of a member_hosts row (None without a host)."""
    host, port = row.get("member_host"), row.get("member_port")
    if not host:
        return None
    return f"{host}:{port}" if port is not None else str(host)


def short_id(member: str) -> str:
    """A member id short enough for a label (a UUID's first 8 characters)."""
    return member[:8] if len(member) > 12 else member


def member_labels(rows: Sequence[Mapping[str, Any]], members: Sequence[str] = ()) -> dict[str, str]:
    """Member id -> the label the report shows.

    Args:
        rows: collect_member_hosts rows of one group and week.
        members: ids to label too (those without any row keep their short id).

    Returns:
        `host:port` of each member's last address of the week; members that
        share it get their short id appended.
    """
    last: dict[str, tuple[str, str]] = {}
    for row in rows:
        where = address(row)
        if where is None:
            continue
        member, seen = row[MEMBER_ID], str(row["last_seen"])
        if member not in last or seen > last[member][0]:
            last[member] = (seen, where)
    labels = {m: where for m, (_, where) in last.items()}
    counts: dict[str, int] = {}
    for where in labels.values():
        counts[where] = counts.get(where, 0) + 1
    for member, where in labels.items():
        if counts[where] > 1:
            labels[member] = f"{where} ({short_id(member)})"
    for member in members:
        labels.setdefault(member, short_id(member))
    return labels
