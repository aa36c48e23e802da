"""/metrics for grstats_flow_control: bottleneck flag by kind, quota, throttled seconds, ETA."""

from __future__ import annotations

import math

from grstats.core import columns as col
from grstats.core.snapshot import with_tables
from tests.fixtures.metrics_snapshot import (
    GROUP,
    M1,
    M2,
    metric_samples,
    metric_types,
    sample_snapshot,
)


def _row(member: str, bottleneck: str, eta: float | None, throttled: float) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(col.FLOW_CONTROL.names)
    row.update(
        {
            col.MEMBER_ID: member,
            col.BOTTLENECK: bottleneck,
            col.EXCESS_OVER_THRESHOLD: 5000 if bottleneck else 0,
            col.GROUP_QUOTA: 562,
            col.THROTTLING: 1,
            col.THROTTLED_SECONDS: throttled,
            col.CATCH_UP_ETA_SECONDS: eta,
            col.FAILOVER_READY: 0 if eta is None or eta > 60 else 1,
        }
    )
    return row


def _flow_snapshot():  # type: ignore[no-untyped-def]
    rows = (_row(M1, "", 0.0, 0.0), _row(M2, "applier", math.inf, 42.5))
    return with_tables(sample_snapshot(), {"grstats_flow_control": rows})


def _labels(member: str, **extra: str) -> frozenset[tuple[str, str]]:
    return frozenset({"group": GROUP, "member_id": member, **extra}.items())


def test_bottleneck_is_one_series_per_kind() -> None:
    got = metric_samples(_flow_snapshot())
    assert got[("grstats_flow_control_bottleneck", _labels(M2, kind="applier"))] == 1.0
    assert got[("grstats_flow_control_bottleneck", _labels(M2, kind="certifier"))] == 0.0
    assert got[("grstats_flow_control_bottleneck", _labels(M1, kind="applier"))] == 0.0


def test_quota_excess_eta_and_throttled_seconds() -> None:
    got = metric_samples(_flow_snapshot())
    assert got[("grstats_flow_control_group_quota", _labels(M2))] == 562.0
    assert got[("grstats_flow_control_excess_over_threshold", _labels(M2))] == 5000.0
    assert got[("grstats_flow_control_throttled_seconds_total", _labels(M2))] == 42.5
    assert math.isinf(got[("grstats_member_catch_up_eta_seconds", _labels(M2))])
    assert got[("grstats_member_catch_up_eta_seconds", _labels(M1))] == 0.0
    assert metric_types(_flow_snapshot())["grstats_flow_control_throttled_seconds"] == "counter"


def test_null_cells_are_no_series() -> None:
    rows = (_row(M1, "", None, 0.0),)
    snap = with_tables(sample_snapshot(), {"grstats_flow_control": rows})
    got = metric_samples(snap)
    assert ("grstats_member_catch_up_eta_seconds", _labels(M1)) not in got
