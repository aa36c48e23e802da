"""The simulated members' Gr_* commit-path counters (MySQL 8.1.0+'s, as the mysql source reads).

Strategy / invariants
---------------------
Pure functions of (settings, member, second, the member's own proposals), so
every daemon of one group computes the same figures. Counted since the
model's epoch (Group Replication's start); every counter only grows.

- Network: each member's link has a one-way latency (`link_latency_ms`, the
  `slow_link_member` `slow_link_ms`). A message between two members takes
  the sum of their two links each way; a consensus round started by a member
  ends when a majority (itself and n // 2 peers) has answered, so one round
  takes the (n // 2)-th smallest round trip to a peer. A slow link makes
  every round started by its member slow; the others still find a fast
  majority among themselves (as XCom does).
- Rounds: one per local transaction (its data message), plus one control
  message per second (the stats broadcast); every message's round trip is
  its round's time.
- Certification GC: one run every `GC_EVERY_S` seconds taking `GC_RUN_US`.
- Consistency waits: a scripted "consistency" event sets the level of the
  member's sessions for a window. Each local transaction in it waits: with
  BEFORE (or BEFORE_AND_AFTER) before it begins, two of its own rounds (the
  sync point's round, then the apply up to it); with AFTER (or
  BEFORE_AND_AFTER) after it terminates, two round trips to its farthest
  peer (every member must prepare, not a majority). The transactions are
  counted from the member's own proposals at the window's bounds. After-sync
  waits (other members' transactions held behind an AFTER one) stay 0.
- Flow-control holds: 0.
- Communication information: a multi-primary-style XCom (every member a
  consensus leader, no single leader), the default write concurrency and the
  8.0.27 protocol, as a group of 8.0.27+ servers shows them by default.
- `MemberCommitPath` takes once what the settings fix for one member (its
  round, its farthest peer, its consistency windows, the communication row:
  the same object every sample), so a sample only multiplies; a source keeps
  it while its model's settings object stays the same one.

What a member of the settings' `version` shows (mysql/mysql-server):

- 8.1.0+: the Gr_* counters (plugin/group_replication/include/
  plugin_status_variables.h, new in 8.1.0; the manual's server status
  variable index: "Added in MySQL 8.1.0"). Older servers show no such rows,
  so the mysql source gives no counters (commitstats.py): `shows_commit_path`
  False, the live sample's commit_path None, the cp_* history columns NULL.
- 8.0.27+: replication_group_communication_information with its fifth column
  WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE (plugin/group_replication/src/
  perfschema/table_communication_information.cc, init()'s table definition)
  and protocol 8.0.27 (mysql_version_gcs_protocol_map.cc: Gcs_protocol_version
  V3 -> 8.0.27, FIRST_PROTOCOL_WITH_SUPPORT_FOR_CONSENSUS_LEADERS).
- 8.0.23-8.0.26: the table's first four columns only (the same file's 8.0.23
  definition: WRITE_CONCURRENCY, PROTOCOL_VERSION, WRITE_CONSENSUS_LEADERS_
  PREFERRED/ACTUAL), so single_leader_capable None; the highest protocol those
  servers know is V2 (libmysqlgcs/include/mysql/gcs/gcs_types.h: HIGHEST_KNOWN
  = V2), which the table shows as 8.0.16 (V2 -> 8.0.16); every member leads.
- before 8.0.23: no table (it came with 8.0.23): communication None.
"""

from __future__ import annotations

from collections.abc import Callable

from grstats.sources.simulated.settings import ScriptEvent, SimulationSettings, version_tuple
from protocol import CommitPathCounters, GroupCommunication

__all__ = [
    "GC_EVERY_S",
    "GC_RUN_US",
    "MemberCommitPath",
    "commit_path_at",
    "communication_of",
    "farthest_us",
    "round_us",
    "shows_commit_path",
]

GC_EVERY_S = 60
GC_RUN_US = 20_000
_MESSAGE_BYTES = 600  # a data message on the wire, bytes (transaction + GCS header)
_CONTROL_BYTES = 100
_WRITE_CONCURRENCY = 10  # group_replication_get_write_concurrency()'s default
_PROTOCOL = "8.0.27"  # the newest communication protocol version (8.0.27+ servers)
_PROTOCOL_8_0_16 = "8.0.16"  # Gcs_protocol_version V2: the highest 8.0.16-8.0.26 know
_COMMIT_PATH_SINCE = (8, 1, 0)  # the Gr_* status variables
_COMMUNICATION_SINCE = (8, 0, 23)  # replication_group_communication_information
_SINGLE_LEADER_SINCE = (8, 0, 27)  # its fifth column, protocol V3


def _at_least(settings: SimulationSettings, since: tuple[int, int, int]) -> bool:
    """Whether the members' version is `since` or newer (an odd version: the newest)."""
    version = version_tuple(settings.version)
    return version is None or version >= since


def shows_commit_path(settings: SimulationSettings) -> bool:
    """Whether the members' MySQL version shows the Gr_* counters (8.1.0+)."""
    return _at_least(settings, _COMMIT_PATH_SINCE)


def _link_us(settings: SimulationSettings, member: str) -> int:
    slow = settings.slow_link_member is not None and member == settings.slow_link_member
    return round(1000 * (settings.slow_link_ms if slow else settings.link_latency_ms))


def round_us(settings: SimulationSettings, member: str) -> int:
    """One consensus round started by `member`, µs: its majority's slowest round trip."""
    peers = sorted(
        2 * (_link_us(settings, member) + _link_us(settings, p))
        for p in settings.members
        if p != member
    )
    if not peers:
        return 2 * _link_us(settings, member)  # alone: its own loop
    return peers[len(settings.members) // 2 - 1]


def farthest_us(settings: SimulationSettings, member: str) -> int:
    """The round trip from `member` to its farthest peer, µs (its own loop when alone)."""
    return max(
        (
            2 * (_link_us(settings, member) + _link_us(settings, p))
            for p in settings.members
            if p != member
        ),
        default=2 * _link_us(settings, member),
    )


def _waits(
    events: tuple[ScriptEvent, ...], s: int, proposals_at: Callable[[int], int]
) -> tuple[int, int]:
    """(BEFORE waits, AFTER waits) up to second `s` of the member's consistency `events`."""
    before = after = 0
    for ev in events:
        if ev.at_s > s:
            continue
        start = int(ev.at_s)
        end = s if ev.duration_s <= 0 else min(s, int(ev.at_s + ev.duration_s))
        waits = max(0, proposals_at(end) - proposals_at(start))
        if ev.level in ("BEFORE", "BEFORE_AND_AFTER"):
            before += waits
        if ev.level in ("AFTER", "BEFORE_AND_AFTER"):
            after += waits
    return before, after


class MemberCommitPath:
    """What `settings` fix of one member's commit path, taken once; its counters per second."""

    __slots__ = ("_events", "_farthest", "_one", "_peers", "communication", "settings", "shown")

    def __init__(self, settings: SimulationSettings, member: str) -> None:
        """Args:
        settings: the group's settings (kept: `settings` tells which it was made of).
        member: the member's UUID (lower case).
        """
        self.settings = settings
        self.shown = shows_commit_path(settings)
        self.communication = communication_of(settings)
        self._one = round_us(settings, member)
        self._farthest = farthest_us(settings, member)
        self._peers = max(1, len(settings.members) - 1)
        self._events = tuple(
            ev
            for ev in settings.script
            if ev.action == "consistency" and ev.member.lower() == member
        )

    def at(
        self, s: int, local_proposals: int, proposals_at: Callable[[int], int] | None = None
    ) -> CommitPathCounters:
        """`commit_path_at(settings, member, s, local_proposals, proposals_at)`."""
        elapsed = max(0, s - self.settings.epoch_s)
        one = self._one
        rounds = local_proposals + elapsed
        gc_runs = elapsed // GC_EVERY_S
        before, after = (
            (0, 0)
            if proposals_at is None or not self._events
            else _waits(self._events, s, proposals_at)
        )
        return CommitPathCounters(
            consensus_proposals=rounds,
            consensus_time_us=rounds * one,
            empty_proposals=0,
            extended_rounds=0,
            consensus_bytes_sent=self._peers
            * (local_proposals * _MESSAGE_BYTES + elapsed * _CONTROL_BYTES),
            consensus_bytes_received=0,
            messages_sent=rounds,
            control_messages=elapsed,
            control_bytes=elapsed * _CONTROL_BYTES,
            control_rtt_us=elapsed * one,
            data_messages=local_proposals,
            data_bytes=local_proposals * _MESSAGE_BYTES,
            data_rtt_us=local_proposals * one,
            before_begin=before,
            before_begin_us=before * 2 * one,
            after_termination=after,
            after_termination_us=after * 2 * self._farthest,
            after_sync=0,
            after_sync_us=0,
            gc_runs=gc_runs,
            gc_time_us=gc_runs * GC_RUN_US,
            throttled=0,
            throttled_us=0,
            last_consensus_end_us=s * 1_000_000 if rounds else None,
        )


def commit_path_at(
    settings: SimulationSettings,
    member: str,
    s: int,
    local_proposals: int,
    proposals_at: Callable[[int], int] | None = None,
) -> CommitPathCounters:
    """The member's counters at second `s`.

    Args:
        settings: the group's settings.
        member: the member's UUID (lower case).
        s: Unix seconds.
        local_proposals: its transactions proposed so far (its LOCAL_PROPOSED).
        proposals_at: its LOCAL_PROPOSED at another second (for the scripted
            consistency windows); without it, no consistency waits.

    Returns:
        The counters as its server would show them.
    """
    return MemberCommitPath(settings, member).at(s, local_proposals, proposals_at)


def communication_of(settings: SimulationSettings) -> GroupCommunication | None:
    """replication_group_communication_information as every member of the group shows it.

    Returns:
        Its row as the members' version shows it (the module's docstring); None
        before 8.0.23 (no such table).
    """
    if not _at_least(settings, _COMMUNICATION_SINCE):
        return None
    leaders = tuple(sorted(settings.members))
    if not _at_least(settings, _SINGLE_LEADER_SINCE):
        return GroupCommunication(_WRITE_CONCURRENCY, _PROTOCOL_8_0_16, leaders, leaders, None)
    return GroupCommunication(_WRITE_CONCURRENCY, _PROTOCOL, leaders, leaders, False)
