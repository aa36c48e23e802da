"""Three simulated daemons on a real Mosquitto: errant transactions, flagged everywhere.

The GTID interval is 2 s (test-only short interval). A candidate is errant
once a peer's set read at least one interval after the member's showed a
count to reach (applied + queued), a later set of that peer reached it, and
the next one still lacks the GTID (core/gtid_divergence.py): for peers that
keep up, two to four intervals after the member's set had it.

* A scripted errant write on M2 (one transaction with M2's server UUID, the
  GTID ``<M2>:1`` the group never certified) must be shown by every daemon's
  grstats_member_gtids, naming exactly that GTID, no later than
  `_reach_deadline`: when the faster peer, followed from its stats two
  intervals after the write (M2's next set, then the slack), has applied
  what it had then applied and queued (read by hand from
  replication_group_member_stats as the test polls: in the model's busier
  minutes the members run seconds behind), plus `DETECT_S` for the sets'
  cadence and `SCHEDULING_S` for ticks and a loaded machine;
  and must clear once the others received it (scripted injection of the
  empty transaction).
* A busy group with a slow member (its applier queue thousands of
  transactions long) must flag nothing: polled for `QUIET_S` seconds on every
  daemon (a minute, not the issue's ten: the machine is shared; the rule's
  model test covers 20 minutes of a hot hour). Meanwhile both other members
  purge their binary logs: the slow member's RECOVERY_METHOD turns from
  INCREMENTAL to CLONE on every daemon, with no donor left.
* Each daemon's history (scope local) keeps its member's verdict per sample:
  M2's rows count its errant GTID from the flag to the injection, the
  others' never do.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from grstats.history.parquet import read_history
from tests.fixtures.broker import Broker
from tests.fixtures.cli import grstats
from tests.fixtures.daemons import M1, M2, M3, DaemonProc, daemon_config, daemons, wait_for

# three daemons on a real broker for about a minute: not in `make test-fast`
pytestmark = pytest.mark.slow

MEMBERS = (M1, M2, M3)
GTIDS = "grstats_member_gtids"
GTID_INTERVAL_S = 2.0
# a peer's set 1 interval on, then two more of its sets: the earliest and the latest flag
GRACE_S = 2 * GTID_INTERVAL_S
# the reach seen on a set (an interval), the rule's counts a set later than ours
# (another), and the next set still lacking the GTID (a third)
DETECT_S = 3 * GTID_INTERVAL_S
SCHEDULING_S = 3.0
QUIET_S = 60.0


def _rows(d: DaemonProc) -> dict[str, dict[str, Any]]:
    return {str(r["MEMBER_ID"]): r for r in d.table(GTIDS)}


def _configs(broker: Broker, simulated: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        daemon_config(broker.port, m, MEMBERS, gtid_interval=GTID_INTERVAL_S, simulated=simulated)
        for m in MEMBERS
    ]


def test_errant_write_is_flagged_by_every_daemon_and_clears_when_injected(
    broker: Broker, tmp_path: Path
) -> None:
    s_err = int(time.time()) + 25  # the daemons start (and warm the model) before it
    s_inj = s_err + 30  # the flags come first (peers that keep up reach in seconds)
    simulated = {
        "epoch": s_err - 120,
        # busy at any hour: a burst that fills a peer's queue must not lift a flag
        # (at 11 UTC it came and went before flags were kept)
        "hot_hours": list(range(24)),
        # twice the hot hours' mean load: bursts queue and drain. The automatic 1.25x
        # saturated in some busy minutes and the peers fell 20 s behind and more
        "applier_capacity": 300.0,
        "script": [
            {"at": s_err, "member": M2, "action": "errant_write", "count": 1},
            {"at": s_inj, "member": M2, "action": "inject_errant"},
        ],
    }
    configs = _configs(broker, simulated)
    for index, config in enumerate(configs):  # each records its own member's samples
        config["history"] = {"dir": str(tmp_path / f"history-{index}"), "flush_interval": 0.5}
    with daemons(tmp_path, configs) as ds:
        for d in ds:
            wait_for(lambda d=d: set(_rows(d)) == set(MEMBERS) or None, 20, "3 gtid rows")
        assert time.time() < s_err, "the daemons started too late for the scripted write"
        for d in ds:
            assert all(r["ERRANT_COUNT"] == 0 for r in _rows(d).values()), d.member_id
        flagged: dict[str, float] = {}
        trace: list[tuple[float, dict[str, tuple[int, int]]]] = []  # peers' (applied, queued)
        for _ in range(int((s_inj - 2 - time.time()) / 0.2) + 1):  # bounded
            trace.append((time.time(), _pipeline(ds[0], (M1, M3))))
            for d in ds:
                row = _rows(d)[M2]
                if d.member_id not in flagged and row["ERRANT_COUNT"]:
                    flagged[d.member_id] = time.time()
                    assert row["ERRANT_TRANSACTIONS"] == f"{M2}:1", row
                    assert row["ERRANT_COUNT"] == 1 and row["RECOVERY_METHOD"] == "REPROVISION"
                    assert row["ERRANT_SINCE"] >= time.strftime(
                        "%Y-%m-%d %H:%M:%S", time.gmtime(s_err)
                    )
                for other in (M1, M3):
                    assert _rows(d)[other]["ERRANT_COUNT"] == 0, (d.member_id, other)
            if len(flagged) == len(ds) or time.time() > s_inj - 2:
                break
            time.sleep(0.2)
        deadline = _reach_deadline(trace, s_err + 2 * GTID_INTERVAL_S) + DETECT_S + SCHEDULING_S
        assert set(flagged) == set(MEMBERS), (flagged, f"expected by +{deadline - s_err:.1f} s")
        print(
            "flagged after the write (s):",
            {m[:8]: round(t - s_err, 1) for m, t in flagged.items()},
            f"deadline +{deadline - s_err:.1f} s",
        )
        late = {m: round(t - s_err, 1) for m, t in flagged.items() if t > deadline}
        assert not late, f"flagged later than {deadline - s_err} s after the write: {late}"
        explained = grstats("gtids", "--api", f"http://127.0.0.1:{ds[0].api_port}", "--explain")
        assert explained.returncode == 0, explained.stderr
        assert f"SET GTID_NEXT='{M2}:1'; BEGIN; COMMIT;" in explained.stdout
        for d in ds:
            wait_for(
                lambda d=d: _rows(d)[M2]["ERRANT_COUNT"] == 0 or None,
                max(1.0, s_inj - time.time()) + 2 * GTID_INTERVAL_S + SCHEDULING_S,
                f"{d.member_id} to clear M2's errant GTID after the injection",
            )
            # not before it: a flag that lapses while the GTID is still a candidate lies
            assert time.time() >= s_inj, f"{d.member_id} cleared M2's flag before the injection"
            assert _rows(d)[M2]["RECOVERY_METHOD"] == "INCREMENTAL"
        # M2's table may clear between two of its ticks: two more published samples
        # make sure its history's last row was recorded after the clear
        own = ds[MEMBERS.index(M2)]
        published = own.counters()["messages_published"]
        wait_for(
            lambda: own.counters()["messages_published"] >= published + 2 or None,
            10,
            "two more samples of M2 after its table cleared",
        )
        for d in ds:
            assert d.terminate() == 0
    _assert_history(tmp_path / "history-1", s_err, flagged[M2])
    for index in (0, 2):  # M1 and M3 never had errant transactions
        rows = read_history(tmp_path / f"history-{index}").to_pylist()
        assert rows and {r["gtid_errant_count"] for r in rows} <= {0, None}


def _pipeline(d: DaemonProc, peers: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """Each peer's COUNT_TRANSACTIONS_REMOTE_APPLIED and its two queues, as `d` shows them."""
    return {
        str(r["MEMBER_ID"]): (
            r["COUNT_TRANSACTIONS_REMOTE_APPLIED"],
            r["COUNT_TRANSACTIONS_IN_QUEUE"] + r["COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"],
        )
        for r in d.table("replication_group_member_stats")
        if r["MEMBER_ID"] in peers
    }


def _reach_deadline(trace: list[tuple[float, dict[str, tuple[int, int]]]], start: float) -> float:
    """When the faster peer had applied all it had applied and queued at `start` (by hand)."""
    reached = []
    for peer in trace[-1][1]:
        seen = [(t, p[peer]) for t, p in trace if t >= start and peer in p]
        if not seen:
            continue
        target = seen[0][1][0] + seen[0][1][1]
        reached += [next((t for t, (applied, _) in seen if applied >= target), math.inf)]
    return min(reached, default=math.inf)


def _assert_history(directory: Path, s_err: int, flagged_at: float) -> None:
    """M2's own history: its verdict as its daemon's table showed it, sample by sample."""
    rows = sorted(read_history(directory).to_pylist(), key=lambda r: r["sampled_at"])
    assert {r["member_id"] for r in rows} == {M2}  # scope local
    verdicts = [
        (r["sampled_at"].timestamp(), r["gtid_errant_count"], r["gtid_recovery_method"])
        for r in rows
    ]
    errant = [at for at, count, _ in verdicts if count]
    assert errant, "no history row with M2's errant GTID"
    # flagged no earlier than the grace after the write, and as the live table was
    assert min(errant) >= s_err + GRACE_S
    assert min(errant) <= flagged_at + 1.0
    assert {(c, m) for at, c, m in verdicts if c} == {(1, "REPROVISION")}
    # before the write: nothing errant (NULL before the rule had the others' sets)
    assert {c for at, c, _ in verdicts if at < s_err} <= {0, None}
    # cleared after the injection: the last rows are clean again
    assert verdicts[-1][1:] == (0, "INCREMENTAL")


def test_busy_group_with_a_slow_member_flags_nothing_and_purges_make_it_need_clone(
    broker: Broker, tmp_path: Path
) -> None:
    now = int(time.time())
    s_purge = now + 40  # M1 and M2 purge their binary logs: M3 lacks what they purged
    simulated = {
        "epoch": now - 600,
        # busy at any hour: the normal members' queues hold thousands too (at 15 UTC,
        # M1 about 4,900 at 150/s), the in-flight GTIDs of the member ahead with them;
        # the rule that estimated queue / rate flagged them (the flow table's rates of a
        # 0.25 s period flap between 0 and 4x)
        "hot_hours": list(range(24)),
        "slow_member": M3,
        "slow_capacity": 5.0,
        "script": [
            {"at": s_purge, "member": M1, "action": "purge"},
            {"at": s_purge, "member": M2, "action": "purge"},
        ],
    }
    with daemons(tmp_path, _configs(broker, simulated)) as ds:
        for d in ds:
            wait_for(lambda d=d: set(_rows(d)) == set(MEMBERS) or None, 20, "3 gtid rows")
        assert time.time() < s_purge, "the daemons started too late for the scripted purge"
        behind = 0
        methods: dict[str, set[str]] = {"before": set(), "after": set()}
        end = max(time.time() + QUIET_S, s_purge + 2 * GTID_INTERVAL_S + SCHEDULING_S + 5)
        for _ in range(int((end - time.time()) / 0.5) + 1):  # bounded in count and time
            now_s = time.time()
            for d in ds:
                rows = _rows(d)
                for member, row in rows.items():
                    assert row["ERRANT_COUNT"] == 0, (d.member_id, member, row)
                for member in (M1, M2):
                    assert rows[member]["RECOVERY_METHOD"] == "INCREMENTAL", rows[member]
                behind = max(behind, int(rows[M3]["MISSING_COUNT"] or 0))
                if now_s < s_purge:
                    methods["before"].add(rows[M3]["RECOVERY_METHOD"])
                elif now_s > s_purge + 2 * GTID_INTERVAL_S + SCHEDULING_S:
                    methods["after"].add(rows[M3]["RECOVERY_METHOD"])
                    assert rows[M3]["DONORS"] == "", rows[M3]
            if time.time() > end:
                break
            time.sleep(0.5)
        assert behind > 1000, behind  # the slow member lagged by thousands meanwhile
        assert methods == {"before": {"INCREMENTAL"}, "after": {"CLONE"}}, methods
