"""`grstats stats|members|status|watch` against real daemons, and `--bus` against a real broker.

One Mosquitto and two simulated member daemons (`grstats run` subprocesses,
started with tests/fixtures/daemons.py)
serve the whole module; each test runs the CLI as a user would (a
subprocess: real exit status, real stderr). Expected values are the configs
the test wrote, the daemon's API read directly with urllib, or messages the
test published itself.
"""

from __future__ import annotations

import asyncio
import csv
import fcntl
import io
import json
import os
import pty
import struct
import subprocess
import termios
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from grstats.core import columns
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.broker import Broker, find_mosquitto, free_port
from tests.fixtures.bus_helpers import publish_retained
from tests.fixtures.cli import GRSTATS, grstats
from tests.fixtures.daemons import (
    GROUP,
    M1,
    M2,
    STATS,
    DaemonProc,
    daemon_config,
    daemons,
    wait_for,
)


@dataclass
class Cluster:
    broker: Broker
    apis: list[str]
    daemons: list[DaemonProc]


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=2) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    binary = find_mosquitto()
    if binary is None:
        pytest.skip("mosquitto is not installed")
    workdir = tmp_path_factory.mktemp("cli")
    (workdir / "broker").mkdir()
    broker = Broker(binary, workdir / "broker", free_port())
    broker.start()
    try:
        configs = []
        for index, member in enumerate((M1, M2)):
            config = daemon_config(broker.port, member, (M1, M2), period=0.5)
            config["member"]["port"] = 3306 + index
            config["simulated"]["mode"] = "multi-primary"
            configs.append(config)
        with daemons(workdir, configs) as started:
            for d in started:
                wait_for(lambda d=d: len(d.table(STATS)) == 2 or None, 30, "both members")
            apis = [f"http://127.0.0.1:{d.api_port}" for d in started]
            yield Cluster(broker, apis, started)
    finally:
        broker.stop()


def _parse_boxed(text: str) -> list[dict[str, str]]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        for line in lines[1:]
    ]


EXPECTED_MEMBERS = [
    {
        "CHANNEL_NAME": "group_replication_applier",
        "MEMBER_ID": M1,
        "MEMBER_HOST": "127.0.0.1",
        "MEMBER_PORT": "3306",
        "MEMBER_STATE": "ONLINE",
        "MEMBER_ROLE": "PRIMARY",
    },
    {
        "CHANNEL_NAME": "group_replication_applier",
        "MEMBER_ID": M2,
        "MEMBER_HOST": "127.0.0.1",
        "MEMBER_PORT": "3307",
        "MEMBER_STATE": "ONLINE",
        "MEMBER_ROLE": "PRIMARY",
    },
]


def _subset(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    keys = EXPECTED_MEMBERS[0].keys()
    return sorted(({k: str(r[k]) for k in keys} for r in rows), key=lambda r: r["MEMBER_ID"])


def test_members_table_like_the_mysql_client(cluster: Cluster) -> None:
    result = grstats("members", "--api", cluster.apis[0], "--wide")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("+-") and lines[0].endswith("-+")
    assert lines[-1] == "2 rows in set"
    assert _subset(_parse_boxed(result.stdout)) == EXPECTED_MEMBERS


def test_members_vertical_like_backslash_g(cluster: Cluster) -> None:
    result = grstats("members", "--api", cluster.apis[1], "--vertical")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "*************************** 1. row ***************************"
    assert "*************************** 2. row ***************************" in lines
    assert {line.split(": ", 1)[1] for line in lines if "MEMBER_ID:" in line} == {M1, M2}
    assert lines[-1] == "2 rows in set"


def test_members_json_equals_the_api(cluster: Cluster) -> None:
    result = grstats("members", "--api", cluster.apis[0], "--format", "json")
    assert result.returncode == 0, result.stderr
    from_api = _get_json(f"{cluster.apis[0]}/v1/tables/replication_group_members")
    assert json.loads(result.stdout) == from_api


def test_members_csv_has_header_and_a_row_per_member(cluster: Cluster) -> None:
    result = grstats("members", "--api", cluster.apis[0], "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert _subset(rows) == EXPECTED_MEMBERS


def test_stats_table_has_every_member_and_the_ps_columns(cluster: Cluster) -> None:
    result = grstats("stats", "--api", cluster.apis[0], "--wide")
    assert result.returncode == 0, result.stderr
    rows = _parse_boxed(result.stdout)
    assert sorted(r["MEMBER_ID"] for r in rows) == [M1, M2]
    assert list(rows[0])[:4] == [
        "CHANNEL_NAME",
        "VIEW_ID",
        "MEMBER_ID",
        "COUNT_TRANSACTIONS_IN_QUEUE",
    ]
    assert list(rows[0])[-1] == "COUNT_TRANSACTIONS_LOCAL_ROLLBACK"


def test_status_reads_api_from_config_file(cluster: Cluster, tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    port = cluster.daemons[1].api_port
    config.write_text(f'[member]\ngroup = "{GROUP}"\n\n[api]\nlisten = "0.0.0.0:{port}"\n')
    result = grstats("status", "--config", str(config), "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    local = [r for r in rows if r["IS_LOCAL"] == 1]
    assert [r["MEMBER_ID"] for r in local] == [M2]  # the daemon of member 2's config


def test_watch_prints_bounded_refreshes_with_rates(cluster: Cluster) -> None:
    result = grstats(
        "watch", "--api", cluster.apis[0], "--count", "2", "--interval", "1.2", "--wide"
    )
    assert result.returncode == 0, result.stderr
    tables = [chunk for chunk in result.stdout.split("replication_group_member_stats @") if chunk]
    assert len(tables) == 2
    second = _parse_boxed(tables[1])
    assert sorted(r["MEMBER_ID"] for r in second) == [M1, M2]
    assert all(float(r["checked/s"]) >= 0 for r in second)


def _assert_one_line_error(result: subprocess.CompletedProcess[str], status: int) -> None:
    assert result.returncode == status, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stdout == ""


def test_no_daemon_is_one_line_and_status_1() -> None:
    result = grstats("stats", "--api", f"http://127.0.0.1:{free_port()}")
    _assert_one_line_error(result, 1)
    assert "cannot reach the grstats daemon" in result.stderr


def test_watch_without_daemon_is_one_line_and_status_1() -> None:
    result = grstats("watch", "--api", f"127.0.0.1:{free_port()}", "--count", "1")
    _assert_one_line_error(result, 1)


def test_bad_url_is_one_line_and_status_2() -> None:
    _assert_one_line_error(grstats("members", "--api", "ftp://example"), 2)
    _assert_one_line_error(grstats("members", "--api", "http://127.0.0.1:notaport"), 2)


def test_bad_config_names_the_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / "grstats.toml"
    config.write_text('[bus]\nport = "abc"\n')
    result = grstats("stats", "--config", str(config))
    _assert_one_line_error(result, 2)
    assert "bus.port" in result.stderr and "grstats.toml" in result.stderr


def test_unreachable_broker_is_one_line_and_status_1() -> None:
    result = grstats("stats", "--bus", f"127.0.0.1:{free_port()}", "--timeout", "1")
    _assert_one_line_error(result, 1)
    assert "MQTT broker" in result.stderr


def test_bad_bus_address_is_status_2() -> None:
    _assert_one_line_error(grstats("stats", "--bus", "127.0.0.1:notaport"), 2)


# -- --bus: retained messages published by the test --------------------------------------

G2 = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
R1 = "cccccccc-0000-0000-0000-000000000001"
R2 = "cccccccc-0000-0000-0000-000000000002"


def _envelope(group: str, member: str, port: int, stats: PipelineStats) -> bytes:
    info = MemberInfo(
        id=member,
        host="10.0.0.9",
        port=port,
        state="ONLINE",
        role="SECONDARY",
        version="8.4.3",
        gcs_id=f"10.0.0.9:{port + 10000}",
    )
    return encode_envelope(
        Envelope(
            group=group,
            member=info,
            view_id="17000000:7",
            incarnation=99,
            seq=5,
            sent_us=1_700_000_000_000_000,
            stats=encode_pipeline_stats(stats),
        )
    )


@pytest.fixture
def retained(broker: Broker) -> Broker:
    stats1 = PipelineStats(
        transactions_waiting_certification=3,
        transactions_waiting_apply=11,
        transactions_certified=1000,
        transactions_applied=600,
        transactions_local=390,
        transactions_negative_certified=7,
        transactions_rows_validating=42,
        transactions_local_rollback=2,
    )
    stats2 = PipelineStats(transactions_certified=5, transactions_local=5)
    messages = [
        (f"grstats/v1/{G2}/{R1}/stats", _envelope(G2, R1, 3306, stats1)),
        (f"grstats/v1/{G2}/{R1}/status", b"online"),
        (f"custom/prefix/{G2}/{R2}/stats", _envelope(G2, R2, 3307, stats2)),
    ]
    asyncio.run(publish_retained(broker.host, broker.port, messages))
    return broker


def test_bus_mode_builds_rows_from_retained_messages(retained: Broker) -> None:
    result = grstats("stats", "--bus", retained.url, "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert rows == [
        {
            "CHANNEL_NAME": "group_replication_applier",
            "VIEW_ID": "17000000:7",
            "MEMBER_ID": R1,
            "COUNT_TRANSACTIONS_IN_QUEUE": 3,
            "COUNT_TRANSACTIONS_CHECKED": 1000,
            "COUNT_CONFLICTS_DETECTED": 7,
            "COUNT_TRANSACTIONS_ROWS_VALIDATING": 42,
            "TRANSACTIONS_COMMITTED_ALL_MEMBERS": "",
            "LAST_CONFLICT_FREE_TRANSACTION": "",
            "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": 11,
            "COUNT_TRANSACTIONS_REMOTE_APPLIED": 600,
            "COUNT_TRANSACTIONS_LOCAL_PROPOSED": 390,
            "COUNT_TRANSACTIONS_LOCAL_ROLLBACK": 2,
        }
    ]


def test_bus_mode_members_table_and_prefix(retained: Broker) -> None:
    result = grstats("members", "--bus", retained.url, "--prefix", "custom/prefix", "--wide")
    assert result.returncode == 0, result.stderr
    rows = _parse_boxed(result.stdout)
    assert [(r["MEMBER_ID"], r["MEMBER_HOST"], r["MEMBER_PORT"]) for r in rows] == [
        (R2, "10.0.0.9", "3307")
    ]


def test_bus_mode_group_filter(retained: Broker) -> None:
    other = grstats("stats", "--bus", retained.url, "--group", GROUP, "--format", "json")
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout) == []
    mine = grstats("stats", "--bus", retained.url, "--group", G2, "--format", "csv")
    assert [r["MEMBER_ID"] for r in csv.DictReader(io.StringIO(mine.stdout))] == [R1]


def test_daemon_metrics_endpoint_has_a_series_per_member(cluster: Cluster) -> None:
    with urllib.request.urlopen(f"{cluster.apis[0]}/metrics", timeout=2) as response:
        text = response.read().decode()
    members = {
        sample.labels["member_id"]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "mysql_perf_schema_transactions_checked_total"
        and sample.labels["group"] == GROUP
    }
    assert members == {M1, M2}


def test_group_filter_against_the_daemon(cluster: Cluster) -> None:
    mine = grstats("members", "--api", cluster.apis[0], "--group", GROUP, "--format", "json")
    assert sorted(r["MEMBER_ID"] for r in json.loads(mine.stdout)) == [M1, M2]
    other = grstats("members", "--api", cluster.apis[0], "--group", G2)
    assert other.returncode == 0, other.stderr
    assert other.stdout == "Empty set\n"


def _in_pty(argv: list[str], columns: int = 80) -> str:
    """Run a command on a pseudo-terminal `columns` wide; its whole output."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    process = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert process.wait(timeout=60) == 0, b"".join(chunks).decode()
    return b"".join(chunks).decode().replace("\r\n", "\n")


_TABLE_COMMANDS = (
    ["members"],
    ["stats"],
    ["status"],
    ["lag"],
    ["flow"],
    ["applier"],
    ["applier", "--workers"],
    ["gtids"],
    ["commit-path"],
    *(["table", name] for name in columns.table_names()),
)


def _shown_headers(out: str) -> list[str]:
    header = next(line for line in out.splitlines() if line.startswith("| "))
    return [cell.strip() for cell in header.strip("|").split("|")]


def _hidden(out: str) -> tuple[int, int]:
    """(hidden, total) from the footer "(H of T columns hidden; ...)"."""
    footer = out.rstrip("\n").rsplit("\n(", 1)[-1]
    words = footer.split()
    if footer.startswith("all "):
        return 0, int(words[1])
    return int(words[0]), int(words[2])


def test_every_table_command_fits_the_terminal_with_members_as_host_port(
    cluster: Cluster,
) -> None:
    """At COLUMNS=80 no line is wider than 80 and no member UUID shows; at 160 more columns
    show; the footer counts the table's hidden columns (its columns less those shown)."""
    for command in _TABLE_COMMANDS:
        widths = {}
        for width in (80, 160):
            out = _in_pty([*GRSTATS, *command, "--api", cluster.apis[0]], width)
            lines = out.splitlines()
            assert max(len(line) for line in lines) <= width, (command, width, out)
            assert M1 not in out and M2 not in out, (command, width, out)
            assert "--wide" in out.rsplit("(", 1)[-1], (command, out)
            if "Empty set" in out:
                continue
            assert "127.0.0.1:3306" in out and "127.0.0.1:3307" in out, (command, out)
            hidden, total = _hidden(out)
            shown = _shown_headers(out)
            assert hidden == total - len(shown), (command, width, out)
            widths[width] = (len(shown), hidden)
        if widths and widths[80][1]:
            assert widths[160][0] > widths[80][0], (command, widths)


def test_wide_shows_every_column_under_mysqls_names(cluster: Cluster) -> None:
    result = grstats("lag", "--api", cluster.apis[0], "--wide")
    assert result.returncode == 0, result.stderr
    rows = _parse_boxed(result.stdout)
    assert "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP" in rows[0]
    assert {r["MEMBER_ID"] for r in rows} >= {M1}


def test_watch_fits_80_columns_with_members_as_host_port_role_and_lag(
    cluster: Cluster,
) -> None:
    out = _in_pty([*GRSTATS, "watch", "--api", cluster.apis[0], "--count", "1"])
    lines = [line for line in out.splitlines() if line.strip()]
    assert max(len(line) for line in lines) <= 80, out
    assert "127.0.0.1:3306" in out and "127.0.0.1:3307" in out, out
    assert M1 not in out and M2 not in out, out
    header = next(line for line in lines if "MEMBER" in line and line.startswith("|"))
    assert {"ROLE", "LAG", "STATE"} <= {cell.strip() for cell in header.split("|")}, out
    assert "columns hidden" in lines[-1] and "--wide" in lines[-1], out


def test_watch_off_a_terminal_names_what_it_left_out(cluster: Cluster) -> None:
    plain = grstats("watch", "--api", cluster.apis[0], "--count", "1")
    assert plain.returncode == 0, plain.stderr
    last = [line for line in plain.stdout.splitlines() if line.strip()][-1]
    assert "columns hidden" in last and "--wide" in last, plain.stdout
    wide = grstats("watch", "--api", cluster.apis[0], "--count", "1", "--wide")
    assert "hidden" not in wide.stdout, wide.stdout


def test_watch_wide_shows_the_member_uuids(cluster: Cluster) -> None:
    plain = grstats("watch", "--api", cluster.apis[0], "--count", "1", "--wide")
    assert plain.returncode == 0, plain.stderr
    assert M1 in plain.stdout and M2 in plain.stdout, plain.stdout
    assert "ROWS_VALIDATING" in plain.stdout, plain.stdout
    narrow = grstats("watch", "--api", cluster.apis[0], "--count", "1")
    assert M1 not in narrow.stdout and "127.0.0.1:3306" in narrow.stdout, narrow.stdout


def test_applier_fits_80_columns_with_members_as_host_port(cluster: Cluster) -> None:
    for extra in ([], ["--workers"]):
        out = _in_pty([*GRSTATS, "applier", "--api", cluster.apis[0], *extra])
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= 80, (extra, out)
        assert M1 not in out and M2 not in out, (extra, out)
        assert "--wide" in lines[-1], (extra, out)
    wide = grstats("applier", "--api", cluster.apis[0], "--wide")
    assert wide.returncode == 0, wide.stderr
    assert "WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME" in wide.stdout
