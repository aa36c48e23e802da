"""Replication lag by stage (WL#7374 + WL#7319): the shapes every layer shares.

Strategy: a source reads, per replication channel of the local member, the
transaction last queued / processed / applied and the one currently being
queued / processed / applied, each with its original and immediate commit
timestamps and the start/end of the stage (performance_schema's
replication_connection_status, replication_applier_status_by_coordinator and
replication_applier_status_by_worker). The publisher carries them in the
envelope's `ext.lag`, receivers keep them per member, and the lag table, the
metrics and the history derive their figures from these values. The shapes
are the wire's frozen dataclasses (`protocol.lag`), as `core.applier` uses
`protocol.applier`: the section is a plain copy of what the source read, so
a second set of classes would only add a mapping to get wrong.

`StageTrx` (`protocol.LagStage`), one transaction at one stage (queue,
buffer/process, apply): `gtid` ("" when none, "ANONYMOUS" possible),
`original_commit_us` (when it committed on its original source),
`immediate_commit_us` (on the immediate source), `start_us` and `end_us` of
the stage for it (`end_us` None while in progress).

`ChannelLag` (`protocol.LagChannel`), one channel's stage view of the local
member: `channel` (group_replication_applier, or group_replication_recovery
while RECOVERING); `receiver_on` / `applier_on` (the connection and applier
threads' SERVICE_STATE is ON; None unknown); `last_queued`, `queueing`
(replication_connection_status); `last_processed`, `processing`
(replication_applier_status_by_coordinator); `last_applied` (the worker
whose last applied transaction ended last); `applying` (the busy worker that
has been applying longest: oldest immediate commit among busy workers, as
MySQL Shell picks it); `workers` and `busy_workers` (those applying now).

`MemberLag` (`protocol.LagReport`): one member's figures as read at `at_us`
(that member's clock: MySQL Shell's NOW(6) there), at most
`protocol.MAX_LAG_CHANNELS` channels.

Invariants: timestamps are microseconds since the epoch, UTC, on the clock of
the server that wrote them (original: the source of the transaction;
immediate and stage times: the member itself); MySQL's all-zero timestamp
("none") is None here, never 0; an empty GTID means "no transaction".
"""

from __future__ import annotations

from typing import Any, Final

from protocol import LagChannel, LagReport, LagStage, decode_lag, encode_lag

__all__ = [
    "APPLIER_CHANNEL",
    "RECOVERY_CHANNEL",
    "ChannelLag",
    "MemberLag",
    "StageTrx",
    "decode_member_lag",
    "encode_member_lag",
]

APPLIER_CHANNEL: Final = "group_replication_applier"
RECOVERY_CHANNEL: Final = "group_replication_recovery"

StageTrx = LagStage  # gtid, original_commit_us, immediate_commit_us, start_us, end_us
ChannelLag = LagChannel  # channel, receiver_on, applier_on, workers, busy_workers, stages
MemberLag = LagReport  # at_us, channels


def encode_member_lag(lag: MemberLag) -> list[Any]:
    """The envelope's `ext["lag"]` value for `lag`.

    Raises:
        ProtocolError: a figure out of the wire's bounds (see `protocol.lag`).
    """
    return encode_lag(lag)


def decode_member_lag(value: object) -> MemberLag:
    """`ext["lag"]` of a received envelope, validated.

    Raises:
        ProtocolError: the section is malformed (see `protocol.lag`).
    """
    return decode_lag(value)
