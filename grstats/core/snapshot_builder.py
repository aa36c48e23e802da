"""Freezing the all-member tables into a `DaemonSnapshot`.

Strategy: the local member's rows come from its latest `LocalSample`, shown
as the source reported it (a server that never started Group Replication
shows an empty MEMBER_ID, an empty host and a NULL port — grstats shows the
same, never its configured identity); remote rows come from the registry.

Invariants (PROTOCOL.md section 8, MySQL's ps_information.cc):
- a local member that is OFFLINE shows one stats row with CHANNEL_NAME and
  MEMBER_ID only (VIEW_ID empty, counters 0) and no remote members;
- a local member in ERROR shows only itself (it is not in the group);
- before the first sample the local rows are MySQL's "plugin never started"
  rows: empty identifiers, zero counters, MEMBER_STATE OFFLINE, NULL port;
- a remote member silent for the unreachable window shows UNREACHABLE;
- replication_group_member_lag has a row per member and channel that the
  member reported (`core.lagrows`), beside the same members as the stats;
- replication_applier_metrics / _progress_by_worker likewise from each
  member's applier metrics (`core.applierrows`), and grstats_member_status
  says where they came from (APPLIER_METRICS_SOURCE);
- a member of the local server's view that no daemon speaks for (its rows
  come from the server's own tables, `LocalSample.server_view`) gets rows
  as MySQL shows them, ROW_ORIGIN 'server' in grstats_member_status;
- rows are in MEMBER_ID order, as MySQL shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from grstats.core import columns as col
from grstats.core.admission import MemberKey
from grstats.core.applierrows import metrics_rows, worker_rows
from grstats.core.commitpath import commit_path_row
from grstats.core.lag import MemberLag
from grstats.core.lagrows import lag_rows
from grstats.core.registry import MemberRegistry, Remote
from grstats.core.rows import empty_stats_row, member_row, remote_member_row, stats_row
from grstats.core.sample import LocalSample
from grstats.core.snapshot import DaemonCounters, DaemonSnapshot, Row
from protocol import CommitPathReport

_ALONE_STATES = ("OFFLINE", "ERROR")  # the local member is not in a group


@dataclass(frozen=True, slots=True)
class LocalView:
    """The local member as the daemon last saw and published it."""

    sample: LocalSample | None = None
    incarnation: int | None = None
    seq: int | None = None
    # the local member's last two commit-path reports (core.commitpath), older first
    commit_path: tuple[CommitPathReport, ...] = ()
    # its anchors of the last minute (core.commitpath), older first
    commit_path_minute: tuple[CommitPathReport, ...] = ()


def build_snapshot(
    now_us: int,
    *,
    group: str | None,
    local_member_id: str | None,
    local: LocalView | None,
    registry: MemberRegistry,
    counters: DaemonCounters,
    gauges: Mapping[str, float],
    health: tuple[str, ...] = (),
) -> DaemonSnapshot:
    """Freeze the all-member tables at `now_us`.

    Args:
        now_us: wall clock, microseconds (for ages and UNREACHABLE).
        group: our group; None for a collector.
        local_member_id: our configured server UUID; None for a collector.
        local: the local member's view; None for a collector.
        registry: the remote members.
        counters: the daemon's counters.
        gauges: point-in-time values; "members_known" is filled here.
        health: why the daemon is degraded (empty when healthy).

    Returns:
        A new immutable DaemonSnapshot.
    """
    stats_rows: list[Row] = []
    member_rows: list[Row] = []
    status_rows: list[Row] = []
    lags: list[tuple[str, str, MemberLag, int | None]] = []  # group, member, lag, offset
    applier_rows: list[Row] = []
    workers_rows: list[Row] = []
    commit_rows: list[Row] = []
    clocks: dict[str, list[int]] = {}  # group -> clock offsets known, ours (0) included
    alone = False
    view_id = ""
    if local is not None:
        sample = local.sample
        alone = sample is None or sample.member.state in _ALONE_STATES
        view_id = sample.member.view_id if sample is not None else ""
        stats_rows.append(_local_stats_row(sample))
        member_rows.append(_local_member_row(sample))
        status_rows.append(_local_status_row(local, group, local_member_id, now_us))
        if sample is not None and sample.applier is not None:
            applier_rows.extend(metrics_rows(sample.member.member_id, sample.applier))
            workers_rows.extend(worker_rows(sample.member.member_id, sample.applier))
        if sample is not None and (local.commit_path or sample.communication is not None):
            commit_rows.append(
                commit_path_row(
                    sample.member.member_id,
                    local.commit_path,
                    sample.communication,
                    local.commit_path_minute,
                )
            )
        clocks[group or ""] = [0]
        if sample is not None and sample.lag:
            local_lag = MemberLag(sample.sampled_at_us, sample.lag)
            lags.append((group or "", sample.member.member_id, local_lag, 0))
    if not alone:
        for key, remote in registry.items():
            env = remote.envelope
            unreachable = registry.unreachable(remote, now_us)
            stats_rows.append(stats_row(view_id or env.view_id, env.member.id, remote.state))
            member_rows.append(remote_member_row(env, unreachable=unreachable))
            status_rows.append(_remote_status_row(key, remote, registry, now_us))
            if remote.applier is not None:
                applier_rows.extend(metrics_rows(env.member.id, remote.applier))
                workers_rows.extend(worker_rows(env.member.id, remote.applier))
            if remote.commit_path or remote.communication is not None:
                commit_rows.append(
                    commit_path_row(
                        env.member.id,
                        remote.commit_path,
                        remote.communication,
                        remote.commit_path_minute,
                    )
                )
            offset = remote.clock_offset_us()
            if offset is not None:
                clocks.setdefault(key[0], []).append(offset)
            if remote.lag is not None:
                lags.append((key[0], env.member.id, remote.lag, offset))
    if not alone and local is not None and local.sample is not None:
        for row in _server_view_rows(local.sample, registry, group or "", view_id):
            stats_rows.append(row[0])
            member_rows.append(row[1])
            status_rows.append(row[2])
    # MySQL shows its rows in MEMBER_ID order (the group's member list is sorted by UUID)
    for rows in (stats_rows, member_rows, status_rows, commit_rows):
        rows.sort(key=_member_id_order)
    merged_gauges = {"members_known": float(len(member_rows)), **gauges}
    return DaemonSnapshot(
        taken_at_us=now_us,
        group_name=group or "",
        local_member_id=local_member_id or "",
        member_stats=tuple(stats_rows),
        members=tuple(member_rows),
        member_status=tuple(status_rows),
        member_lag=_lag_rows(lags, clocks),
        applier_metrics=tuple(applier_rows),
        applier_workers=tuple(workers_rows),
        commit_path=tuple(commit_rows),
        counters=counters,
        gauges=merged_gauges,
        health=health,
        departed=registry.departed(),
    )


def _member_id_order(row: Row) -> tuple[str, str]:
    return (str(row.get(col.GROUP_NAME) or ""), str(row.get(col.MEMBER_ID) or ""))


def _server_view_rows(
    sample: LocalSample, registry: MemberRegistry, group: str, view_id: str
) -> list[tuple[Row, Row, Row]]:
    """Rows of the members only the local server shows (no daemon heard from them).

    They are shown as MySQL shows them (its counters and texts, its member
    row) and marked ROW_ORIGIN 'server' in grstats_member_status.
    """
    heard = {key[1] for key, _ in registry.items()}
    out = []
    for other in sample.server_view:
        m = other.member
        if m.member_id in heard or m.member_id == sample.member.member_id:
            continue
        stats = stats_row(m.view_id or view_id, m.member_id, other.stats)
        member = member_row(
            member_id=m.member_id,
            host=m.host,
            port=m.port,
            state=m.state,
            underlying_state=m.state,
            role=m.role,
            version=m.version,
            stack=m.communication_stack,
        )
        status = _status_row(
            group,
            m.member_id,
            is_local=False,
            age_s=None,
            incarnation=None,
            seq=None,
            accepted=0,
            rejections={},
            origin=col.ORIGIN_SERVER,
        )
        out.append((stats, member, status))
    return out


def _local_stats_row(sample: LocalSample | None) -> Row:
    if sample is None:
        return empty_stats_row("")
    m = sample.member
    member_id = m.member_id if m.stats_member_id is None else m.stats_member_id
    if m.state == "OFFLINE":
        return empty_stats_row(member_id)
    return stats_row(m.view_id, member_id, sample.stats)


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
    m = sample.member
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
    row[col.SERVER_DISAGREEMENTS] = None  # filled by MemberTables from its oracle
    return row


def _local_status_row(
    local: LocalView, group: str | None, member_id: str | None, now_us: int
) -> Row:
    sample = local.sample
    return _status_row(
        group or "",
        member_id or "",
        is_local=True,
        age_s=None if sample is None else max(0.0, (now_us - sample.sampled_at_us) / 1e6),
        incarnation=local.incarnation,
        seq=local.seq,
        accepted=0,
        rejections={},
        applier_source=None if sample is None or sample.applier is None else sample.applier.source,
    )


def _remote_status_row(
    key: MemberKey, remote: Remote, registry: MemberRegistry, now_us: int
) -> Row:
    return _status_row(
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


def _lag_rows(
    lags: list[tuple[str, str, MemberLag, int | None]], clocks: dict[str, list[int]]
) -> tuple[Row, ...]:
    """Every member's lag rows, with its clock offset and the group's clock spread.

    Args:
        lags: (group, member id, lag, its clock offset in µs) per member with lag.
        clocks: per group, the clock offsets known (every member's, ours as 0).
    """
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
