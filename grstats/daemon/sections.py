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
from typing import Any

import structlog

from grstats.core.ratelimit import RateLimit
from grstats.core.sample import LocalSample
from grstats.core.sections import Cadence, Section, declared
from protocol import ProtocolError

log = structlog.get_logger("grstats.daemon")


class ExtSections:
    """Builds an envelope's `ext` map from a sample (`core.sections`); counts what the wire
    refused.

    Attributes:
        sections_unsendable: samples sent without a section the wire refused, by
            section (every section with an encoder; ext.gtids: also its sets over
            protocol.MAX_GTID_STATE_TEXT).
        left_out: items left out of a section to fit the wire, by counter
            (`Section.left_out_counter`), summed.
        gtids_unsendable: the last ext.gtids was refused (/healthz says so).
    """

    def __init__(self) -> None:
        decl = declared()
        self.sections_unsendable: dict[str, int] = dict.fromkeys(decl.encoded, 0)
        self.left_out: dict[str, int] = dict.fromkeys(decl.left_out_counters, 0)
        self.gtids_unsendable = False
        self._unsendable_log = RateLimit(60.0)  # by section
        self._last: dict[str, tuple[object, object]] = {}  # ON_CHANGE: value, its encoding

    @property
    def applier_workers_dropped(self) -> int:
        """Workers past protocol.MAX_APPLIER_WORKERS left out of ext.applier, summed."""
        return self.left_out.get("applier_workers_dropped", 0)

    def ext(self, sample: LocalSample, *, gtids: bool) -> dict[str, object]:
        """The `ext` map for `sample`; `gtids`: this envelope carries the GTID sets."""
        ext: dict[str, object] = {}
        for section in declared().sections:
            gated = section.cadence is Cadence.GTID_INTERVAL
            if gated and not gtids:
                continue  # @@gtid_executed / @@gtid_purged ride with the stats' GTID sets only
            value = section.outgoing(sample)
            if value is None:
                continue
            if section.left_out is not None:
                self._count_left_out(section, value)
            wire = self._wire(section, value)
            if gated:
                self.gtids_unsendable = wire is None
            if wire is not None:
                ext[section.name] = wire
        return ext

    def _wire(self, section: Section, value: Any) -> object:
        """Its wire value; an ON_CHANGE section is encoded again only for a new value."""
        if section.encode is None:
            return value
        if section.cadence is not Cadence.ON_CHANGE:
            return self._encoded(section, value)
        last = self._last.get(section.name)
        if last is not None and (last[0] is value or last[0] == value):
            return last[1]
        wire = self._encoded(section, value)
        if wire is None:  # a refusal is not kept
            self._last.pop(section.name, None)
        else:
            self._last[section.name] = (value, wire)
        return wire

    def _count_left_out(self, section: Section, value: Any) -> None:
        """Items cut to the wire's bound: counted, logged once (a lasting shape of the server)."""
        assert section.left_out is not None
        items, dropped = section.left_out(value)
        if dropped:
            counter = section.left_out_counter
            if self.left_out.get(counter, 0) == 0:
                log.warning(
                    f"{section.name}.{counter.removeprefix(section.name + '_')}",
                    **{section.left_out_item: items},
                    dropped=dropped,
                    bound=items - dropped,  # what the wire keeps of them
                )
            self.left_out[counter] = self.left_out.get(counter, 0) + dropped

    def _encoded(self, section: Section, value: Any) -> object:
        """`encode(value)`, or None (counted, logged once a minute) when the wire refuses it."""
        assert section.encode is not None
        name = section.name
        try:
            return section.encode(value)
        except ProtocolError as exc:
            count = self.sections_unsendable[name] = self.sections_unsendable.get(name, 0) + 1
            suppressed = self._unsendable_log.admit(time.monotonic(), name)
            if suppressed is not None:  # a lasting fault: once a minute, whatever the period
                log.warning(
                    f"{name}.unsendable",
                    error=str(exc)[:200],
                    count=count,
                    suppressed=suppressed,
                )
            return None
