"""`grstats flow --bus`: a bounded listen that replays flow control over real daemons' stats.

Two simulated daemons on a real Mosquitto, scripted: M1's applier stops, then
M2 commits 10 transactions, so M1's applier queue is 10 and stays there. With
group_replication_flow_control_applier_threshold = 5 (the daemons' and the
CLI's [flow_control]), by hand:

- M1 is the applier bottleneck, EXCESS_OVER_THRESHOLD = 10 - 5 = 5; M2 is
  none, its queues 0, excess 0.
- Every flow-control step has holds (M1 reports QUOTA mode and a queue over the
  threshold four times a second), no member shows certified or applied
  deltas once the script is done, so MySQL's capacity stays MAXTPS =
  2147483647 and GROUP_QUOTA = int(2147483647 * (1 - 10 / 100)) = 1932735282
  (hold_percent 10, one writer at most), THROTTLING = 1.
- Nobody writes once the script is done, so no commit reaches that quota:
  MySQL holds none (Flow_control_module::do_wait), WRITERS_HELD = 0, and
  neither member is charged THROTTLED_SECONDS (held time).
"""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.cli import grstats
from tests.fixtures.daemons import M1, M2, daemon_config, daemons, wait_for

PERIOD = 0.25
THRESHOLD = 5
QUOTA = 1_932_735_282  # int(2147483647 * 0.9), see the module docstring


def _by_member(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(r["MEMBER_ID"]): r for r in rows}


@pytest.mark.slow
def test_flow_bus_replays_and_names_the_stopped_applier(broker: Broker, tmp_path: Path) -> None:
    t0 = int(time.time()) + 3
    script = [
        {"at": t0, "member": M1, "action": "applier_stop", "duration": 600.0},
        {"at": t0 + 1, "member": M2, "action": "commit", "count": 10},
    ]
    simulated = {"scripted": True, "script": script}
    configs = []
    for m in (M1, M2):
        config = daemon_config(broker.port, m, [M1, M2], period=PERIOD, simulated=simulated)
        config["flow_control"] = {"applier_threshold": THRESHOLD}
        configs.append(config)
    with daemons(tmp_path, configs) as (d1, _):

        def queued() -> bool:
            row = d1.rows_by_member().get(M1)
            return row is not None and row["COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"] == 10

        wait_for(queued, 20, "M1's applier queue of 10")
        # the group's [flow_control], as an operator's client config carries it
        client = tmp_path / "client.toml"
        # a 2 s period: a daemon stalled for a second on a loaded machine still
        # leaves a hold in every step (MySQL's period is the same for the judgement)
        client.write_text(
            f"[flow_control]\napplier_threshold = {THRESHOLD}\nperiod = 2\n", encoding="utf-8"
        )
        config = str(client)

        result = grstats(
            "flow", "--bus", broker.url, "--config", config, "--seconds", "4.5", "--format", "json"
        )
        assert result.returncode == 0, result.stderr
        rows = _by_member(json.loads(result.stdout))
        assert set(rows) == {M1, M2}
        assert rows[M1]["BOTTLENECK"] == "applier"
        assert rows[M1]["EXCESS_OVER_THRESHOLD"] == 5
        assert rows[M1]["APPLIER_QUEUE"] == 10
        assert rows[M2]["BOTTLENECK"] == ""
        assert rows[M2]["EXCESS_OVER_THRESHOLD"] == 0
        for row in rows.values():
            assert row["GROUP_QUOTA"] == QUOTA
            assert row["THROTTLING"] == 1
            assert row["SERVER_THROTTLE_COUNT"] is None  # not on the bus
            assert row["WRITERS_HELD"] == 0
            assert row["THROTTLED_SECONDS"] == 0  # an active quota nobody reaches holds nobody
        assert "flow-control steps" in result.stderr  # the progress line

        # the same judgement from a daemon's API
        api = grstats("flow", "--api", f"http://127.0.0.1:{d1.api_port}", "--format", "json")
        assert api.returncode == 0, api.stderr
        via_api = _by_member(json.loads(api.stdout))
        for m in (M1, M2):
            for column in ("BOTTLENECK", "EXCESS_OVER_THRESHOLD", "APPLIER_QUEUE", "GROUP_QUOTA"):
                assert via_api[m][column] == rows[m][column], (m, column)

        as_csv = grstats(
            "flow", "--bus", broker.url, "--config", config, "--seconds", "1.5", "--format", "csv"
        )
        assert as_csv.returncode == 0, as_csv.stderr
        csv_rows = _by_member(list(csv.DictReader(io.StringIO(as_csv.stdout))))
        assert csv_rows[M1]["BOTTLENECK"] == "applier"
        assert csv_rows[M1]["EXCESS_OVER_THRESHOLD"] == "5"


def test_flow_bus_with_default_thresholds_sees_no_bottleneck(
    broker: Broker, tmp_path: Path
) -> None:
    """Without the group's [flow_control] the replay uses MySQL's 25000: nobody is over it."""
    simulated = {"scripted": True}
    configs = [daemon_config(broker.port, m, [M1, M2], period=PERIOD, simulated=simulated)
               for m in (M1, M2)]  # fmt: skip
    with daemons(tmp_path, configs):
        result = grstats(
            "flow", "--bus", broker.url, "--seconds", "1.2", "--format", "table", "--wide"
        )
        assert result.returncode == 0, result.stderr
        assert M1 in result.stdout and M2 in result.stdout
        assert "applier" not in result.stdout


def test_flow_seconds_without_bus_is_a_usage_error() -> None:
    result = grstats("flow", "--api", "http://127.0.0.1:9", "--seconds", "2")
    assert result.returncode == 2
    assert "--seconds: only with --bus" in result.stderr
