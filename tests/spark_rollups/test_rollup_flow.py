"""Flow-control rollups equal DuckDB over the same history; the report names the slow member.

The history is scripted by hand (three members, ISO week 2026-W47): member c
is the slow one -- an applier bottleneck from 10:01:40 to 10:04:59 (its queue
25,000 over its excess: the applier threshold; it applies 50 tx/s) while the
quota is active from 10:01:41 to 10:05:40 and holds writers until 10:04:59
(the rest is its release: active, nobody held), with one missing sample
(10:03:20), then a bottleneck again at 10:06:40-49 with no writer held, and
an episode across midnight; member b is a certifier bottleneck for 11 of
those seconds (sampled 0.4 s after the second); member a's rows are partly
written twice, and it alone says "held" at 10:08:20; a file from before the
flow-control columns has none.  The rollup runs as production runs it
(`run_rollup`); the expected tables are DuckDB SQL written from the
definitions in spark_rollups/flowrollup.py's docstring
(tests/fixtures/rollup_oracle.py, shared with the benchmark), over the same files
(`union_by_name` reads the old file's fc_* as NULL).  The key figures are also
worked out by hand.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grstats.core.records import FLOW_HELD_HISTORY_COLUMNS, FLOW_HISTORY_COLUMNS
from spark_rollups.report import report
from spark_rollups.rollup import FLOW_TABLES, run_rollup
from tests.fixtures.rollup_oracle import flow_sql
from tests.spark_rollups.history_rows import SCHEMA, row

pytestmark = pytest.mark.slow

DAY1 = dt.datetime(2026, 11, 17, tzinfo=dt.UTC)  # Tuesday of ISO week 2026-W47
TEN = DAY1 + dt.timedelta(hours=10)
MIDNIGHT = DAY1 + dt.timedelta(days=1)
INF = math.inf


def _throttled(s: int) -> int:
    return int(101 <= s <= 340)


def _held(s: int) -> int:
    return int(101 <= s <= 299)


def _c(s: int, at: dt.datetime, *, throttled: int, bottleneck: bool, held: int) -> dict[str, Any]:
    eta = (INF if s % 3 == 0 else float(s)) if bottleneck else 0.0
    return row(
        "c",
        at,
        applier_queue=26_000 + s if bottleneck else 10,
        queue=3,
        applied=50 * s,
        fc_bottleneck="applier" if bottleneck else "",
        fc_excess_over_threshold=1_000 + s if bottleneck else 0,
        fc_group_quota=500 if throttled else 0,
        fc_throttling=throttled,
        fc_writers_held=held,
        fc_catch_up_eta_seconds=eta,
        fc_failover_ready=int(eta <= 60),
    )


def _history() -> dict[str, list[dict[str, Any]]]:
    a, b, c = [], [], []
    for s in range(600):
        at = TEN + dt.timedelta(seconds=s)
        throttled, held = _throttled(s), _held(s)
        a.append(
            row(
                "a",
                at,
                fc_bottleneck="",
                fc_excess_over_threshold=0,
                fc_group_quota=0,
                fc_throttling=1 if s == 500 else throttled,  # only a saw the quota at 500
                fc_writers_held=1 if s == 500 else held,  # and a writer held by it
                fc_catch_up_eta_seconds=0.0,
                fc_failover_ready=1,
            )
        )
        certifier = 250 <= s <= 260
        b.append(
            row(
                "b",
                at + dt.timedelta(seconds=0.4),
                queue=30_000 if certifier else 5,
                fc_bottleneck="certifier" if certifier else "",
                fc_excess_over_threshold=5_000 if certifier else 0,
                fc_group_quota=500 if throttled else 0,
                fc_throttling=throttled,
                fc_writers_held=held,
                fc_catch_up_eta_seconds=None if s < 5 else 0.5 * (s % 4),
                fc_failover_ready=None if s < 5 else 1,
            )
        )
        if s != 200:  # one missing sample inside the episode
            bottleneck = 100 <= s <= 299 or 400 <= s <= 409
            c.append(_c(s, at, throttled=throttled, bottleneck=bottleneck, held=held))
    across = []  # 23:59:50 .. 00:00:09: an episode cut by midnight
    for k in range(-10, 10):
        at = MIDNIGHT + dt.timedelta(seconds=k)
        across.append(_c(10_000 + k, at, throttled=1, bottleneck=True, held=1))
        across.append(
            row(
                "a",
                at,
                fc_bottleneck="",
                fc_throttling=1,
                fc_writers_held=1,
                fc_catch_up_eta_seconds=0.0,
            )
        )
    old = [row("a", MIDNIGHT + dt.timedelta(hours=10, seconds=s)) for s in range(60)]
    return {"a": a, "a-dup": a[:100], "b": b, "c": c, "across": across, "old": old}


def _write(root: Path, name: str, rows: list[dict[str, Any]]) -> None:
    by_day: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_day.setdefault(r["sampled_at"].date().isoformat(), []).append(r)
    for day, items in by_day.items():
        directory = root / "group=g1" / f"date={day}"
        directory.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist(items, schema=SCHEMA)
        if name == "old":  # before issue 13: no fc_* columns at all
            flow = [*FLOW_HISTORY_COLUMNS, *FLOW_HELD_HISTORY_COLUMNS]
            table = table.drop_columns([n for n, _ in flow])
        pq.write_table(table, directory / f"part-{name}.parquet")


@pytest.fixture(scope="module")
def flow_rollup(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("flow")
    history, out = root / "history", root / "rollups"
    for name, rows in _history().items():
        _write(history, name, rows)
    run_rollup(spark, str(history), str(out), since="2026-11-17")
    return history, out


# -- the definitions, in DuckDB (tests/fixtures/rollup_oracle.py) -----------------


def _duck(history: Path, table: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = duckdb.sql(flow_sql(history, table)).to_arrow_table().to_pylist()
    return rows


def _spark_table(out: Path, table: str, columns: str) -> list[dict[str, Any]]:
    files = f"read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)"
    sql = f"SELECT {columns} FROM {files}"
    rows: list[dict[str, Any]] = duckdb.sql(sql).to_arrow_table().to_pylist()
    return rows


def _keyed(rows: list[dict[str, Any]], *key: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(r[k] for k in key): {c: v for c, v in r.items() if c not in key} for r in rows}


def _assert_equal(
    actual: dict[tuple[Any, ...], dict[str, Any]], expected: dict[tuple[Any, ...], dict[str, Any]]
) -> None:
    assert set(actual) == set(expected)
    for key, want in expected.items():
        for column, value in want.items():
            got = actual[key][column]
            if isinstance(value, float):
                assert got == pytest.approx(value, rel=1e-12), (key, column)
            else:
                assert got == value, (key, column)


GROUP_HOUR = (
    "seconds, throttled_seconds, attributed_seconds, unattributed_seconds, shared_seconds, "
    "quota_active_seconds"
)


def test_group_hour_equals_duckdb(flow_rollup: tuple[Path, Path]) -> None:
    history, out = flow_rollup
    expected = _duck(history, "flow_control_group_hour")
    actual = _spark_table(
        out, "flow_control_group_hour", f"group_name, epoch(bucket_start) AS hour, {GROUP_HOUR}"
    )
    _assert_equal(_keyed(actual, "group_name", "hour"), _keyed(expected, "group_name", "hour"))
    # by hand: 10:00 held 101..299 and 500 = 200 s; c caused 101..299 without 200 = 198 s
    # (b's 250..260 inside them: shared 11); unattributed 200 and 500 = 2; the quota was
    # active 101..340 and 500 = 241 s
    hour = {r["hour"]: r for r in expected}[int(TEN.timestamp())]
    assert (hour["throttled_seconds"], hour["attributed_seconds"]) == (200, 198)
    assert (hour["unattributed_seconds"], hour["shared_seconds"]) == (2, 11)
    assert hour["quota_active_seconds"] == 241


MEMBER_HOUR = (
    "seconds, bottleneck_seconds, throttled_seconds_caused, throttled_seconds_caused_certifier, "
    "throttled_seconds_caused_applier, excess_max, certifier_queue_max, applier_queue_max, "
    "catch_up_0s, catch_up_under_10s, catch_up_10_60s, catch_up_over_60s, catch_up_never, "
    "catch_up_unknown, catch_up_eta_p50, catch_up_eta_p95, catch_up_eta_max, "
    "failover_unready_seconds, uncontained_seconds, apply_rate, applier_threshold"
)


def test_member_hour_equals_duckdb(flow_rollup: tuple[Path, Path]) -> None:
    history, out = flow_rollup
    expected = _duck(history, "flow_control_member_hour")
    actual = _spark_table(
        out,
        "flow_control_member_hour",
        f"group_name, member_id, epoch(bucket_start) AS hour, {MEMBER_HOUR}",
    )
    key = ("group_name", "member_id", "hour")
    _assert_equal(_keyed(actual, *key), _keyed(expected, *key))
    c_ten = {(r["member_id"], r["hour"]): r for r in expected}[("c", int(TEN.timestamp()))]
    assert c_ten["throttled_seconds_caused"] == 198  # by hand, see the group test
    assert c_ten["bottleneck_seconds"] == 199 + 10  # 100..299 without 200, and 400..409
    # a bottleneck with no writer held: 100 (before the first hold) and 400..409
    assert c_ten["uncontained_seconds"] == 11
    # applied 50 x s: 0 at 10:00:00, 29,950 at 10:09:59, over 599 s; queue - excess
    assert c_ten["apply_rate"] == 50.0 and c_ten["applier_threshold"] == 25_000


def test_episodes_equal_duckdb(flow_rollup: tuple[Path, Path]) -> None:
    history, out = flow_rollup
    expected = _duck(history, "flow_control_episodes")
    actual = _spark_table(
        out,
        "flow_control_episodes",
        "group_name, member_id, epoch(episode_start)::BIGINT AS start_s, "
        "epoch(episode_end)::BIGINT AS end_s, throttled_seconds, bottleneck, excess_max, "
        "certifier_queue_max, applier_queue_max",
    )
    key = ("group_name", "member_id", "start_s")
    _assert_equal(_keyed(actual, *key), _keyed(expected, *key))
    c_episodes = sorted(
        (r["start_s"], r["throttled_seconds"]) for r in expected if r["member_id"] == "c"
    )
    start = int(TEN.timestamp())
    midnight = int(MIDNIGHT.timestamp())
    assert c_episodes == [(start + 101, 198), (midnight - 10, 10), (midnight, 10)]


def test_report_attributes_the_throttled_time_to_the_slow_member(
    spark: Any, flow_rollup: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = flow_rollup
    report(spark, str(out), "2026-W47", tmp_path)
    directory = tmp_path / "g1"
    markdown = (directory / "report.md").read_text(encoding="utf-8")
    assert "## Who held the group back" in markdown
    # by hand: held 200 + 10 + 10 = 220 s (3 min 40 s); c caused 198 + 10 + 10 = 218 s
    # (3 min 38 s, 99.1 %); the quota active 241 + 20 = 261 s (4 min 21 s)
    assert "Writers were held by flow control for 3 min 40 s this week" in markdown
    assert "the quota was active for 4 min 21 s" in markdown
    assert "caused by member **host-c:3306**: 3 min 38 s (99.1% of the held time)" in markdown
    with (directory / "flow_by_member.csv").open(encoding="utf-8") as handle:
        members = list(csv.DictReader(handle))
    # host:port order
    assert [m["member"] for m in members] == ["host-a:3306", "host-b:3306", "host-c:3306"]
    assert float(members[2]["share"]) == pytest.approx(218 / 220)
    assert float(members[1]["share"]) == pytest.approx(11 / 220)
    with (directory / "flow_sustained_periods.csv").open(encoding="utf-8") as handle:
        episodes = list(csv.DictReader(handle))
    # the midnight pieces joined (1 s apart); c's two periods are 14 h apart; longest first
    assert [(e["member"], e["start (UTC)"], e["end (UTC)"]) for e in episodes] == [
        ("host-c:3306", "2026-11-17 10:01:41", "2026-11-17 10:04:59"),
        ("host-c:3306", "2026-11-17 23:59:50", "2026-11-18 00:00:09"),
        ("host-b:3306", "2026-11-17 10:04:10", "2026-11-17 10:04:20"),
    ]
    assert episodes[0]["length"] == "3 min 19 s"  # 199 s
    assert float(episodes[0]["held share"]) == pytest.approx(198 / 199)
    assert episodes[0]["max applier queue"] == str(26_000 + 299)
    with (directory / "flow_catch_up.csv").open(encoding="utf-8") as handle:
        catch_up = {r["member"]: r for r in csv.DictReader(handle)}
    assert float(catch_up["host-a:3306"]["0 s"]) == pytest.approx(1.0)
    assert float(catch_up["host-c:3306"]["never"]) > 0


def _table_rows(out: Path, table: str) -> list[dict[str, Any]]:
    files = f"read_parquet('{out}/{table}/*/*/*.parquet', hive_partitioning = false)"
    rows: list[dict[str, Any]] = (
        duckdb.sql(f"SELECT * FROM {files} ORDER BY ALL").to_arrow_table().to_pylist()
    )
    return rows


def test_an_incremental_run_gives_the_same_flow_tables(
    spark: Any, flow_rollup: tuple[Path, Path], tmp_path: Path
) -> None:
    history, full = flow_rollup
    out = tmp_path / "rollups"
    run_rollup(spark, str(history), str(out), until="2026-11-17")
    assert not (out / "flow_control_group_hour" / "group=g1" / "date=2026-11-18").exists()
    run_rollup(spark, str(history), str(out))  # the manifest: only 2026-11-18 is new
    for table in FLOW_TABLES:
        assert _table_rows(out, table) == _table_rows(full, table), table
        days = sorted(p.name for p in (out / table / "group=g1").iterdir())
        assert days == ["date=2026-11-17", "date=2026-11-18"], table
