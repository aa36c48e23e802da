"""The "Who held the group back" section from collected rows (no Spark): texts and joins."""

from __future__ import annotations

from typing import Any

from spark_rollups.flowreport import FlowWeek, flow_section, join_episodes
from spark_rollups.render import Table

DAY = 1_763_337_600  # 2025-11-17 00:00:00 UTC, by hand: 20409 days after the epoch


def _episode(member: str, start: int, end: int, seconds: int, **figures: Any) -> dict[str, Any]:
    return {
        "member_id": member,
        "start_s": start,
        "end_s": end,
        "throttled_seconds": seconds,
        "bottleneck": figures.get("bottleneck", "applier"),
        "excess_max": figures.get("excess", 10),
        "certifier_queue_max": figures.get("cq", 1),
        "applier_queue_max": figures.get("aq", 100),
    }


def test_pieces_cut_at_midnight_are_joined_and_others_are_not() -> None:
    pieces = [
        _episode("c", DAY - 10, DAY - 1, 10, aq=300),
        _episode("c", DAY + 1, DAY + 30, 30, bottleneck="certifier", aq=200),  # 2 s later
        _episode("c", DAY + 40, DAY + 44, 5),  # 10 s later: another episode
        _episode("b", DAY, DAY + 50, 51),  # another member
    ]
    joined = join_episodes(pieces)
    assert [(e["member_id"], e["start_s"], e["end_s"], e["throttled_seconds"]) for e in joined] == [
        ("b", DAY, DAY + 50, 51),
        ("c", DAY - 10, DAY + 30, 40),
        ("c", DAY + 40, DAY + 44, 5),
    ]
    assert joined[1]["bottleneck"] == "applier+certifier"
    assert joined[1]["applier_queue_max"] == 300


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
    assert len(items) == 1
    assert isinstance(items[0], str) and items[0].startswith("No throttled time this week")


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
            "seconds": 1_200,
            "throttled_seconds": 600,
            "attributed_seconds": 540,
            "unattributed_seconds": 60,
            "shared_seconds": 0,
        },
        members=[member("a", 0), member("slow", 540)],
        episodes=[_episode("slow", DAY, DAY + 539, 540)],
    )
    _, items = flow_section(week)
    summary = str(items[0])
    # 600 s = 10.0 min of 1200 s (50.0 %); slow: 540 s = 9.0 min = 90.0 % of 600
    assert summary.startswith("Writers were throttled for 10.0 minutes this week (50.0%")
    assert "caused by member slow: 9.0 minutes (90.0% of the throttled time)" in summary
    assert "1.0 minutes" in summary  # unattributed 60 s
    tables = {t.name: t for t in items if isinstance(t, Table)}
    assert [r[0] for r in tables["flow_by_member"].rows] == ["slow", "a"]
    assert tables["flow_by_member"].rows[0][2] == 0.9
    assert tables["flow_worst_episodes"].rows[0][:4] == [
        "slow",
        "2025-11-17 00:00:00",
        "2025-11-17 00:08:59",
        9.0,
    ]
