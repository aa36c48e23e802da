"""config/prometheus/grstats-rules.yml: valid, unit-tested by promtool, and about real series.

promtool (Debian package `prometheus`; `make test` installs it) checks the
rules and runs their unit tests in grstats-rules.test.yml. Every metric name a
rule reads must be one grstats exposes (a real exposition of a fully
populated snapshot, as in the dashboard test), one a rule records, or
Prometheus's own `up`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.exposed_metrics import exposed_names, metric_names

RULES_DIR = Path(__file__).resolve().parents[1] / "config" / "prometheus"
RULES = RULES_DIR / "grstats-rules.yml"
RULE_TESTS = RULES_DIR / "grstats-rules.test.yml"
PROMETHEUS_OWN = {"up"}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return subprocess.run(
        [promtool, *args], cwd=RULES_DIR, capture_output=True, text=True, timeout=120, check=False
    )


def _field(text: str, key: str) -> list[str]:
    """Values of `key:` in the YAML rule file, single-line or folded (`>-`) blocks."""
    values: list[str] = []
    lines = text.splitlines()
    pattern = re.compile(rf"^(\s*)(?:- )?{key}:\s*(.*)$")
    for index, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        value = match.group(2).strip()
        if value in (">-", ">", "|", "|-"):
            indent = len(match.group(1))
            block = []
            for follow in lines[index + 1 :]:
                if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                    break
                block.append(follow.strip())
            value = " ".join(part for part in block if part)
        values.append(value)
    return values


def test_promtool_check_rules_passes() -> None:
    result = _promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rule_unit_tests_pass() -> None:
    result = _promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_rules_read_only_series_grstats_exposes_or_records() -> None:
    text = RULES.read_text(encoding="utf-8")
    recorded = set(_field(text, "record"))
    exposed = exposed_names() | recorded | PROMETHEUS_OWN
    exprs = _field(text, "expr")
    assert len(exprs) > len(recorded)
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        assert names <= exposed, f"{sorted(names - exposed)} not exposed; in {expr!r}"


def test_every_alert_the_issue_asks_for_is_there() -> None:
    alerts = set(_field(RULES.read_text(encoding="utf-8"), "alert"))
    assert {
        "GrstatsMemberUnreachable",
        "GrstatsCertificationQueueHigh",
        "GrstatsConflictsRising",
        "GrstatsHistoryDegraded",
    } <= alerts


def test_every_alert_has_a_unit_test() -> None:
    alerts = set(_field(RULES.read_text(encoding="utf-8"), "alert"))
    tested = set(_field(RULE_TESTS.read_text(encoding="utf-8"), "alertname"))
    assert alerts == tested
