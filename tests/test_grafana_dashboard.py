"""config/grafana-dashboard.json: loads, and every query uses only series grstats exposes.

The exposed names come from a real exposition of a fully populated, hand-built
snapshot parsed with prometheus_client's parser; the metric names in each
PromQL expression are found by a small tokenizer written here (strings, label
matchers, label lists and function names removed; what remains must be
metric names).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import build_registry
from grstats.core import columns
from grstats.core.health import BUS_DISCONNECTED, SOURCE_DOWN, Health
from grstats.core.history_figures import DropCounts, HistoryFigures
from grstats.core.snapshot import (
    MEMBER_STATS_COLUMNS,
    MEMBER_STATUS_COLUMNS,
    MEMBERS_COLUMNS,
    REJECT_REASONS,
    DaemonCounters,
    DaemonSnapshot,
    Departed,
)

DASHBOARD = Path(__file__).resolve().parents[1] / "config" / "grafana-dashboard.json"

PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or"}
PROMQL_KEYWORDS |= {"unless", "bool", "offset", "inf", "nan"}


def _full_snapshot() -> DaemonSnapshot:
    member = "11111111-1111-1111-1111-111111111111"
    stats = dict.fromkeys(MEMBER_STATS_COLUMNS, 1) | {"MEMBER_ID": member}
    members = dict.fromkeys(MEMBERS_COLUMNS, "x") | {"MEMBER_ID": member, "MEMBER_PORT": 3306}
    status = dict.fromkeys(MEMBER_STATUS_COLUMNS, 1) | {"MEMBER_ID": member, "GROUP_NAME": "g"}

    def full_row(table: columns.TableDef) -> dict[str, object]:
        # every column filled, so every metric it declares has a series
        row: dict[str, object] = {}
        for c in table.columns:
            if c.kind == "timestamp":
                row[c.name] = "2026-11-23 10:00:00.000000"
            elif c.numeric:
                row[c.name] = 1
            else:
                row[c.name] = "x"
        row[columns.MEMBER_ID] = member
        if columns.CHANNEL_NAME in row:
            row[columns.CHANNEL_NAME] = columns.GROUP_REPLICATION_CHANNEL
        return row

    flow = full_row(columns.FLOW_CONTROL) | {columns.BOTTLENECK: "applier"}
    return DaemonSnapshot(
        taken_at_us=0,
        group_name="g",
        local_member_id=member,
        tables={
            "replication_group_member_stats": (stats,),
            "replication_group_members": (members,),
            "grstats_member_status": (status,),
            "replication_group_member_lag": (full_row(columns.MEMBER_LAG),),
            "grstats_flow_control": (flow,),
            "replication_applier_metrics": (full_row(columns.APPLIER_METRICS),),
            "replication_applier_progress_by_worker": (
                full_row(columns.APPLIER_PROGRESS_BY_WORKER),
            ),
            "grstats_member_gtids": (full_row(columns.MEMBER_GTIDS),),
        },
        counters=DaemonCounters(
            envelopes_accepted=1, bus_reconnects=1, rejected=dict.fromkeys(REJECT_REASONS, 1)
        ),
        gauges={"bus_connected": 1, "source_up": 1, "history_healthy": 1},
        # a running daemon checks its bus and source (one degraded, for the series' value)
        health=Health().check(BUS_DISCONNECTED).check(SOURCE_DOWN, "no server"),
        history=HistoryFigures(
            dropped=DropCounts(invalid=1, duplicate=1), values_nulled={"x": 1}, files_quarantined=1
        ),
        departed=(Departed("g", "99999999-9999-9999-9999-999999999999", "UNREACHABLE", 0),),
    )


def _exposed_names() -> set[str]:
    text = generate_latest(build_registry(_full_snapshot)).decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


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


def _metric_names(expr: str) -> set[str]:
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    # label lists after by/without/on/ignoring/group_left/group_right
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # dashboard variables
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        token = match.group(0)
        rest = text[match.end() :].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        if token.lower() in PROMQL_KEYWORDS:
            continue
        names.add(token)
    return names


def test_dashboard_is_json_with_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["title"]
    assert [p for p in dashboard["panels"] if p["type"] != "row"]


def test_tokenizer_finds_metric_names_and_ignores_labels_and_functions() -> None:
    expr = (
        'max by (group, member_id) (rate(a_total{group=~"$group"}[$__rate_interval]))'
        " / on (group) group_left (member_host) b_info"
    )
    assert _metric_names(expr) == {"a_total", "b_info"}


def test_every_query_uses_only_exposed_metric_names() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exposed = _exposed_names()
    exprs = _exprs(dashboard["panels"])
    assert exprs
    for expr in exprs:
        names = _metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= exposed, f"{sorted(names - exposed)} not exposed; in {expr!r}"


def test_template_variable_queries_use_exposed_metric_names() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exposed = _exposed_names()
    for variable in dashboard["templating"]["list"]:
        definition = variable.get("definition")
        if definition:
            inner = re.fullmatch(r"label_values\((\w+).*\)", definition)
            assert inner is not None, definition
            assert inner.group(1) in exposed


def test_dashboard_covers_queues_rates_ratio_rollbacks_and_states() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    all_names = set().union(*(_metric_names(e) for e in _exprs(dashboard["panels"])))
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
