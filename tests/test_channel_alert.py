"""GrstatsChannelError in promtool on the metrics of a simulated run: fires on an erroring one.

A simulated member recovers from its donor and cannot reach it for 200 s
(error 2003, scripted); its daemon's tables are built every 15 s of that run
by the real code (source -> MemberTables -> /metrics exposition), and the
exposed `grstats_channel_error_open` series become a promtool unit test's
input: the alert must fire once the error has lasted 2 minutes, for that
member, channel and thread, and never on a healthy group's run.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import partial
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import build_registry
from grstats.core.snapshot import DaemonSnapshot
from grstats.core.tables import MemberTables
from grstats.sources.simulated.model import GroupModel
from grstats.sources.simulated.settings import ScriptEvent, SimulationSettings
from grstats.sources.simulated.source import SimulatedSource

RULES = Path(__file__).resolve().parents[1] / "config" / "prometheus" / "grstats-rules.yml"
E = 1_767_225_600
M1, M2, M3 = (
    "11111111-1111-1111-1111-111111111111",
    "22222222-2222-2222-2222-222222222222",
    "33333333-3333-3333-3333-333333333333",
)
_OPEN = "grstats_channel_error_open"
_KEPT = (_OPEN, "mysql_perf_schema_replication_group_member_info")
STEP_S = 15
STEPS = 20  # 0 .. 285 s after +100 s
FAILING = (
    ScriptEvent(E + 100, M3, "set_state", duration_s=300, state="RECOVERING"),
    ScriptEvent(E + 100, M3, "recovery_error", duration_s=200),
)
RECOVERING_FINE = (ScriptEvent(E + 100, M3, "set_state", duration_s=300, state="RECOVERING"),)


def _same(snapshot: DaemonSnapshot) -> DaemonSnapshot:
    return snapshot


def _series(script: tuple[ScriptEvent, ...]) -> dict[str, list[float | None]]:
    """grstats_channel_error_open as M3's daemon exposes it, every STEP_S from +100 s."""
    settings = SimulationSettings(members=(M1, M2, M3), script=script)
    source = SimulatedSource(GroupModel(settings), M3)
    tables = MemberTables(group=settings.group, local_member_id=M3)
    out: dict[str, list[float | None]] = {}
    for step in range(STEPS):
        t_us = (E + 100 + step * STEP_S) * 1_000_000
        tables.set_local(source._evaluate(t_us), incarnation=1, seq=step + 1)
        snapshot = tables.snapshot(t_us)
        text = generate_latest(build_registry(partial(_same, snapshot))).decode()
        for family in text_string_to_metric_families(text):
            if family.name not in _KEPT:
                continue
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                key = f'{sample.name}{{instance="a",job="grstats",{labels}}}'
                out.setdefault(key, [None] * STEPS)[step] = sample.value
    return out


def _promtool_test(tmp_path: Path, series: dict[str, list[float | None]], alerts: str) -> str:
    shutil.copy(RULES, tmp_path / RULES.name)
    lines = [
        f"rule_files: [{RULES.name}]",
        "evaluation_interval: 15s",
        "tests:",
        "  - interval: 15s",
        "    input_series:" + ("" if series else " []"),
    ]
    for name, values in series.items():
        shown = " ".join("_" if v is None else str(int(v)) for v in values)
        lines += [f"      - series: '{name}'", f"        values: '{shown}'"]
    lines += ["    alert_rule_test:", alerts]
    (tmp_path / "t.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    done = subprocess.run(
        [promtool, "test", "rules", "t.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr if done.returncode else ""


_SUMMARY = (
    "Member 127.0.0.1:3308: channel group_replication_recovery (receiver) has shown an error "
    "for 2 minutes"
)
_DESCRIPTION = (
    "Run `grstats channels --explain` on any member of group "
    "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa: the error number, its MySQL text, the source or "
    "donor, since when."
)
FIRES = f"""\
      - eval_time: 1m
        alertname: GrstatsChannelError
        exp_alerts: []
      - eval_time: 2m30s
        alertname: GrstatsChannelError
        exp_alerts:
          - exp_labels:
              severity: warning
              group: aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa
              member_id: 33333333-3333-3333-3333-333333333333
              channel_name: group_replication_recovery
              thread: receiver
              member_host: 127.0.0.1
              member_port: "3308"
            exp_annotations:
              summary: "{_SUMMARY}"
              description: "{_DESCRIPTION}"
      - eval_time: 4m
        alertname: GrstatsChannelError
        exp_alerts: []"""
SILENT = "\n".join(
    f"      - eval_time: {m}m\n        alertname: GrstatsChannelError\n        exp_alerts: []"
    for m in (1, 2, 3, 4)
)


def test_the_alert_fires_on_a_recovery_that_cannot_reach_its_donor(tmp_path: Path) -> None:
    series = _series(FAILING)
    erred = [k for k in series if k.startswith(_OPEN)]
    assert len(erred) == 1, series  # one thread of one channel of one member erred
    assert _promtool_test(tmp_path, series, FIRES) == ""


def test_the_alert_stays_silent_on_a_healthy_recovery(tmp_path: Path) -> None:
    series = _series(RECOVERING_FINE)
    assert not [k for k in series if k.startswith(_OPEN)]
    assert _promtool_test(tmp_path, series, SILENT) == ""


def test_the_silent_expectation_would_catch_a_firing_alert(tmp_path: Path) -> None:
    # the failing run's series against the healthy expectation: promtool reports the alert
    assert "GrstatsChannelError" in _promtool_test(tmp_path, _series(FAILING), SILENT)
