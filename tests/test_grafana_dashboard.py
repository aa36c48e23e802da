"""config/grafana-dashboard.json: loads, and every query uses only series grstats exposes.

The exposed names and the metric names of each PromQL expression come from
tests/fixtures/exposed_metrics.py (a real exposition of a fully populated,
hand-built snapshot; a small tokenizer).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fixtures.exposed_metrics import exposed_names, metric_names

DASHBOARD = Path(__file__).resolve().parents[1] / "config" / "grafana-dashboard.json"


def _exprs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expr" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_exprs(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_exprs(item))
    return found


def test_dashboard_is_json_with_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["title"]
    assert [p for p in dashboard["panels"] if p["type"] != "row"]


def test_tokenizer_finds_metric_names_and_ignores_labels_and_functions() -> None:
    expr = (
        'max by (group, member_id) (rate(a_total{group=~"$group"}[$__rate_interval]))'
        " / on (group) group_left (member_host) b_info"
    )
    assert metric_names(expr) == {"a_total", "b_info"}


def test_every_query_uses_only_exposed_metric_names() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exposed = exposed_names()
    exprs = _exprs(dashboard["panels"])
    assert exprs
    for expr in exprs:
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= exposed, f"{sorted(names - exposed)} not exposed; in {expr!r}"


def test_template_variable_queries_use_exposed_metric_names() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exposed = exposed_names()
    for variable in dashboard["templating"]["list"]:
        definition = variable.get("definition")
        if definition:
            inner = re.fullmatch(r"label_values\((\w+).*\)", definition)
            assert inner is not None, definition
            assert inner.group(1) in exposed


def test_dashboard_covers_queues_rates_ratio_rollbacks_and_states() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    all_names = set().union(*(metric_names(e) for e in _exprs(dashboard["panels"])))
    assert {
        "mysql_perf_schema_transactions_in_queue",
        "mysql_perf_schema_transactions_remote_in_applier_queue",
        "mysql_perf_schema_transactions_checked_total",
        "mysql_perf_schema_conflicts_detected_total",
        "mysql_perf_schema_transactions_local_rollback_total",
        "mysql_perf_schema_replication_group_member_state",
    } <= all_names
    thresholds = [
        step["value"]
        for p in dashboard["panels"]
        for step in p.get("fieldConfig", {})
        .get("defaults", {})
        .get("thresholds", {})
        .get("steps", [])
    ]
    assert 25000 in thresholds  # the flow-control thresholds' default


def _datasource_refs(node: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                found.append(value)
            else:
                found.extend(_datasource_refs(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_datasource_refs(item))
    return found


def test_import_asks_for_the_prometheus_data_source() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    inputs = {i["name"]: i for i in dashboard["__inputs"]}
    assert inputs["DS_PROMETHEUS"]["type"] == "datasource"
    assert inputs["DS_PROMETHEUS"]["pluginId"] == "prometheus"
    required = {(r["type"], r["id"]) for r in dashboard["__requires"]}
    assert ("datasource", "prometheus") in required


def test_every_query_uses_the_imported_data_source() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    refs = _datasource_refs(dashboard["panels"]) + _datasource_refs(dashboard["templating"])
    assert refs
    assert all(ref == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"} for ref in refs), refs
    # Provisioned without an import, ${DS_PROMETHEUS} resolves as this variable.
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
