"""One live sample of the local member: what every source produces.

Invariants: a sample is immutable; `stats` always carries the *current* GTID
texts (the publisher decides whether a message carries them, flag '1', or not);
`stats.sent_timestamp` is None (the publisher stamps it at encode time).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import PipelineStats

MEMBER_STATES = ("ONLINE", "RECOVERING", "OFFLINE", "ERROR", "UNREACHABLE")
MEMBER_ROLES = ("PRIMARY", "SECONDARY", "")


@dataclass(frozen=True, slots=True)
class LocalMember:
    """The local member's identity and state, as replication_group_members shows it."""

    group_name: str
    member_id: str
    host: str
    port: int
    state: str  # one of MEMBER_STATES
    role: str  # one of MEMBER_ROLES
    version: str  # "8.4.3"
    view_id: str = ""
    communication_stack: str = "XCOM"

    @property
    def gcs_id(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class LocalSample:
    """One reading of the local member: identity plus its live pipeline stats."""

    member: LocalMember
    stats: PipelineStats
    sampled_at_us: int  # wall clock, microseconds since the epoch, UTC
