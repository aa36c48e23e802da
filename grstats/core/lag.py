"""Replication lag by stage (WL#7374 + WL#7319): the shapes every layer shares.

Strategy: a source reads, per replication channel of the local member, the
transaction last queued / processed / applied and the one currently being
queued / processed / applied, each with its original and immediate commit
timestamps and the start/end of the stage (performance_schema's
replication_connection_status, replication_applier_status_by_coordinator and
replication_applier_status_by_worker). The publisher carries them in the
envelope's `ext.lag`, receivers keep them per member, and the lag table, the
metrics and the history derive their figures from these values.

Invariants: timestamps are microseconds since the epoch, UTC, on the clock of
the server that wrote them (original: the source of the transaction;
immediate and stage times: the member itself); MySQL's all-zero timestamp
("none") is None here, never 0; an empty GTID means "no transaction".
"""

from __future__ import annotations

from dataclasses import dataclass, field

APPLIER_CHANNEL = "group_replication_applier"
RECOVERY_CHANNEL = "group_replication_recovery"


@dataclass(frozen=True, slots=True)
class StageTrx:
    """One transaction at one stage (queue, buffer/process, apply).

    Attributes:
        gtid: the transaction's GTID text ("" when none, "ANONYMOUS" possible).
        original_commit_us: when it committed on its original source.
        immediate_commit_us: when it committed on the immediate source.
        start_us: when this stage started for it.
        end_us: when this stage ended for it (None while in progress).
    """

    gtid: str = ""
    original_commit_us: int | None = None
    immediate_commit_us: int | None = None
    start_us: int | None = None
    end_us: int | None = None


@dataclass(frozen=True, slots=True)
class ChannelLag:
    """One channel's stage view of the local member.

    Attributes:
        channel: group_replication_applier, or group_replication_recovery while RECOVERING.
        receiver_on: the connection (receiver) thread's SERVICE_STATE is ON; None unknown.
        applier_on: the applier (coordinator/SQL) thread's SERVICE_STATE is ON; None unknown.
        last_queued, queueing: replication_connection_status.
        last_processed, processing: replication_applier_status_by_coordinator.
        last_applied: the worker whose last applied transaction ended last.
        applying: the busy worker that has been applying longest (oldest
            immediate commit among busy workers, as MySQL Shell picks it).
        workers: applier workers; busy_workers: those applying right now.
    """

    channel: str = APPLIER_CHANNEL
    receiver_on: bool | None = None
    applier_on: bool | None = None
    last_queued: StageTrx = field(default_factory=StageTrx)
    queueing: StageTrx = field(default_factory=StageTrx)
    last_processed: StageTrx = field(default_factory=StageTrx)
    processing: StageTrx = field(default_factory=StageTrx)
    last_applied: StageTrx = field(default_factory=StageTrx)
    applying: StageTrx = field(default_factory=StageTrx)
    workers: int = 0
    busy_workers: int = 0
