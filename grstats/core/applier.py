"""Applier metrics (WL#15620): the shapes every layer shares.

Strategy: a source reads, per replication channel of the local member, the
row of performance_schema.replication_applier_metrics and, per worker, the
row of replication_applier_progress_by_worker; the publisher carries them in
the envelope's `ext.applier`, receivers keep them per member, and the two
tables and /metrics derive from these values. The shapes are the wire's
frozen dataclasses (`protocol.applier`): the section is a plain copy of the
two tables, so a second set of classes would only add a mapping to get wrong.

Sources:
- "native": the server has the WL#15620 tables (9.1 Enterprise, 9.7 every
  edition); every figure is MySQL's.
- "derived": a server without them. Only what its 8.0 tables tell honestly is
  filled (`DERIVED_CHANNEL_FIGURES`, and per worker its id, thread and
  whether it is idle); everything else is None (NULL), and
  grstats_member_status says APPLIER_METRICS_SOURCE = 'derived'.

Invariants: durations are nanoseconds and sizes bytes, as MySQL reports them;
None is "unknown", never 0; at most `protocol.MAX_APPLIER_CHANNELS` channels
and `protocol.MAX_APPLIER_WORKERS` workers reach the wire (`bounded` keeps the
first ones in (channel, worker id) order).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from protocol import (
    MAX_APPLIER_CHANNELS,
    MAX_APPLIER_WORKERS,
    ApplierChannel,
    ApplierReport,
    ApplierWorker,
    decode_applier,
    encode_applier,
)

__all__ = [
    "DERIVED",
    "DERIVED_CHANNEL_FIGURES",
    "NATIVE",
    "ApplierChannel",
    "ApplierWorker",
    "MemberApplier",
    "bounded",
    "decode_member_applier",
    "encode_member_applier",
]

MemberApplier = ApplierReport  # at_us, source, channels, workers
NATIVE: Final = "native"
DERIVED: Final = "derived"
#: What a pre-WL#15620 server tells (replication_applier_status_by_worker and,
#: for group_replication_applier, COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE).
DERIVED_CHANNEL_FIGURES: Final = ("ongoing", "pending")


def bounded(applier: MemberApplier) -> tuple[MemberApplier, int]:
    """`applier` within the wire's bounds, and how many workers were left out."""
    channels = tuple(sorted(applier.channels, key=lambda c: c.channel))[:MAX_APPLIER_CHANNELS]
    workers = tuple(sorted(applier.workers, key=lambda w: (w.channel, w.worker_id)))
    kept = workers[:MAX_APPLIER_WORKERS]
    return dataclasses.replace(applier, channels=channels, workers=kept), len(workers) - len(kept)


def encode_member_applier(applier: MemberApplier) -> list[Any]:
    """The envelope's `ext["applier"]` value (workers beyond the bound left out).

    Raises:
        ProtocolError: a figure out of the wire's bounds (see `protocol.applier`).
    """
    return encode_applier(bounded(applier)[0])


def decode_member_applier(value: object) -> MemberApplier:
    """`ext["applier"]` of a received envelope, validated.

    Raises:
        ProtocolError: the section is malformed (see `protocol.applier`).
    """
    return decode_applier(value)
