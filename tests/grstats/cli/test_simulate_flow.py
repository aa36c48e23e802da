"""`grstats simulate`'s fc_* columns equal the daemon's replay (core.flowreplay) over the rows.

The independent computation: a `FlowReplay` fed every member's written row
as one stats message per second, stepped once per second before the
second's messages (the order a daemon sees: it steps on its own sample,
the others' messages of that second arrive after it), read with the same
`flow_history` the daemon records.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from grstats.cli.commands.simulate import command
from grstats.core.flowcontrol import FlowControlSettings
from grstats.core.flowreplay import FlowReplay
from grstats.core.records import FLOW_HELD_HISTORY_COLUMNS, FLOW_HISTORY_COLUMNS
from grstats.core.rows import flow_history
from grstats.history.writer import read_history
from grstats.offline.backfill import member_ids, simulate_history
from protocol import MemberStatsState

# two simulated days and their replay, ~45 s of CPU: not in make test-fast
pytestmark = pytest.mark.slow

FLOW = [name for name, _ in (*FLOW_HISTORY_COLUMNS, *FLOW_HELD_HISTORY_COLUMNS)]
SEED = 5
# thresholds low enough that the slow member's applier queue crosses them in and out,
# and that every member's certifier queue (at most ~80 here) sometimes does
SETTINGS = FlowControlSettings(certifier_threshold=60, applier_threshold=20_000)


@pytest.fixture(scope="module")
def two_days(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("simflow") / "history"
    members = member_ids(SEED, 3)
    simulate_history(
        out,
        group="g",
        members=members,
        days=2,
        seed=SEED,
        start=dt.date(2026, 11, 16),
        slow_member=True,
        flow_control=SETTINGS,
    )
    table = read_history(out).sort_by([("sampled_at", "ascending"), ("member_id", "ascending")])
    return {"members": members, "rows": table.to_pylist()}


def _replayed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    replay = FlowReplay(SETTINGS)
    previous: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(rows):
        second = rows[i]["sampled_at"]
        at_us = round(second.timestamp() * 1_000_000)
        replay.step(at_us)
        while i < len(rows) and rows[i]["sampled_at"] == second:
            r = rows[i]
            before = previous.get(r["member_id"], {})
            state = MemberStatsState(
                transactions_waiting_certification=r["count_transactions_in_queue"],
                transactions_waiting_apply=r["count_transactions_remote_in_applier_queue"],
                flow_control_mode=r["flow_control_mode"],
                delta_transactions_certified=r["count_transactions_checked"]
                - before.get("count_transactions_checked", 0),
                delta_transactions_applied=r["count_transactions_remote_applied"]
                - before.get("count_transactions_remote_applied", 0),
                delta_transactions_local=r["count_transactions_local_proposed"]
                - before.get("count_transactions_local_proposed", 0),
            )
            replay.receive(r["member_id"], state, at_us)
            out.append(flow_history(replay, r["member_id"]))
            previous[r["member_id"]] = r
            i += 1
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isinf(a) and math.isinf(b)) or a == pytest.approx(b, rel=1e-9)
    return bool(a == b)


def test_flow_columns_equal_the_daemon_replay_over_the_written_rows(
    two_days: dict[str, Any],
) -> None:
    rows = two_days["rows"]
    assert len(rows) == 3 * 2 * 86_400
    expected = _replayed(rows)
    mismatches = [
        (r["member_id"][:8], r["sampled_at"], name, r[name], want[name])
        for r, want in zip(rows, expected, strict=True)
        for name in FLOW
        if not _same(r[name], want[name])
    ]
    assert mismatches[:5] == []


def test_the_slow_member_alone_is_the_applier_bottleneck_and_the_group_is_throttled(
    two_days: dict[str, Any],
) -> None:
    slow = two_days["members"][-1]
    applier: dict[str, int] = dict.fromkeys(two_days["members"], 0)
    throttled = 0
    for r in two_days["rows"]:
        applier[r["member_id"]] += r["fc_bottleneck"] == "applier"
        throttled += r["fc_throttling"]
    assert applier[slow] > 0
    assert [n for m, n in applier.items() if m != slow] == [0, 0]
    assert throttled > 0


def _throttled_rows(out: Path, *threshold: str) -> int:
    args = ["--members", "3", "--days", "1", "--seed", str(SEED), "--start", "2026-11-16"]
    result = CliRunner().invoke(command, [*args, "--slow-member", *threshold, "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = read_history(out)
    return int(pc.sum(table["fc_throttling"]).as_py())


def test_the_thresholds_of_the_replay_are_options(tmp_path: Path) -> None:
    # the slow member's applier queue stays under two million transactions (see above: it
    # crosses 20 000), so that threshold never throttles and MySQL's default does
    assert _throttled_rows(tmp_path / "high", "--applier-threshold", "2000000") == 0
    assert _throttled_rows(tmp_path / "default") > 0
