"""The row builders of the all-member tables (one function per table).

Strategy: the local member's rows come from its latest `LocalSample`, shown
as the source reported it (a server that never started Group Replication
shows an empty MEMBER_ID, an empty host and a NULL port — grstats shows the
same, never its configured identity); remote rows come from the registry.
Each builder is a `core.snapshot_inputs.RowBuilder`, registered for its
table in `core.snapshot_builder.BUILDERS`.

Invariants (PROTOCOL.md section 8, MySQL's ps_information.cc):
- a local member that is OFFLINE shows one stats row with CHANNEL_NAME and
  MEMBER_ID only (VIEW_ID empty, counters 0) and no remote members;
- a local member in ERROR shows only itself (it is not in the group);
- before the first sample the local rows are MySQL's "plugin never started"
  rows: empty identifiers, zero counters, MEMBER_STATE OFFLINE, NULL port;
- a remote member silent for the unreachable window shows UNREACHABLE;
- grstats_member_lag has a row per member and channel that the
  member reported (`core.lagrows`), beside the same members as the stats;
- replication_applier_metrics / _progress_by_worker likewise from each
  member's applier metrics (`core.applierrows`), and grstats_member_status
  says where they came from (APPLIER_METRICS_SOURCE);
- a member of the local server's view that no daemon speaks for (its rows
  come from the server's own tables, `LocalSample.server_view`) gets rows
  as MySQL shows them, ROW_ORIGIN 'server' in grstats_member_status;
- rows of the member tables are in MEMBER_ID order, as MySQL shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from grstats.core import columns as col
from grstats.core.applierrows import metrics_rows, worker_rows
from grstats.core.channel_errors import ChannelErrorWatch
from grstats.core.channel_explain import channel_overview
from grstats.core.channels import member_channel_rows
from grstats.core.columns import TableDef
from grstats.core.commitpath import CommitPathRows
from grstats.core.lag import MemberLag
from grstats.core.lagrows import lag_rows
from grstats.core.rows import empty_stats_row, member_row, remote_member_row, stats_row
from grstats.core.sample import LocalMember, LocalSample, ServerViewMember
from grstats.core.snapshot import Row
from grstats.core.snapshot_inputs import LocalView, RowBuilder, SnapshotInputs, Tables
from protocol import MirroredTables

__all__ = [
    "applier_metrics_rows",
    "applier_worker_rows",
    "commit_path_later",
    "commit_path_rows",
    "flow_control_rows",
    "member_gtids_rows",
    "member_lag_rows",
    "member_stats_rows",
    "member_status_rows",
    "members_count",
    "members_rows",
]


def _member_id_order(row: Row) -> tuple[str, str]:
    return (str(row.get(col.GROUP_NAME) or ""), str(row.get(col.MEMBER_ID) or ""))


def _sorted(rows: list[Row]) -> tuple[Row, ...]:
    # MySQL shows its rows in MEMBER_ID order (the group's member list is sorted by UUID)
    return tuple(sorted(rows, key=_member_id_order))


def _server_only(inputs: SnapshotInputs) -> Iterator[ServerViewMember]:
    """The members only the local server shows (no daemon heard from them)."""
    sample = inputs.sample
    if inputs.alone or sample is None:
        return
    heard = {key[1] for key, _ in inputs.registry.items()}
    for other in sample.server_view:
        member_id = other.member.member_id
        if member_id not in heard and member_id != sample.member.member_id:
            yield other


def member_stats_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """replication_group_member_stats: the local member, the remotes, the server-only ones."""
    rows: list[Row] = []
    if inputs.local is not None:
        rows.append(_local_stats_row(inputs.sample))
    view_id = inputs.view_id
    if not inputs.alone:
        for _key, remote in inputs.registry.items():
            env = remote.envelope
            rows.append(stats_row(view_id or env.view_id, env.member.id, remote.state))
    for other in _server_only(inputs):
        rows.append(stats_row(other.member.view_id or view_id, other.member.member_id, other.stats))
    return _sorted(rows)


def members_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """replication_group_members: the local member, the remotes, the server-only ones."""
    rows: list[Row] = []
    if inputs.local is not None:
        rows.append(_local_member_row(inputs.sample))
    if not inputs.alone:
        for _key, remote in inputs.registry.items():
            unreachable = inputs.registry.unreachable(remote, inputs.now_us)
            rows.append(remote_member_row(remote.envelope, unreachable=unreachable))
    for other in _server_only(inputs):
        rows.append(_member_row_of(other.member))
    return _sorted(rows)


def members_count(inputs: SnapshotInputs) -> int:
    """How many rows `members_rows` would make, without making them (/healthz)."""
    local = 1 if inputs.local is not None else 0
    remotes = 0 if inputs.alone else len(inputs.registry)
    return local + remotes + sum(1 for _ in _server_only(inputs))


def member_status_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """grstats_member_status: where each member's rows come from, with the oracle's verdict."""
    rows: list[Row] = []
    group = inputs.group or ""
    if inputs.local is not None:
        rows.append(_local_status_row(inputs.local, group, inputs.local_member_id, inputs.now_us))
    if not inputs.alone:
        registry, now_us = inputs.registry, inputs.now_us
        for key, remote in registry.items():
            rows.append(
                _status_row(
                    key[0],
                    key[1],
                    is_local=False,
                    age_s=max(0.0, (now_us - remote.last_seen_us) / 1e6),
                    incarnation=remote.envelope.incarnation,
                    seq=remote.envelope.seq,
                    accepted=remote.accepted,
                    rejections=registry.rejections(key),
                    applier_source=None if remote.applier is None else remote.applier.source,
                )
            )
    for other in _server_only(inputs):
        rows.append(
            _status_row(
                group,
                other.member.member_id,
                is_local=False,
                age_s=None,
                incarnation=None,
                seq=None,
                accepted=0,
                rejections={},
                origin=col.ORIGIN_SERVER,
            )
        )
    if inputs.disagreements:
        verdicts = inputs.disagreements
        rows = [{**r, col.SERVER_DISAGREEMENTS: verdicts.get(str(r[col.MEMBER_ID]))} for r in rows]
    return _sorted(rows)


def member_lag_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """grstats_member_lag: every member's lag rows, with the clock offsets.

    Each member's clock offset, and the group's clock spread around it (the
    largest distance to another member's clock; ours counts as 0).
    """
    lags: list[tuple[str, str, MemberLag, int | None]] = []  # group, member, lag, offset
    clocks: dict[str, list[int]] = {}  # group -> clock offsets known, ours (0) included
    sample = inputs.sample
    if inputs.local is not None:
        clocks[inputs.group or ""] = [0]
        if sample is not None and sample.lag:
            local_lag = MemberLag(sample.sampled_at_us, sample.lag)
            lags.append((inputs.group or "", sample.member.member_id, local_lag, 0))
    if not inputs.alone:
        for key, remote in inputs.registry.items():
            offset = remote.clock_offset_us()
            if offset is not None:
                clocks.setdefault(key[0], []).append(offset)
            if remote.lag is not None:
                lags.append((key[0], remote.envelope.member.id, remote.lag, offset))
    rows: list[Row] = []
    for group, member_id, lag, offset in lags:
        spread: float | None = None
        if offset is not None:
            others = list(clocks.get(group, ()))
            if offset in others:
                others.remove(offset)  # the member's own clock
            spread = max((abs(offset - o) for o in others), default=0) / 1e6
        rows.extend(
            lag_rows(
                member_id,
                lag,
                offset_s=None if offset is None else offset / 1e6,
                spread_s=spread,
            )
        )
    return tuple(rows)


def applier_metrics_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """replication_applier_metrics: every member's, from its applier metrics."""
    return _applier_rows(inputs, metrics_rows)


def applier_worker_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """replication_applier_progress_by_worker: every member's workers."""
    return _applier_rows(inputs, worker_rows)


def _applier_rows(
    inputs: SnapshotInputs, build: Callable[[str, Any], Iterable[Row]]
) -> tuple[Row, ...]:
    """`build(member_id, applier)` over the local member, then every remote one with one."""
    rows: list[Row] = []
    sample = inputs.sample
    if sample is not None and sample.applier is not None:
        rows.extend(build(sample.member.member_id, sample.applier))
    if not inputs.alone:
        for _key, remote in inputs.registry.items():
            if remote.applier is not None:
                rows.extend(build(remote.envelope.member.id, remote.applier))
    return tuple(rows)


def commit_path_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """grstats_member_commit_path: a row per member with commit-path reports or communication.

    A member's row is rebuilt only when its reports change (`inputs.commit_rows`).
    """
    return commit_path_later(inputs)()


def commit_path_later(inputs: SnapshotInputs) -> Callable[[], tuple[Row, ...]]:
    """`commit_path_rows`, built when called: what the rows are made of is taken now.

    The snapshot defers the table's rows to their first reader
    (`core.snapshot_builder.DEFERRED`): every member's reports and communication
    are immutable values, so the rows are those of the snapshot's moment whenever,
    and in whichever thread, they are built.
    """
    members = []
    sample, local = inputs.sample, inputs.local
    if (
        sample is not None
        and local is not None
        and (local.commit_path or sample.communication is not None)
    ):
        members.append(
            (
                sample.member.member_id,
                local.commit_path,
                sample.communication,
                local.commit_path_minute,
            )
        )
    if not inputs.alone:
        for _key, remote in inputs.registry.items():
            if remote.commit_path or remote.communication is not None:
                members.append(
                    (
                        remote.envelope.member.id,
                        remote.commit_path,
                        remote.communication,
                        remote.commit_path_minute,
                    )
                )
    built = inputs.commit_rows if inputs.commit_rows is not None else CommitPathRows()
    return lambda: _sorted(list(built.rows(members)))


def flow_control_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    """grstats_flow_control: the daemon's flow-control replay (none for a collector)."""
    if inputs.flow is None:
        return ()
    sample = inputs.sample
    server = None if sample is None else sample.flow_control
    return inputs.flow.rows(inputs.local_member_id or "", server)


def member_gtids_rows(inputs: SnapshotInputs, tables: Tables) -> tuple[Row, ...]:
    """grstats_member_gtids: errant and missing GTIDs (none for a collector)."""
    if inputs.gtids is None:
        return ()
    return inputs.gtids.rows()


def _local_stats_row(sample: LocalSample | None) -> Row:
    if sample is None:
        return empty_stats_row("")
    m = sample.member
    member_id = m.member_id if m.stats_member_id is None else m.stats_member_id
    if m.state == "OFFLINE":
        return empty_stats_row(member_id)
    return stats_row(m.view_id, member_id, sample.stats)


def _member_row_of(m: LocalMember) -> Row:
    return member_row(
        member_id=m.member_id,
        host=m.host,
        port=m.port,
        state=m.state,
        underlying_state=m.state,
        role=m.role,
        version=m.version,
        stack=m.communication_stack,
    )


def _local_member_row(sample: LocalSample | None) -> Row:
    if sample is None:
        return member_row(
            member_id="",
            host="",
            port=None,
            state="OFFLINE",
            underlying_state="OFFLINE",
            role="",
            version="",
            stack="",
        )
    return _member_row_of(sample.member)


def _status_row(
    group: str,
    member_id: str,
    *,
    is_local: bool,
    age_s: float | None,
    incarnation: int | None,
    seq: int | None,
    accepted: int,
    rejections: Mapping[str, int],
    applier_source: str | None = None,
    origin: str = col.ORIGIN_DAEMON,
) -> Row:
    row: dict[str, str | int | float | None] = {
        col.GROUP_NAME: group,
        col.MEMBER_ID: member_id,
        col.IS_LOCAL: 1 if is_local else 0,
        col.LAST_SEEN_AGE_SECONDS: age_s,
        col.INCARNATION: incarnation,
        col.SEQ: seq,
        col.ACCEPTED: accepted,
    }
    for reason in col.REJECT_REASONS:
        row[col.rejected_column(reason)] = rejections.get(reason, 0)
    row[col.APPLIER_METRICS_SOURCE] = applier_source
    row[col.ROW_ORIGIN] = origin
    row[col.SERVER_DISAGREEMENTS] = None  # the oracle's verdict, when it has one
    return row


def _local_status_row(local: LocalView, group: str, member_id: str | None, now_us: int) -> Row:
    sample = local.sample
    return _status_row(
        group,
        member_id or "",
        is_local=True,
        age_s=None if sample is None else max(0.0, (now_us - sample.sampled_at_us) / 1e6),
        incarnation=local.incarnation,
        seq=local.seq,
        accepted=0,
        rejections={},
        applier_source=None if sample is None or sample.applier is None else sample.applier.source,
    )


def channel_table_builder(table: TableDef) -> RowBuilder:
    """The row builder of one WL#3656 channel table: the local member's rows, then the others'."""

    def rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
        members: list[tuple[str, MirroredTables | None]] = []
        sample = inputs.sample
        if sample is not None:
            members.append((sample.member.member_id, sample.channels))
        if not inputs.alone:
            members.extend((r.envelope.member.id, r.channels) for _, r in inputs.registry.items())
        return member_channel_rows(table, members)

    return rows


def channel_errors_rows(inputs: SnapshotInputs, tables: Tables) -> tuple[Row, ...]:
    """grstats_channel_errors: the episodes, after the status tables of this snapshot."""
    watch = inputs.channel_errors if inputs.channel_errors is not None else ChannelErrorWatch()
    watch.observe(tables)
    return watch.rows()


def channels_overview_rows(inputs: SnapshotInputs, tables: Tables) -> tuple[Row, ...]:
    """grstats_channels: `grstats channels`' rows, from the channel tables built before it."""
    return tuple(channel_overview(tables, inputs.now_us))
