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
from typing import Any

from protocol import LagChannel, LagReport, LagStage, decode_lag, encode_lag

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


@dataclass(frozen=True, slots=True)
class MemberLag:
    """One member's lag figures as read at `at_us` (that member's clock).

    Attributes:
        at_us: when the member read them (MySQL Shell's NOW(6) on that member).
        channels: per channel, at most `protocol.MAX_LAG_CHANNELS`.
    """

    at_us: int
    channels: tuple[ChannelLag, ...] = ()


_STAGE_FIELDS = (
    "last_queued",
    "queueing",
    "last_processed",
    "processing",
    "last_applied",
    "applying",
)


def _stage_to_wire(s: StageTrx) -> LagStage:
    return LagStage(s.gtid, s.original_commit_us, s.immediate_commit_us, s.start_us, s.end_us)


def _stage_from_wire(s: LagStage) -> StageTrx:
    return StageTrx(s.gtid, s.original_commit_us, s.immediate_commit_us, s.start_us, s.end_us)


def to_report(lag: MemberLag) -> LagReport:
    """The wire form of `lag` (for `protocol.encode_lag`)."""
    return LagReport(
        at_us=lag.at_us,
        channels=tuple(
            LagChannel(
                channel=c.channel,
                receiver_on=c.receiver_on,
                applier_on=c.applier_on,
                workers=c.workers,
                busy_workers=c.busy_workers,
                **{f: _stage_to_wire(getattr(c, f)) for f in _STAGE_FIELDS},
            )
            for c in lag.channels
        ),
    )


def from_report(report: LagReport) -> MemberLag:
    """The core form of a decoded `ext.lag` section."""
    return MemberLag(
        at_us=report.at_us,
        channels=tuple(
            ChannelLag(
                channel=c.channel,
                receiver_on=c.receiver_on,
                applier_on=c.applier_on,
                workers=c.workers,
                busy_workers=c.busy_workers,
                **{f: _stage_from_wire(getattr(c, f)) for f in _STAGE_FIELDS},
            )
            for c in report.channels
        ),
    )


def encode_member_lag(lag: MemberLag) -> list[Any]:
    """The envelope's `ext["lag"]` value for `lag`.

    Raises:
        ProtocolError: a figure out of the wire's bounds (see `protocol.lag`).
    """
    return encode_lag(to_report(lag))


def decode_member_lag(value: object) -> MemberLag:
    """`ext["lag"]` of a received envelope, validated.

    Raises:
        ProtocolError: the section is malformed (see `protocol.lag`).
    """
    return from_report(decode_lag(value))
