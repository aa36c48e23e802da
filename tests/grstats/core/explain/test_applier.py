"""The applier explain text (`grstats applier --explain`, the live page): names and order."""

from __future__ import annotations

from grstats.core import columns as col
from grstats.core.explain import applier_text, applier_verdicts

S = 1_000_000_000
M1 = "11111111-1111-1111-1111-111111111111"
M2 = "22222222-2222-2222-2222-222222222222"


def _row(member: str) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(col.APPLIER_METRICS.names, 0)
    # by hand: active 3 h 5 min = 11,100 s, waiting for work 10,000 s (90 %): starved
    row.update(
        {
            col.MEMBER_ID: member,
            col.CHANNEL_NAME: "group_replication_applier",
            col.TOTAL_ACTIVE_TIME_DURATION: 11_100 * S,
            col.WAITS_FOR_WORK_FROM_SOURCE_SUM_TIME: 10_000 * S,
        }
    )
    return row


def test_members_are_host_port_in_that_order_and_durations_read_as_h_min() -> None:
    labels = {M1: "db2:3306", M2: "db1:3306"}
    text = applier_text([_row(M1), _row(M2)], labels)
    heads = [line for line in text.splitlines() if not line.startswith(" ")]
    assert heads == [
        "db1:3306 group_replication_applier: starved",
        "db2:3306 group_replication_applier: starved",
    ]
    assert "  active 3 h 5 min; share of active time:" in text
    assert [v["member"] for v in applier_verdicts([_row(M1), _row(M2)], labels)] == [
        "db1:3306",
        "db2:3306",
    ]


def test_a_member_no_view_lists_keeps_its_escaped_id() -> None:
    text = applier_text([_row(M1 + "\x1b[2J")], {M2: "db1:3306"})
    assert "\\x1b[2J group_replication_applier" in text and "\x1b" not in text
