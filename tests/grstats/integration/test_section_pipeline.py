"""A section added as a declaration, a source value and a table reaches every surface
(issue 40), as `tests/grstats/core/test_table_pipeline.py` does for tables.

Two simulated daemons on a real Mosquitto run `tests/fixtures/probe_section.py`
at start-up (a `sitecustomize` on their PYTHONPATH; nothing in grstats is
edited): M1's samples carry the probe value n = 1, 2, ... ; its encoder refuses
multiples of 5, a receiver's decoder multiples of 7. M2 must then show M1's
value in its table (JSON), on /metrics, over its SQL endpoint, and count the
refusals on /metrics and /healthz on both sides.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pymysql
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.broker import Broker
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    DaemonProc,
    daemon_config,
    http_get,
    spawn_daemon,
    wait_for,
    wait_started,
)
from tests.fixtures.probe_section import SITECUSTOMIZE, TABLE

REPO = Path(__file__).resolve().parents[3]
PASSWORD = "probe-section-secret"


def _metrics(d: DaemonProc) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, body = http_get(d.api_port, "/metrics")
    assert status == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def _value_of(d: DaemonProc, member: str) -> int | None:
    rows = {r["MEMBER_ID"]: r for r in d.table(TABLE.name)}
    value = rows.get(member, {}).get("PROBE_VALUE")
    return value if isinstance(value, int) else None


def test_a_new_section_goes_from_the_source_to_another_daemons_surfaces(
    broker: Broker, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = {"PYTHONPATH": path}
    secret = tmp_path / "sql.password"
    secret.write_text(PASSWORD + "\n", encoding="utf-8")
    configs = [daemon_config(broker.port, m, (M1, M2)) for m in (M1, M2)]
    configs[1]["sql"] = {"listen": "127.0.0.1:0", "password_file": str(secret)}
    procs = [spawn_daemon(tmp_path / f"d{i}", c, env=env) for i, c in enumerate(configs)]
    sender, receiver = (wait_started(p) for p in procs)

    # the receiver's table (JSON) shows the sender's value: a number neither side refused
    value = wait_for(lambda: _value_of(receiver, M1), 30, "M1's probe value on M2")
    assert value % 5 and value % 7
    assert _value_of(sender, M1) is not None  # the sender's own row, from its sample

    # /metrics: the table's gauge, and the section's counters moving on both sides
    gauge = ("grstats_section_probe_value", (("group", GROUP), ("member_id", M1)))

    def counted() -> dict[Any, float] | None:
        got = {**_metrics(receiver), **{("sender", *k): v for k, v in _metrics(sender).items()}}
        malformed = got.get(("grstats_envelopes_probe_malformed_total", ()))
        return got if malformed and gauge in got else None

    series = wait_for(counted, 30, "M1's probe gauge and a malformed probe counted on M2")
    assert series[gauge] % 5 and series[gauge] % 7
    unsendable = ("sender", "grstats_ext_sections_unsendable_total", (("section", "probe"),))
    assert series[unsendable] >= 1
    assert receiver.counters()["envelopes_probe_malformed"] >= 1
    assert sender.counters()["ext_probe_unsendable"] >= 1

    # the SQL endpoint serves the same live table (schema grstats drops the prefix)
    port = next(int(e["sql_port"]) for e in receiver.events() if e.get("event") == "daemon.started")
    with (
        pymysql.connect(host="127.0.0.1", port=port, user="grstats", password=PASSWORD) as conn,
        conn.cursor() as cur,
    ):
        rows = wait_for(lambda: _sql_rows(cur), 20, "M1's probe row over SQL")
    assert rows[M1] % 5 and rows[M1] % 7  # what M2 took of M1's; M2's own row is its sample
    for p in procs:
        assert p.terminate() == 0


def _sql_rows(cur: Any) -> dict[str, int] | None:
    cur.execute("SELECT MEMBER_ID, PROBE_VALUE FROM grstats.section_probe")
    rows = {str(m): v for m, v in cur.fetchall() if v is not None}
    return rows if M1 in rows else None
