"""The Prometheus alerts on the ground-truth scenarios: promtool over the metrics a run produced.

Each scenario's three daemons' /metrics (the tables' families, as `grstats run`
exposes them) are taken twice, 30 s apart, at the end of its minute; promtool
is fed the state as persisting for 11 minutes -- each gauge at its last value,
each counter rising at its rate between the two readings -- under the shipped
rules (config/prometheus/grstats-rules.yml), and asked which alerts fire after
10 minutes (`ALERTS`), by alert and member. Expected by hand from each
scenario's script (tests/verdicts/test_failover_and_flow.py and
test_gtid_verdicts.py work out the figures):

- a healthy group, a slow link, consistency waits, a lying bus member and a
  member that left and came back: none (nothing lags, nobody is held, nobody
  is errant, every member ready);
- the slow applier at MySQL's default thresholds: its queue over 25,000 (hours
  of lag, over 30 s) and its backlog hours long to apply -- ApplierQueueHigh,
  ReplicationLagHigh, NotFailoverReady on db3; *not* FlowControlBottleneck: no
  writer was ever held because of it;
- the slow applier at a threshold of 1,000: writers held about half of the
  time because of db3 (over 10 %): FlowControlBottleneck on db3; its queue
  stays near 1,000 (17 s of lag, 17 s to apply): nothing else;
- an errant write on db2: ErrantTransactions on db2; spread to db3 as well:
  on db2 and db3;
- db3's applier stopped for minutes (purged binary logs): applying nothing,
  its backlog never applied (NotFailoverReady); no replicationLag (MySQL
  Shell's shows none for an applier that applies nothing: REPLICATION_LAG is
  NULL), so no lag alert.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.exposed_metrics import metric_names
from tests.fixtures.verdict_scenarios import LABELS, M2, M3, METRICS_AT, SCENARIOS, metrics

RULES = Path(__file__).resolve().parents[2] / "config" / "prometheus" / "grstats-rules.yml"
STEP_S = 15
STEPS = 44  # 11 minutes
EVAL = "10m"
SPAN_S = METRICS_AT[1] - METRICS_AT[0]

NONE: frozenset[tuple[str, str]] = frozenset()
EXPECTED: dict[str, frozenset[tuple[str, str]]] = {
    "healthy_single_primary": NONE,
    "healthy_multi_primary": NONE,
    "slow_link": NONE,
    "consistency_waits": NONE,
    "lying_member": NONE,
    "member_rejoining": NONE,
    "slow_applier_default_thresholds": frozenset(
        {
            ("GrstatsApplierQueueHigh", M3),
            ("GrstatsReplicationLagHigh", M3),
            ("GrstatsMemberNotFailoverReady", M3),
        }
    ),
    "slow_applier_low_thresholds": frozenset({("GrstatsFlowControlBottleneck", M3)}),
    "errant_write": frozenset({("GrstatsErrantTransactions", M2)}),
    "errant_spread": frozenset(
        {("GrstatsErrantTransactions", M2), ("GrstatsErrantTransactions", M3)}
    ),
    "purged_binary_logs": frozenset({("GrstatsMemberNotFailoverReady", M3)}),
}


def _rule_names() -> set[str]:
    """Every metric name a rule's `expr` reads (single-line or folded `>-` blocks)."""
    lines = RULES.read_text(encoding="utf-8").splitlines()
    names: set[str] = set()
    for i, line in enumerate(lines):
        found = re.match(r"^(\s*)(?:- )?expr:\s*(.*)$", line)
        if not found:
            continue
        expr = found.group(2)
        if expr.strip() == ">-":
            indent = len(found.group(1))
            block = []
            for follow in lines[i + 1 :]:
                if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                    break
                block.append(follow.strip())
            expr = " ".join(block)
        names |= metric_names(expr)
    return names


def _number(value: float) -> str:
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _series(name: str) -> list[dict[str, str]]:
    """promtool input series of every daemon of the scenario: the state persisting."""
    read = _rule_names()
    taken = metrics(name)
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], dict[int, float]] = {}
    for at, by_daemon in taken.items():
        for daemon, text in by_daemon.items():
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.name not in read or math.isnan(sample.value):
                        continue
                    labels = {**sample.labels, "instance": LABELS[daemon], "job": "grstats"}
                    key = (sample.name, tuple(sorted(labels.items())))
                    samples.setdefault(key, {})[at] = sample.value
    out = []
    for (metric, labels), values in sorted(samples.items()):
        if METRICS_AT[1] not in values:
            continue  # gone by the end (a member's departure, its series with it)
        last = values[METRICS_AT[1]]
        text = ",".join(f'{k}="{v}"' for k, v in labels)
        if math.isinf(last):  # the expanding notation does not take Inf
            notation = " ".join([_number(last)] * (STEPS + 1))
        elif metric.endswith("_total") and METRICS_AT[0] in values:
            increase = (last - values[METRICS_AT[0]]) * STEP_S / SPAN_S
            notation = f"{_number(last)}+{_number(increase)}x{STEPS}"
        else:
            notation = f"{_number(last)}x{STEPS}"
        out.append({"series": f"{metric}{{{text}}}", "values": notation})
    return out


def _firing(name: str, tmp_path: Path) -> str:
    """promtool's verdict on the expected alerts (empty when they are what fires)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    expected = [
        {"labels": f'{{alertname="{alert}",member_id="{member}"}}', "value": 1}
        for alert, member in sorted(EXPECTED[name])
    ]
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": f"{STEP_S}s",
        "tests": [
            {
                "interval": f"{STEP_S}s",
                "input_series": _series(name),
                "promql_expr_test": [
                    {
                        "expr": 'count by (alertname, member_id) (ALERTS{alertstate="firing"})',
                        "eval_time": EVAL,
                        "exp_samples": expected,
                    }
                ],
            }
        ],
    }
    path = tmp_path / f"{name}.test.yml"
    path.write_text(json.dumps(test, indent=1), encoding="utf-8")  # YAML reads JSON
    result = subprocess.run(
        [promtool, "test", "rules", path.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_alerts_that_fire_are_the_expected_ones(name: str, tmp_path: Path) -> None:
    assert set(EXPECTED) == set(SCENARIOS)
    assert _firing(name, tmp_path) == ""
