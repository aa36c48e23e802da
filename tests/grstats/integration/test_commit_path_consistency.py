"""Two simulated daemons whose sessions run with scripted consistency levels; each
daemon's grstats_member_commit_path shows the waits, every figure by hand.

Links of 5 ms one way, two members: a consensus round (and the round trip to the
farthest peer) takes 2 x (5 + 5) = 20 ms. M1's sessions run BEFORE: each of its
transactions waits two of its rounds before it begins, 40 ms. M2's run AFTER:
each waits two round trips to its farthest peer after it terminates, 40 ms. Both
levels hold from before the daemons start, so every wait of every period and
minute takes exactly that (simulated/commitpath.py); the other level's waits
stay 0, and so do the after-sync waits (no member holds another's reads).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import M1, M2, DaemonProc, daemon_config, daemons, wait_for

TABLE = "grstats_member_commit_path"
WAIT_S = 2 * 2 * (0.005 + 0.005)  # two rounds (BEFORE) or two round trips (AFTER) of 20 ms


def _rows(d: DaemonProc) -> dict[str, dict[str, Any]] | None:
    """Both members' rows once each has a wait in its period and in its last minute."""
    rows = {str(r["MEMBER_ID"]): r for r in d.table(TABLE)}
    waits = {M1: "BEFORE_BEGIN_MEAN_SECONDS", M2: "AFTER_TERMINATION_MEAN_SECONDS"}
    ready = set(rows) == set(waits) and all(
        rows[m][c] is not None and rows[m][c + "_1M"] is not None for m, c in waits.items()
    )
    return rows if ready else None


def test_scripted_consistency_levels_reach_the_waits_columns(
    broker: Broker, tmp_path: Path
) -> None:
    since = int(time.time()) - 5  # already in force when the daemons start
    script = [
        {"at": since, "member": M1, "action": "consistency", "level": "BEFORE"},
        {"at": since, "member": M2, "action": "consistency", "level": "AFTER"},
    ]
    simulated = {"link_latency_ms": 5.0, "script": script}
    configs = [daemon_config(broker.port, m, (M1, M2), simulated=simulated) for m in (M1, M2)]
    with daemons(tmp_path, configs) as ds:
        for d in ds:
            rows = wait_for(lambda d=d: _rows(d), 30, f"{d.member_id}'s rows with waits")
            before, after = rows[M1], rows[M2]
            assert before["BEFORE_BEGIN_MEAN_SECONDS"] == pytest.approx(WAIT_S)
            assert before["BEFORE_BEGIN_MEAN_SECONDS_1M"] == pytest.approx(WAIT_S)
            assert before["BEFORE_BEGIN_PER_SECOND"] > 0
            # BEFORE only: M1 waits for nothing after its transactions terminate
            assert before["AFTER_TERMINATION_PER_SECOND"] == 0.0
            assert before["AFTER_TERMINATION_MEAN_SECONDS"] is None
            assert before["AFTER_TERMINATION_SECONDS_TOTAL"] == 0.0
            assert after["AFTER_TERMINATION_MEAN_SECONDS"] == pytest.approx(WAIT_S)
            assert after["AFTER_TERMINATION_MEAN_SECONDS_1M"] == pytest.approx(WAIT_S)
            assert after["AFTER_TERMINATION_PER_SECOND"] > 0
            assert after["BEFORE_BEGIN_PER_SECOND"] == 0.0
            assert after["BEFORE_BEGIN_MEAN_SECONDS"] is None
            assert after["BEFORE_BEGIN_SECONDS_TOTAL"] == 0.0
            # nobody waits behind another member's AFTER transactions in the model
            assert before["AFTER_SYNC_PER_SECOND"] == after["AFTER_SYNC_PER_SECOND"] == 0.0
