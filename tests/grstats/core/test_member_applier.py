"""WL#15620 tables in MemberTables for all members: local sample, remote ext.applier, rejects,
and their /metrics and `grstats applier --explain` views (three members, one slow)."""

from __future__ import annotations

import dataclasses
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import build_registry
from grstats.core import columns as col
from grstats.core.applier import ApplierChannel, MemberApplier, encode_member_applier
from grstats.core.applierrows import metrics_rows
from grstats.core.explain import applier_text
from grstats.core.lagrows import parse_timestamp
from grstats.core.tables import Accepted
from grstats.sources.simulated import GroupModel, SimulationSettings
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.member_tables import (
    GROUP,
    LOCAL,
    REMOTE,
    THIRD,
    local_sample,
    make_tables,
    online_tables,
    topic,
)

SETTINGS = SimulationSettings(group=GROUP, members=(LOCAL, REMOTE, THIRD), slow_member=THIRD)
HOUR_END = SETTINGS.epoch_s + 2 * 86_400 + 10 * 3_600 + 3_599  # end of a hot hour, day 3


def _envelope(member: str, applier: Any, seq: int = 1) -> bytes:
    ext: dict[str, Any] = {"communication_stack": "MySQL"}
    if applier is not None:
        ext["applier"] = applier
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=MemberInfo(member, "10.0.0.2", 3306, "ONLINE", "SECONDARY", "9.7.0", "x:1"),
            view_id="17000000:3",
            incarnation=7,
            seq=seq,
            sent_us=HOUR_END * 1_000_000,
            stats=encode_pipeline_stats(PipelineStats(transactions_certified=5)),
            ext=ext,
        )
    )


def _three_members() -> Any:
    model = GroupModel(SETTINGS)
    t = HOUR_END * 1_000_000
    tables = make_tables()
    tables.set_local(
        dataclasses.replace(local_sample(), applier=model.applier_at(LOCAL, t)),
        incarnation=1,
        seq=1,
    )
    for member in (REMOTE, THIRD):
        wire = encode_member_applier(model.applier_at(member, t))
        assert isinstance(tables.receive(topic(member), _envelope(member, wire), t), Accepted)
    return tables, tables.snapshot(t + 100_000), model


def test_every_member_has_its_rows_in_both_tables() -> None:
    _, snapshot, model = _three_members()
    metrics = {r[col.MEMBER_ID]: r for r in snapshot.table("replication_applier_metrics")}
    assert sorted(metrics) == sorted([LOCAL, REMOTE, THIRD])
    t = HOUR_END * 1_000_000
    for member, row in metrics.items():
        assert row[col.CHANNEL_NAME] == "group_replication_applier"
        assert (
            row[col.TRANSACTIONS_COMMITTED_COUNT] == model.stats_at(member, t).transactions_applied
        )
        assert list(row) == list(col.APPLIER_METRICS.names)
    workers = [
        (r[col.MEMBER_ID], r[col.WORKER_ID])
        for r in snapshot.table("replication_applier_progress_by_worker")
    ]
    assert len(workers) == 12  # 4 workers x 3 members
    sources = {
        r[col.MEMBER_ID]: r[col.APPLIER_METRICS_SOURCE]
        for r in snapshot.table("grstats_member_status")
    }
    assert sources == {LOCAL: "native", REMOTE: "native", THIRD: "native"}


def test_a_malformed_section_is_counted_and_the_stats_still_apply() -> None:
    tables = online_tables()
    result = tables.receive(topic(REMOTE), _envelope(REMOTE, [1, "bad"]), HOUR_END * 1_000_000)
    assert isinstance(result, Accepted)
    snapshot = tables.snapshot(HOUR_END * 1_000_000)
    assert snapshot.counters.malformed["applier"] == 1
    assert snapshot.table("replication_applier_metrics") == ()
    assert any(r[col.MEMBER_ID] == REMOTE for r in snapshot.table("replication_group_member_stats"))


def test_an_envelope_without_the_section_clears_the_members_rows() -> None:
    tables, _, _ = _three_members()
    tables.receive(topic(REMOTE), _envelope(REMOTE, None, seq=2), HOUR_END * 1_000_000 + 1)
    snapshot = tables.snapshot(HOUR_END * 1_000_000 + 2)
    assert REMOTE not in {r[col.MEMBER_ID] for r in snapshot.table("replication_applier_metrics")}


def test_metrics_are_counters_in_seconds_with_member_and_channel_labels() -> None:
    _, snapshot, _ = _three_members()
    text = generate_latest(build_registry(lambda: snapshot)).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["grstats_applier_transactions_committed"].type == "counter"
    assert families["grstats_applier_wait_seconds"].type == "counter"
    assert families["grstats_applier_transactions_pending"].type == "gauge"
    row = next(
        r for r in snapshot.table("replication_applier_metrics") if r[col.MEMBER_ID] == THIRD
    )
    samples = {
        (s.name, frozenset(s.labels.items())): s.value for f in families.values() for s in f.samples
    }
    labels = {"group": GROUP, "member_id": THIRD, "channel_name": "group_replication_applier"}
    key = frozenset({**labels, "wait": "commit_order"}.items())
    assert samples[("grstats_applier_wait_seconds_total", key)] == (
        row[col.WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME] / 1e9
    )
    active = ("grstats_applier_active_seconds_total", frozenset(labels.items()))
    assert samples[active] == row[col.TOTAL_ACTIVE_TIME_DURATION] / 1e9
    worker = frozenset({**labels, "worker_id": "1"}.items())
    assert samples[("grstats_applier_worker_ongoing_bytes", worker)] == 1200


def test_explain_gives_the_slow_member_a_different_verdict() -> None:
    _, snapshot, _ = _three_members()
    text = applier_text(
        sorted(snapshot.table("replication_applier_metrics"), key=lambda r: str(r[col.MEMBER_ID]))
    )
    lines = [line for line in text.splitlines() if line.endswith(("starved", "commit_order"))]
    assert lines == [
        f"{LOCAL} group_replication_applier: starved",
        f"{REMOTE} group_replication_applier: starved",
        f"{THIRD} group_replication_applier: commit_order",
    ]
    assert "replica_preserve_commit_order" in text


def test_last_applier_start_prints_as_mysqls_timestamp_without_fraction() -> None:
    # MySQL declares LAST_APPLIER_START TIMESTAMP (applier_metrics_pfs_table.cc): whole
    # seconds, printed without '.000000'; /metrics still reads it back
    start_us = 1_795_424_400_000_000  # 2026-11-23 09:00:00 UTC
    applier = MemberApplier(1, "native", (ApplierChannel("ch", last_start_us=start_us),), ())
    (row,) = metrics_rows(LOCAL, applier)
    assert row[col.LAST_APPLIER_START] == "2026-11-23 09:00:00"
    assert parse_timestamp("2026-11-23 09:00:00") == start_us
    assert parse_timestamp("0000-00-00 00:00:00") is None
