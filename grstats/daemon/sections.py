"""The `ext` sections of the local member's envelope, and what the wire refused of them.

Strategy: a figure the wire refuses (a `ProtocolError` from a section's
encoder) drops that section from the envelope, never the stats: the sample
still goes out and into the history. Each refusal is counted by section
(`sections_unsendable`, exported on /metrics) and logged at most once a minute
per section, whatever the period. The GTID state rides only with the stats'
GTID sets; while it is over its bound, `gtids_unsendable` degrades /healthz.
`ext.commit_path_comm` is encoded again only when the server's row changed
(it stands for days): the last encoding is reused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import structlog

from grstats.core.applier import bounded, encode_member_applier
from grstats.core.lag import MemberLag, encode_member_lag
from grstats.core.ratelimit import RateLimit
from grstats.core.sample import LocalSample
from protocol import (
    MAX_APPLIER_WORKERS,
    CommitPathReport,
    GroupCommunication,
    ProtocolError,
    encode_commit_path,
    encode_commit_path_comm,
    encode_gtid_state,
)

T = TypeVar("T")

log = structlog.get_logger("grstats.daemon")


class ExtSections:
    """Builds an envelope's `ext` map from a sample; counts what the wire refused.

    Attributes:
        sections_unsendable: samples sent without a section the wire refused, by
            section (ext.gtids: also its sets over protocol.MAX_GTID_STATE_TEXT).
        applier_workers_dropped: workers past protocol.MAX_APPLIER_WORKERS left
            out of ext.applier, summed.
        gtids_unsendable: the last ext.gtids was refused (/healthz says so).
    """

    def __init__(self) -> None:
        self.sections_unsendable: dict[str, int] = {"lag": 0, "applier": 0, "gtids": 0}
        self.applier_workers_dropped = 0
        self.gtids_unsendable = False
        self._unsendable_log = RateLimit(60.0)  # by section
        self._comm: tuple[GroupCommunication, object] | None = None  # the last one sent

    def ext(self, sample: LocalSample, *, gtids: bool) -> dict[str, object]:
        """The `ext` map for `sample`; `gtids`: this envelope carries the GTID sets."""
        ext: dict[str, object] = {"communication_stack": sample.member.communication_stack}
        if sample.lag:
            figures = MemberLag(sample.sampled_at_us, sample.lag)
            lag = self._encoded("lag", encode_member_lag, figures)
            if lag is not None:
                ext["lag"] = lag
        applier = self._applier(sample)
        if applier is not None:
            ext["applier"] = applier
        if gtids and sample.gtid_state is not None:
            # @@gtid_executed / @@gtid_purged ride with the stats' GTID sets only
            gtid_state = self._encoded("gtids", encode_gtid_state, sample.gtid_state)
            self.gtids_unsendable = gtid_state is None
            if gtid_state is not None:
                ext["gtids"] = gtid_state
        if sample.commit_path is not None:
            report = CommitPathReport(sample.sampled_at_us, sample.commit_path)
            commit_path = self._encoded("commit_path", encode_commit_path, report)
            if commit_path is not None:
                ext["commit_path"] = commit_path
        if sample.communication is not None:
            comm = self._communication(sample.communication)
            if comm is not None:
                ext["commit_path_comm"] = comm
        return ext

    def _communication(self, communication: GroupCommunication) -> object:
        """`ext.commit_path_comm`, encoded again only for a new row (a refusal is not kept)."""
        last = self._comm
        if last is not None and (last[0] is communication or last[0] == communication):
            return last[1]
        comm = self._encoded("commit_path_comm", encode_commit_path_comm, communication)
        self._comm = None if comm is None else (communication, comm)
        return comm

    def _applier(self, sample: LocalSample) -> object:
        """`ext.applier`, its workers cut to the wire's bound (counted, logged once)."""
        if sample.applier is None:
            return None
        applier, dropped = bounded(sample.applier)
        if dropped:
            if self.applier_workers_dropped == 0:  # a lasting shape of the server: once
                log.warning(
                    "applier.workers_dropped",
                    workers=len(sample.applier.workers),
                    dropped=dropped,
                    bound=MAX_APPLIER_WORKERS,
                )
            self.applier_workers_dropped += dropped
        return self._encoded("applier", encode_member_applier, applier)

    def _encoded(self, section: str, encode: Callable[[T], object], value: T) -> object:
        """`encode(value)`, or None (counted, logged once a minute) when the wire refuses it."""
        try:
            return encode(value)
        except ProtocolError as exc:
            count = self.sections_unsendable[section] = self.sections_unsendable.get(section, 0) + 1
            suppressed = self._unsendable_log.admit(time.monotonic(), section)
            if suppressed is not None:  # a lasting fault: once a minute, whatever the period
                log.warning(
                    f"{section}.unsendable",
                    error=str(exc)[:200],
                    count=count,
                    suppressed=suppressed,
                )
            return None
