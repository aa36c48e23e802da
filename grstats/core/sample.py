"""One live sample of the local member: what every source produces.

Invariants: a sample is immutable; `stats` always carries the *current* GTID
texts (the publisher decides whether a message carries them, flag '1', or not);
`stats.sent_timestamp` is None (the publisher stamps it at encode time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grstats.core.applier import MemberApplier
from grstats.core.lag import ChannelLag
from protocol import CommitPathCounters, GroupCommunication, GtidState, PipelineStats

MEMBER_STATES = ("ONLINE", "RECOVERING", "OFFLINE", "ERROR", "UNREACHABLE")
MEMBER_ROLES = ("PRIMARY", "SECONDARY", "")


def in_group(state: str) -> bool:
    """Whether a member in MEMBER_STATE `state` takes part in the group.

    ONLINE and RECOVERING members have a MEMBER_ROLE, publish their stats and
    count for flow control; OFFLINE, ERROR and UNREACHABLE ones do not.
    """
    return state in ("ONLINE", "RECOVERING")


@dataclass(frozen=True, slots=True)
class LocalMember:
    """The local member's identity and state, as replication_group_members shows it.

    Every field is what the server shows, verbatim: before Group Replication
    ever started an 8.0 server shows MEMBER_ID/HOST "" and MEMBER_PORT NULL
    (port None); MEMBER_COMMUNICATION_STACK is spelled as MySQL prints it
    ("XCom", "MySQL") and is "" on servers without that column.
    """

    group_name: str
    member_id: str  # "" when the server shows no member (GR never started)
    host: str
    port: int | None  # None: MEMBER_PORT is NULL
    state: str  # one of MEMBER_STATES
    role: str  # one of MEMBER_ROLES
    version: str  # "8.4.3"
    view_id: str = ""
    communication_stack: str = "XCom"
    # MEMBER_ID of the replication_group_member_stats row when it differs from
    # the replication_group_members one (a 2024+ server whose GR never started
    # shows its UUID in replication_group_members but "" in the stats row);
    # None: the same as member_id.
    stats_member_id: str | None = None
    # @@server_uuid: who this daemon speaks for, known even while the tables show
    # no member (GR not started); never shown in a table, so not part of the
    # shown member's equality. "" when unknown.
    server_uuid: str = field(default="", compare=False)

    @property
    def gcs_id(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ServerFlowControl:
    """The server's own flow-control figures (Gr_flow_control_throttle_* status
    variables of the flow-control stats component): counted only on the member
    whose writes were held, reset when Group Replication restarts."""

    count: int  # Gr_flow_control_throttle_count
    time_sum: int  # Gr_flow_control_throttle_time_sum (microseconds)
    active_count: int  # Gr_flow_control_throttle_active_count
    last_throttle: str  # Gr_flow_control_throttle_last_throttle_timestamp ("" if never)


@dataclass(frozen=True, slots=True)
class ServerViewMember:
    """Another member as the local server's own tables show it.

    MySQL receives every member's stats message itself (WL#10380), so its
    replication_group_members / _member_stats have a row for every member of
    its view, with or without a grstats daemon on that member (counters 0 and
    texts "" until the member's stats arrive).
    """

    member: LocalMember  # its replication_group_members row (and VIEW_ID)
    stats: PipelineStats  # its replication_group_member_stats row, as for the local one


@dataclass(frozen=True, slots=True)
class LocalSample:
    """One reading of the local member: identity plus its live pipeline stats."""

    member: LocalMember
    stats: PipelineStats
    sampled_at_us: int  # wall clock, microseconds since the epoch, UTC
    # per channel, when the source can tell (WL#7374); () when it cannot
    lag: tuple[ChannelLag, ...] = ()
    # the server's Gr_flow_control_throttle_* figures; None when it has none
    flow_control: ServerFlowControl | None = None
    # WL#15620 applier metrics (at_us = sampled_at_us); None when the source has none
    applier: MemberApplier | None = None
    # the other members of the local server's view, in MEMBER_ID order; () when the
    # source cannot tell (simulated, or the server's rows could not be read)
    server_view: tuple[ServerViewMember, ...] = ()
    # @@gtid_executed and @@gtid_purged (ext.gtids); None when the source cannot tell
    gtid_state: GtidState | None = None
    # the server's Gr_* commit-path counters (MySQL 8.1.0+); None when it shows none
    commit_path: CommitPathCounters | None = None
    # replication_group_communication_information (8.0.23+); None when not shown
    communication: GroupCommunication | None = None
    # the MEMBER_IDs the local server's replication_group_members lists, itself included
    # (only itself while outside the group); None when the source cannot tell. Only these
    # members' word counts against another's (core.gtid_watch)
    view: frozenset[str] | None = None
    # section name -> value, for an `ext` section declared without a field of its own
    # (core.sections: its `outgoing` reads it here)
    extra: Mapping[str, Any] = field(default_factory=dict)
