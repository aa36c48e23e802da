"""The "Who held the group back" section from collected rows (no Spark): texts and tables."""

from __future__ import annotations

from typing import Any

from spark_rollups.flowreport import FlowWeek, flow_section
from spark_rollups.render import Table

DAY = 1_763_337_600  # 2025-11-17 00:00:00 UTC, by hand: 20409 days after the epoch


def test_a_week_without_throttled_time_says_so_plainly() -> None:
    week = FlowWeek(
        totals={
            "seconds": 604_800,
            "throttled_seconds": 0,
            "attributed_seconds": 0,
            "unattributed_seconds": 0,
            "shared_seconds": 0,
        }
    )
    heading, items = flow_section(week)
    assert heading == "Who held the group back"
    assert len(items) == 2  # the sentence and the catch-up table (no member here)
    assert isinstance(items[0], str) and items[0].startswith("No writer was held by flow control")
    assert "exceeded its threshold" in items[0]


def test_a_quota_active_for_hours_without_a_held_writer_is_not_throttling() -> None:
    # the week at MySQL's default thresholds: the quota active 84.2 h (303,120 s),
    # never below what the writers commit: not one held second
    week = FlowWeek(
        totals={
            "seconds": 604_800,
            "throttled_seconds": 0,
            "attributed_seconds": 0,
            "unattributed_seconds": 0,
            "shared_seconds": 0,
            "quota_active_seconds": 303_120,
        }
    )
    _, items = flow_section(week)
    # 303,120 s = 84 h 12 min = 3 d 12 h (protocol.humanize.duration: the larger units)
    assert items[0] == (
        "No writer was held by flow control this week (QUOTA mode, as replayed by the "
        "daemons); its quota was active for 3 d 12 h, always above what the writers "
        "committed."
    )


def test_no_figures_at_all_is_not_reported_as_no_throttling() -> None:
    _, items = flow_section(None)
    assert items == [items[0]] and str(items[0]).startswith("No flow-control figures")


def test_the_member_that_caused_most_is_named_with_its_share() -> None:
    buckets = dict.fromkeys(
        (
            "catch_up_0s",
            "catch_up_under_10s",
            "catch_up_10_60s",
            "catch_up_over_60s",
            "catch_up_never",
            "catch_up_unknown",
        ),
        0,
    )

    def member(name: str, caused: int) -> dict[str, Any]:
        return {
            "member_id": name,
            "throttled_seconds_caused": caused,
            "throttled_seconds_caused_certifier": 0,
            "throttled_seconds_caused_applier": caused,
            "bottleneck_seconds": caused,
            "excess_max": 1,
            "certifier_queue_max": 1,
            "applier_queue_max": 1,
            "catch_up_eta_p95": None,
            "failover_unready_seconds": 0,
            **buckets,
            "catch_up_0s": 600,
        }

    week = FlowWeek(
        totals={
            "seconds": 14_400,
            "throttled_seconds": 7_200,
            "attributed_seconds": 6_480,
            "unattributed_seconds": 720,
            "shared_seconds": 0,
        },
        members=[member("a", 0), member("slow-uuid", 6_480)],
        periods=[
            {
                "member_id": "slow-uuid",
                "start_s": DAY,
                "end_s": DAY + 7_199,
                "length_s": 7_200,
                "throttled_seconds": 6_480,
                "throttled_share": 0.9,
                "episodes": 540,
                "bottleneck": "applier",
                "excess_max": 10,
                "certifier_queue_max": 1,
                "applier_queue_max": 1_500,
            }
        ],
    )
    _, items = flow_section(week, {"slow-uuid": "db3:3306"})
    summary = str(items[0])
    # 7200 s = 2 h of 14400 s (50.0 %); slow: 6480 s = 1 h 48 min = 90.0 % of 7200
    assert summary.startswith("Writers were held by flow control for 2 h this week (50.0%")
    assert "caused by member **db3:3306**: 1 h 48 min (90.0% of the held time)" in summary
    assert "threshold): 12 min." in summary  # unattributed 720 s
    tables = {t.name: t for t in items if isinstance(t, Table)}
    # members in host:port order ("a" has no host: its short id)
    assert [str(r[0]) for r in tables["flow_by_member"].rows] == ["a", "db3:3306"]
    assert tables["flow_by_member"].rows[1][2] == 0.9
    assert tables["flow_sustained_periods"].cells(tables["flow_sustained_periods"].rows[0]) == [
        "db3:3306",
        "2025-11-17 00:00:00",
        "2025-11-17 01:59:59",
        "2 h",
        "90.00%",
        "540",
        "applier",
        "1",
        "1,500",
    ]
