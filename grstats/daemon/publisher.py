"""The local member's voice on the bus: one envelope per period, its status, its history.

Strategy: every tick the publisher samples the source, bumps `seq` (published
or not, so history rows are never duplicates), hands the sample to the tables
(the local row stays live even while the broker is away), publishes one
envelope while the member is ONLINE or RECOVERING, and records the local
history row straight from the sample.

GTID schedule (MySQL's "send identifiers" flag, PROTOCOL.md section 5): the
flag is raised every `gtid_interval` worth of ticks and after every
(re)connect, and stays raised until a message actually carries the sets. A
flag-'1' envelope is also published, retained, on the `gtids` topic so that a
receiver starting later shows our GTID columns at once.

Departure (MySQL removes a member that left at the next view change): when
the source says the member left (OFFLINE or ERROR), the publisher clears its
retained stats and announces `offline` at once, so every other member drops
it instead of showing it UNREACHABLE for `forget_after`; when it comes back it
announces `online` and publishes again. Silence without a word (a crash)
still shows UNREACHABLE, then the broker's delayed Will says `offline`.
"""

from __future__ import annotations

import dataclasses
import random

import structlog

from grstats.bus.client import Bus, LastWill
from grstats.config import Settings
from grstats.core import topics
from grstats.core.sample import LocalSample, in_group
from grstats.core.tables import MemberTables
from grstats.daemon.health import HistorySink, now_us
from grstats.daemon.sections import ExtSections
from grstats.sources.base import Source
from protocol import Envelope, MemberInfo, encode_envelope, encode_pipeline_stats

log = structlog.get_logger("grstats.daemon")


class Publisher:
    """Samples the local member and publishes it.

    Args:
        settings: the validated configuration.
        source: the local member's source.
        tables: the daemon's tables (the local row is set here).
        history: where local history rows go, or None.
    """

    def __init__(
        self,
        settings: Settings,
        source: Source,
        tables: MemberTables,
        history: HistorySink | None,
    ) -> None:
        self.settings = settings
        self.source = source
        self.tables = tables
        self.history = history
        self.group = settings.member.group
        self.member_id = settings.member.id
        self.incarnation = random.getrandbits(64)
        self.seq = 0
        self.published = 0
        self.sections = ExtSections()  # the envelope's ext map; what the wire refused
        self._send_gtids = True
        self._gtid_every = max(1, round(settings.publish.gtid_interval / settings.publish.period))
        self._next_gtid_tick = 0  # robust to skipped ticks, unlike tick % gtid_every
        self._in_group: bool | None = None  # what we last announced on the status topic

    @property
    def sections_unsendable(self) -> dict[str, int]:
        """Samples sent without a section the wire refused, by section."""
        return self.sections.sections_unsendable

    @property
    def left_out(self) -> dict[str, int]:
        """Items left out of sections to fit the wire, by counter (applier_workers_dropped)."""
        return self.sections.left_out

    @property
    def gtids_unsendable(self) -> bool:
        """The last ext.gtids was refused (over protocol.MAX_GTID_STATE_TEXT)."""
        return self.sections.gtids_unsendable

    def topic(self, kind: str) -> str:
        """Our topic of `kind`."""
        return topics.topic(self.settings.bus.prefix, self.group, self.member_id, kind)

    def will(self) -> LastWill:
        """`offline`, delayed by forget_after so a crash first shows UNREACHABLE."""
        return LastWill(
            self.topic(topics.STATUS_KIND),
            topics.STATUS_OFFLINE,
            delay_s=max(1, round(self.settings.publish.forget_after)),
        )

    def adopt_identity(self, sample: LocalSample) -> bool:
        """Take group and member id from the server when the config left them out.

        Returns:
            True once both are known.
        """
        member_id = sample.member.server_uuid or sample.member.member_id
        if sample.member.group_name and member_id:
            self.group = sample.member.group_name
            self.member_id = member_id
            return True
        return False

    async def on_connect(self, bus: Bus) -> None:
        """After every (re)connect: resend GTIDs and say whether we are in the group."""
        self._send_gtids = True  # the broker may have lost our retained messages
        if self._in_group is not False:
            await bus.publish(
                self.topic(topics.STATUS_KIND), topics.STATUS_ONLINE, qos=1, retain=True
            )

    async def tick(self, tick: int, bus: Bus | None) -> None:
        """Sample, publish and record once.

        Args:
            tick: the tick number (drives the GTID schedule).
            bus: the bus, or None before it exists.
        """
        if tick >= self._next_gtid_tick:
            self._send_gtids = True
            self._next_gtid_tick = tick + self._gtid_every
        sample = await self.source.sample(now_us())
        self.seq += 1
        self.tables.set_local(sample, incarnation=self.incarnation, seq=self.seq)
        joined = in_group(sample.member.state)
        connected = bus is not None and bus.connected.is_set()
        if connected and bus is not None and joined != self._in_group:
            await self._announce(bus, in_group=joined)
        if not joined:
            return
        sent_gtids = await self._publish(sample, bus) if connected and bus else self._send_gtids
        if self.history is not None:
            stats = dataclasses.replace(sample.stats, transaction_gtids_present=sent_gtids)
            envelope = self.envelope(sample, sent_us=sample.sampled_at_us, stats=b"")
            # the replay has just stepped and taken our own message (set_local, same key)
            row = self.tables.history_row(envelope, stats, sample.sampled_at_us, local=True)
            self.history.record(row)

    async def _announce(self, bus: Bus, *, in_group: bool) -> None:
        if in_group:
            ok = await bus.publish(
                self.topic(topics.STATUS_KIND), topics.STATUS_ONLINE, qos=1, retain=True
            )
            log.info("member.joined", member=self.member_id)
        else:
            ok = await self.withdraw(bus)
            log.info("member.left", member=self.member_id)
        if ok:
            self._in_group = in_group

    async def withdraw(self, bus: Bus) -> bool:
        """Clear our retained stats and GTIDs and announce `offline` (leaving, stopping)."""
        wait = max(1.0, self.settings.publish.period)
        await bus.publish(self.topic(topics.STATS_KIND), b"", retain=True, timeout=wait)
        await bus.publish(self.topic(topics.GTIDS_KIND), b"", retain=True, timeout=wait)
        return await bus.publish(
            self.topic(topics.STATUS_KIND), topics.STATUS_OFFLINE, qos=1, retain=True, timeout=wait
        )

    async def _publish(self, sample: LocalSample, bus: Bus) -> bool:
        """Publish one envelope; returns whether it carried the GTID sets."""
        gtids = self._send_gtids
        stats = dataclasses.replace(
            sample.stats,
            transaction_gtids_present=gtids,
            transactions_committed_all_members=(
                sample.stats.transactions_committed_all_members if gtids else b""
            ),
            transaction_last_conflict_free=(
                sample.stats.transaction_last_conflict_free if gtids else b""
            ),
            sent_timestamp=now_us(),
        )
        ext = self.sections.ext(sample, gtids=gtids)
        envelope = self.envelope(
            sample, sent_us=now_us(), stats=encode_pipeline_stats(stats), ext=ext
        )
        payload = encode_envelope(envelope)
        # A stalled broker must not hold the tick loop longer than about a period.
        wait = max(1.0, self.settings.publish.period)
        stats_topic = self.topic(topics.STATS_KIND)
        # Retained copies of a member that died expire with it (MQTT 5 message expiry).
        expiry = max(1, round(self.settings.publish.forget_after))
        if not await bus.publish(
            stats_topic, payload, qos=0, retain=True, timeout=wait, expiry_s=expiry
        ):
            return False
        self.published += 1
        if gtids:
            self._send_gtids = False
            gtids_topic = self.topic(topics.GTIDS_KIND)
            # re-published every gtid_interval only: keep it at least two of those
            keep = max(expiry, round(2 * self.settings.publish.gtid_interval))
            await bus.publish(gtids_topic, payload, qos=0, retain=True, timeout=wait, expiry_s=keep)
        return gtids

    def envelope(
        self,
        sample: LocalSample,
        *,
        sent_us: int,
        stats: bytes,
        ext: dict[str, object] | None = None,
    ) -> Envelope:
        """The envelope for the local member: what is published and what history records."""
        m = sample.member
        return Envelope(
            group=self.group,
            member=MemberInfo(
                id=self.member_id,
                host=m.host,
                port=m.port or 0,
                state=m.state,
                role=m.role,
                version=m.version,
                gcs_id=m.gcs_id,
            ),
            view_id=m.view_id,
            incarnation=self.incarnation,
            seq=self.seq,
            sent_us=sent_us,
            stats=stats,
            ext={} if ext is None else ext,
        )
