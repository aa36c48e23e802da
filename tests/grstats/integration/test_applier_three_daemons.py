"""Three simulated daemons on a real Mosquitto: applier metrics of every member everywhere.

M3 is the slow member with an applier capacity of 5 tx/s, far below what the
group writes (20 tx/s per writer, three writers): its applier never runs out
of work, so waiting for work from the source is a small share of its active
time and `grstats applier --explain` must not call it starved. M1 and M2 keep
up (their capacity is 1.25x the busiest hour's rate), so they mostly wait for work:
starved. Each daemon's API must show replication_applier_metrics and
replication_applier_progress_by_worker rows for all three members (its own
from its source, the others from their ext.applier sections).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.cli import grstats
from tests.fixtures.daemons import M1, M2, M3, DaemonProc, daemon_config, daemons, wait_for

# three daemons on a real broker for about a minute: not in `make test-fast`
pytestmark = pytest.mark.slow

MEMBERS = (M1, M2, M3)
METRICS = "replication_applier_metrics"
PROGRESS = "replication_applier_progress_by_worker"
APPLIER_CHANNEL = "group_replication_applier"


def _members_in(d: DaemonProc, table: str) -> set[str]:
    return {str(r["MEMBER_ID"]) for r in d.table(table)}


def _verdicts(d: DaemonProc) -> dict[str, Any]:
    result = grstats(
        "applier", "--api", f"http://127.0.0.1:{d.api_port}", "--explain", "--format", "json"
    )
    assert result.returncode == 0, result.stderr
    return {
        v["MEMBER_ID"]: v["verdict"]
        for v in json.loads(result.stdout)
        if v["CHANNEL_NAME"] == APPLIER_CHANNEL
    }


def test_every_daemon_shows_all_appliers_and_the_slow_one_is_not_starved(
    broker: Broker, tmp_path: Path
) -> None:
    simulated = {"slow_member": M3, "slow_capacity": 5.0}
    configs = [daemon_config(broker.port, m, MEMBERS, simulated=simulated) for m in MEMBERS]
    with daemons(tmp_path, configs) as ds:
        for d in ds:
            for table in (METRICS, PROGRESS):
                wait_for(
                    lambda d=d, table=table: _members_in(d, table) == set(MEMBERS),
                    20,
                    f"{d.member_id}'s {table} rows for all three members",
                )
        for d in ds:
            workers = d.table(PROGRESS)
            for m in MEMBERS:
                assert any(w["MEMBER_ID"] == m and w["WORKER_ID"] >= 1 for w in workers), m
        for d in ds:
            verdicts = _verdicts(d)
            assert set(verdicts) == set(MEMBERS), verdicts
            assert verdicts[M1] == verdicts[M2] == "starved", verdicts
            assert verdicts[M3] not in ("starved", "unknown"), verdicts
