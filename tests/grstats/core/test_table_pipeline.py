"""A table added as a declaration and a row builder reaches every surface (issue 25).

The probe table below exists only in this test: it is appended to
`columns.TABLES` and its builder to `snapshot_builder.BUILDERS`, and nothing
else is edited. It must then show in the JSON API, /metrics, the CLI's
table output and the SQL endpoint (information_schema and SELECT). The
expected values are the ones the builder is given here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pymysql
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.options import ApiOptions
from grstats.api.server import ApiServer
from grstats.cli.main import main
from grstats.core import columns as col
from grstats.core.snapshot import DaemonSnapshot, Row
from grstats.core.snapshot_builder import BUILDERS
from grstats.core.snapshot_inputs import SnapshotInputs, Tables
from grstats.core.tables import MemberTables
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.http import raw_get
from tests.fixtures.sql_inprocess import serve

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
LOCAL = "11111111-1111-1111-1111-111111111111"
PASSWORD = "s3cret"
PROBE = col.TableDef(
    name="grstats_pipeline_probe",
    schema="grstats",
    columns=(
        col.Column(col.MEMBER_ID, "char(36)", "id"),
        col.Column(
            "PROBE_WIDGETS",
            "bigint unsigned",
            "gauge",
            metric="grstats_pipeline_probe_widgets",
            help="Widgets of the probe table.",
        ),
        col.Column("PROBE_NOTE", "varchar(32)", nullable=True),
    ),
    metrics=col.MetricPolicy(keys=()),
)
WIDGETS = 4242
NOTE = "probe-note"


def _probe_rows(inputs: SnapshotInputs, _tables: Tables) -> tuple[Row, ...]:
    return ({col.MEMBER_ID: inputs.local_member_id, "PROBE_WIDGETS": WIDGETS, "PROBE_NOTE": NOTE},)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> DaemonSnapshot:
    """The probe table declared and built; a daemon's snapshot with it."""
    monkeypatch.setattr(col, "TABLES", (*col.TABLES, PROBE))
    monkeypatch.setitem(BUILDERS, PROBE.name, _probe_rows)
    return MemberTables(group=GROUP, local_member_id=LOCAL).snapshot(1_700_000_000_000_000)


@pytest.fixture
async def api(probe: DaemonSnapshot) -> AsyncIterator[ApiServer]:
    server = ApiServer(ApiOptions(host="127.0.0.1", port=0), lambda: probe)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def test_a_new_table_is_in_the_json_api(api: ApiServer) -> None:
    status, _, body = await raw_get(api.port, "/v1/tables")
    assert status == 200 and PROBE.name in json.loads(body)
    status, _, body = await raw_get(api.port, f"/v1/tables/{PROBE.name}")
    assert status == 200
    assert json.loads(body) == [{"MEMBER_ID": LOCAL, "PROBE_WIDGETS": WIDGETS, "PROBE_NOTE": NOTE}]


async def test_a_new_table_is_in_metrics(api: ApiServer) -> None:
    status, _, body = await raw_get(api.port, "/metrics")
    assert status == 200
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
        if s.name == "grstats_pipeline_probe_widgets"
    }
    assert found == {
        ("grstats_pipeline_probe_widgets", (("group", GROUP), ("member_id", LOCAL))): WIDGETS
    }


async def test_a_new_table_is_in_the_cli(api: ApiServer) -> None:
    url = f"http://127.0.0.1:{api.port}"
    runner = CliRunner()
    listed = await asyncio.to_thread(runner.invoke, main, ["table", "--api", url])
    assert listed.exit_code == 0, listed.output
    assert PROBE.name in listed.output.splitlines()
    shown = await asyncio.to_thread(
        runner.invoke, main, ["table", PROBE.name, "--api", url, "--format", "json"]
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output) == [
        {"MEMBER_ID": LOCAL, "PROBE_WIDGETS": WIDGETS, "PROBE_NOTE": NOTE}
    ]
    narrow = await asyncio.to_thread(runner.invoke, main, ["table", PROBE.name, "--api", url])
    assert narrow.exit_code == 0, narrow.output
    assert "PROBE_WIDGETS" in narrow.output and str(WIDGETS) in narrow.output


@pytest.fixture
def sql(probe: DaemonSnapshot) -> Iterator[int]:
    options = SqlOptions(port=0, password_hash=native_password_hash(PASSWORD))
    for running in serve(options, lambda: probe):
        yield running.port


def test_a_new_table_is_in_the_sql_endpoint(sql: int) -> None:
    with (
        pymysql.connect(host="127.0.0.1", port=sql, user="grstats", password=PASSWORD) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(
            "SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.columns"
            " WHERE TABLE_SCHEMA = 'grstats' AND TABLE_NAME = 'pipeline_probe'"
            " ORDER BY ORDINAL_POSITION"
        )
        assert cur.fetchall() == (
            ("MEMBER_ID", "NO"),
            ("PROBE_WIDGETS", "NO"),
            ("PROBE_NOTE", "YES"),
        )
        cur.execute("SELECT MEMBER_ID, PROBE_WIDGETS, PROBE_NOTE FROM grstats.pipeline_probe")
        assert cur.fetchall() == ((LOCAL, WIDGETS, NOTE),)


def test_an_undeclared_table_name_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["table", "no_such_table", "--api", "http://127.0.0.1:9"])
    assert result.exit_code == 2
    assert "no_such_table: not a table" in result.output
