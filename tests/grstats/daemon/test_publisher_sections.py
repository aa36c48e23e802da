"""An `ext` section the wire refuses: the stats still go out; the refusal is counted, exported."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from grstats.api.metrics import build_registry
from grstats.core.snapshot import DaemonFigures
from grstats.core.tables import MemberTables
from grstats.daemon.health import DaemonParts, assemble_snapshot
from protocol import GtidSet, GtidState, decode_envelope, decode_gtid_state
from tests.fixtures.member_lag import APPLIER
from tests.fixtures.member_tables import LOCAL, T0, local_sample, make_tables
from tests.fixtures.publishing import RecordingBus, Sink, make_publisher

# protocol/lag.py allows channel names of [0-9A-Za-z_.-] only: a space is refused.
UNSENDABLE = dataclasses.replace(APPLIER, channel="no spaces allowed")


def test_refused_lag_section_is_counted_and_the_stats_still_recorded(tmp_path: Path) -> None:
    sink = Sink()
    sample = dataclasses.replace(local_sample(), sampled_at_us=T0, lag=(UNSENDABLE,))
    publisher = make_publisher(tmp_path, sink, sample)
    bus = RecordingBus()

    async def three_ticks() -> None:
        for tick in range(3):
            await publisher.tick(tick, bus)  # type: ignore[arg-type]

    asyncio.run(three_ticks())
    assert publisher.sections_unsendable == {
        "lag": 3,
        "applier": 0,
        "gtids": 0,
        "commit_path": 0,
        "commit_path_comm": 0,
    }
    assert [row.member_id for row in sink.rows] == [LOCAL] * 3  # the samples were not lost
    stats = [decode_envelope(p) for t, p in bus.sent if t.endswith("/stats")]
    assert len(stats) == 3  # published, without the refused section
    assert all("lag" not in envelope.ext for envelope in stats)

    tables: MemberTables = make_tables()
    snapshot = tables.snapshot(T0, DaemonFigures(sections_unsendable=publisher.sections_unsendable))
    assert snapshot.counters.as_dict()["ext_lag_unsendable"] == 3
    text = generate_latest(build_registry(lambda: snapshot)).decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("grstats_ext_sections_unsendable_total", (("section", "lag"),))] == 3
    assert samples[("grstats_ext_sections_unsendable_total", (("section", "applier"),))] == 0


def _gtid_sample(uuids: int) -> object:
    executed = GtidSet((f"{i:08x}-0000-0000-0000-000000000000", "", 1, 1) for i in range(uuids))
    return dataclasses.replace(
        local_sample(), sampled_at_us=T0, gtid_state=GtidState(T0, executed, GtidSet())
    )


def test_gtid_state_rides_only_with_the_gtid_sets(tmp_path: Path) -> None:
    publisher = make_publisher(tmp_path, Sink(), _gtid_sample(3))
    bus = RecordingBus()

    async def two_ticks() -> None:
        for tick in range(2):  # tick 0 carries the GTID sets, tick 1 does not
            await publisher.tick(tick, bus)  # type: ignore[arg-type]

    asyncio.run(two_ticks())
    sent = [(t.rsplit("/", 1)[1], decode_envelope(p)) for t, p in bus.sent if "/status" not in t]
    stats = [e for kind, e in sent if kind == "stats"]
    gtids = [e for kind, e in sent if kind == "gtids"]
    assert ["gtids" in e.ext for e in stats] == [True, False]
    assert len(gtids) == 1 and decode_gtid_state(gtids[0].ext["gtids"]).executed.count() == 3


def test_gtid_state_over_the_bound_is_left_out_and_counted(tmp_path: Path) -> None:
    # 700 UUID lines of 38 characters + ",\n": about 28 KB > MAX_GTID_STATE_TEXT (24 KiB)
    publisher = make_publisher(tmp_path, Sink(), _gtid_sample(700))
    bus = RecordingBus()
    asyncio.run(publisher.tick(0, bus))  # type: ignore[arg-type]
    assert publisher.sections_unsendable["gtids"] == 1
    stats = [decode_envelope(p) for t, p in bus.sent if t.endswith("/stats")]
    assert len(stats) == 1 and "gtids" not in stats[0].ext
    assert stats[0].member.id == LOCAL  # the stats went out anyway


def test_an_unsendable_gtid_state_degrades_healthz_until_one_fits(tmp_path: Path) -> None:
    tables = make_tables()
    publisher = make_publisher(tmp_path, Sink(), _gtid_sample(700), _gtid_sample(3), tables=tables)
    bus = RecordingBus()

    def health() -> tuple[tuple[str, ...], float]:
        snap = assemble_snapshot(tables, DaemonParts(publisher=publisher))
        return snap.health.details(), snap.health.status()["gtids_unsendable"]

    asyncio.run(publisher.tick(0, bus))  # type: ignore[arg-type]
    reasons, gauge = health()
    assert gauge == 1
    assert "gtids: local GTID state over the ext.gtids bound, not sent" in reasons
    # one gtid_interval (30 ticks of 1 s) later the GTID sets go out again
    asyncio.run(publisher.tick(30, bus))  # type: ignore[arg-type]
    reasons, gauge = health()
    assert gauge == 0 and not any(r.startswith("gtids:") for r in reasons)


def test_a_refused_section_is_logged_once_a_minute_whatever_the_period(tmp_path: Path) -> None:
    # 61 refusals in far less than a minute (ticks of a short period): one line,
    # not one per 60 refusals (which is "once a minute" only at period 1 s)
    sample = dataclasses.replace(local_sample(), sampled_at_us=T0, lag=(UNSENDABLE,))
    publisher = make_publisher(tmp_path, Sink(), sample)
    bus = RecordingBus()

    async def ticks() -> None:
        for tick in range(61):
            await publisher.tick(tick, bus)  # type: ignore[arg-type]

    with capture_logs() as events:
        asyncio.run(ticks())
    assert publisher.sections_unsendable["lag"] == 61
    assert [e["event"] for e in events if e["event"] == "lag.unsendable"] == ["lag.unsendable"]
