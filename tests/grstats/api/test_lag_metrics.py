"""/metrics for replication_group_member_lag: stage gauge, mysqld_exporter timestamps, counter."""

from __future__ import annotations

import dataclasses

from grstats.core.lag import ChannelLag, MemberLag, StageTrx
from grstats.core.lagrows import lag_rows
from grstats.core.snapshot import DaemonCounters, with_tables
from tests.fixtures.metrics_snapshot import GROUP, M1, M2, metric_samples, sample_snapshot

T = 1_700_000_000_000_000
BUSY = ChannelLag(
    receiver_on=True,
    applier_on=True,
    last_queued=StageTrx(f"{GROUP}:12", T, T, T + 100_000, T + 500_000),
    last_applied=StageTrx(f"{GROUP}:10", T - 2_000_000, T, T + 1_000_000, T + 1_750_000),
    applying=StageTrx(f"{GROUP}:11", T - 1_500_000, T - 1_250_000, T + 1_800_000, None),
)
OFF = dataclasses.replace(BUSY, channel="group_replication_recovery", applier_on=False)


def _lag_snapshot() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    rows = (
        *lag_rows(M1, MemberLag(T + 2_000_000, (BUSY,)), offset_s=0.0, spread_s=0.25),
        *lag_rows(M2, MemberLag(T + 2_000_000, (OFF,)), offset_s=-0.25, spread_s=0.25),
    )
    snapshot = with_tables(
        dataclasses.replace(sample_snapshot(), counters=DaemonCounters(malformed={"lag": 3})),
        {"replication_group_member_lag": rows},
    )
    return metric_samples(snapshot)


def _labels(member: str, channel: str = "group_replication_applier", **extra: str) -> frozenset:
    return frozenset(
        {"group": GROUP, "member_id": member, "channel_name": channel, **extra}.items()
    )


def test_stage_lags_are_one_gauge_told_apart_by_stage() -> None:
    samples = _lag_snapshot()
    name = "grstats_member_replication_lag_seconds"
    assert samples[(name, _labels(M1, stage="applying"))] == 3.25
    assert samples[(name, _labels(M1, stage="queue"))] == 0.5
    assert samples[(name, _labels(M1, stage="apply"))] == 3.75
    assert samples[("grstats_member_apply_time_seconds", _labels(M1))] == 0.75


def test_a_channel_with_a_thread_off_has_no_applying_series() -> None:
    samples = _lag_snapshot()
    recovery = _labels(M2, "group_replication_recovery", stage="applying")
    assert ("grstats_member_replication_lag_seconds", recovery) not in samples
    assert (
        samples[("grstats_member_clock_offset_seconds", _labels(M2, "group_replication_recovery"))]
        == -0.25
    )


def test_timestamps_use_mysqld_exporter_names_in_unix_seconds() -> None:
    samples = _lag_snapshot()
    end = "mysql_perf_schema_last_applied_transaction_end_apply_timestamp_seconds"
    assert samples[(end, _labels(M1))] == 1_700_000_001.75
    start = "mysql_perf_schema_applying_transaction_start_apply_timestamp_seconds"
    assert samples[(start, _labels(M1))] == 1_700_000_001.8


def test_lag_malformed_counter() -> None:
    assert _lag_snapshot()[("grstats_envelopes_lag_malformed_total", frozenset())] == 3
