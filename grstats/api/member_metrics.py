"""The hooks of the member tables' families: what a column declaration cannot say.

Strategy: replication_group_members and grstats_member_status declare no
metric columns; their families are rows turned into info series and Unix
times. `MetricPolicy.hook` names them ("members", "member_status") and
`api.table_metrics` calls them after the table's declared families.

Member state is the gauge `mysql_perf_schema_replication_group_member_state`
with the mapping of Percona's group-replication queries for mysqld_exporter
(see MEMBER_STATE_VALUES): 0 unknown/empty, 1 ONLINE, 2 RECOVERING, 3 OFFLINE,
4 ERROR, 5 UNREACHABLE. `mysql_perf_schema_replication_group_member_info` is
exactly mysqld_exporter's (perf_schema.replication_group_members): a gauge of
value 1 per row whose labels are every column of replication_group_members,
lower-cased, the state included (so it changes series when the state
changes, as there) and NULL as "". Like mysqld_exporter's it has no `group`
label; join on `member_id` (a server UUID) for it.

The daemon's own member is marked by `grstats_local_member_info{group,
member_id}` (one series, value 1), because every daemon exports every member:
a dashboard or a recording rule uses it to pick the daemon that speaks for a
member. When a member was last heard of is the Unix time
`grstats_member_last_seen_timestamp_seconds` (snapshot time minus the age),
so it does not move while nothing is heard and `time() - x` is the age.

Invariants: reads only the snapshot; a row without MEMBER_ID is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from grstats.core import columns as col
from grstats.core.snapshot import (
    MEMBER_STATUS_TABLE,
    MEMBERS_COLUMNS,
    MEMBERS_TABLE,
    REJECT_REASONS,
    DaemonSnapshot,
)

__all__ = ["MEMBER_STATE_VALUES", "member_families", "member_status_families"]

# Percona mysqld_exporter (queries-mysqld-group-replication.yml) member_state mapping.
MEMBER_STATE_VALUES: Mapping[str, int] = {
    "ONLINE": 1,
    "RECOVERING": 2,
    "OFFLINE": 3,
    "ERROR": 4,
    "UNREACHABLE": 5,
}

_MEMBER_LABELS = ("group", "member_id")
# mysqld_exporter: every replication_group_members column, lower-cased, in table order.
_INFO_LABELS = tuple(column.lower() for column in MEMBERS_COLUMNS)


def _number(value: object) -> float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    return None


def _text(value: object) -> str:
    return "" if value is None else str(value)


def member_families(snapshot: DaemonSnapshot, groups: Mapping[str, str]) -> Iterator[Metric]:
    """State, info, the local member and the departed members (replication_group_members)."""
    state = GaugeMetricFamily(
        "mysql_perf_schema_replication_group_member_state",
        "Member state: 0 unknown, 1 ONLINE, 2 RECOVERING, 3 OFFLINE, 4 ERROR, 5 UNREACHABLE.",
        labels=_MEMBER_LABELS,
    )
    info = GaugeMetricFamily(
        "mysql_perf_schema_replication_group_member_info",
        "Information about the replication group member: channel_name, member_id, "
        "member_host, member_port, member_state. (member_role and member_version "
        "where available)",
        labels=_INFO_LABELS,
    )
    local = GaugeMetricFamily(
        "grstats_local_member_info",
        "The member this daemon speaks for (publishes for); 1.",
        labels=_MEMBER_LABELS,
    )
    for row in snapshot.table(MEMBERS_TABLE):
        member_id = _text(row.get(col.MEMBER_ID))
        if not member_id:
            continue
        labels = [groups.get(member_id, snapshot.group_name), member_id]
        state.add_metric(labels, MEMBER_STATE_VALUES.get(_text(row.get(col.MEMBER_STATE)), 0))
        info.add_metric([_text(row.get(column)) for column in MEMBERS_COLUMNS], 1)
    if snapshot.local_member_id:
        group = groups.get(snapshot.local_member_id, snapshot.group_name)
        local.add_metric([group, snapshot.local_member_id], 1)
    departed = GaugeMetricFamily(
        "grstats_member_departed",
        "1 for a member that departed (state: OFFLINE or ERROR, it left; UNREACHABLE, it was "
        "silent for forget_after) and has not come back; it is in no table and no other "
        "per-member series.",
        labels=(*_MEMBER_LABELS, "state"),
    )
    for gone in snapshot.departed:
        departed.add_metric([gone.group, gone.member_id, gone.state], 1)
    yield state
    yield info
    yield local
    yield departed


def member_status_families(
    snapshot: DaemonSnapshot, _groups: Mapping[str, str]
) -> Iterator[Metric]:
    """Last seen, accepted and rejected envelopes, row origin (grstats_member_status).

    Each row carries its own group (GROUP_NAME).
    """
    last_seen = GaugeMetricFamily(
        "grstats_member_last_seen_timestamp_seconds",
        "Unix time of the last accepted envelope (or sample, for the local member).",
        labels=_MEMBER_LABELS,
    )
    taken_at_s = snapshot.taken_at_us / 1e6
    member_accepted = CounterMetricFamily(
        "grstats_member_envelopes_accepted",
        "Envelopes accepted from this member.",
        labels=_MEMBER_LABELS,
    )
    member_rejected = CounterMetricFamily(
        "grstats_member_envelopes_rejected",
        "Envelopes refused on this member's topics, by reason.",
        labels=(*_MEMBER_LABELS, "reason"),
    )
    from_server = GaugeMetricFamily(
        "grstats_member_from_server",
        "1 when the member's rows come from the local server's view only (no grstats "
        "daemon publishes for it), 0 when from its daemon.",
        labels=_MEMBER_LABELS,
    )
    for row in snapshot.table(MEMBER_STATUS_TABLE):
        member_id = _text(row.get(col.MEMBER_ID))
        if not member_id:
            continue
        labels = [_text(row.get(col.GROUP_NAME)) or snapshot.group_name, member_id]
        from_server.add_metric(labels, 1 if row.get(col.ROW_ORIGIN) == col.ORIGIN_SERVER else 0)
        age = _number(row.get(col.LAST_SEEN_AGE_SECONDS))
        if age is not None:
            last_seen.add_metric(labels, taken_at_s - age)
        count = _number(row.get(col.ACCEPTED))
        if count is not None:
            member_accepted.add_metric(labels, count)
        for reason in REJECT_REASONS:
            count = _number(row.get(col.rejected_column(reason)))
            if count is not None:
                member_rejected.add_metric([*labels, reason], count)
    yield last_seen
    yield member_accepted
    yield member_rejected
    yield from_server
