"""`grstats simulate`: offline history in the daemon's format, checked against the model."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from grstats.cli.commands.simulate import command
from grstats.core.lag import MemberLag
from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    COMMIT_PATH_HISTORY_COLUMNS,
    HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from grstats.core.rows import applier_history, commit_path_history, lag_history
from grstats.history import parquet
from grstats.history.writer import read_history
from grstats.offline.backfill import default_start, member_ids
from grstats.sources.simulated import GroupModel, SimulationSettings
from grstats.sources.simulated.commitpath import commit_path_at
from tests.fixtures.rollup_oracle import BUCKET_US, applier_sql

DAY = dt.date(2026, 11, 20)
DAY_START_S = 20_777 * 86_400  # 2026-11-20T00:00:00Z, by hand
SEED = 7


@pytest.fixture(scope="module")
def full_cadence_day_of_three(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same day with every sample's applier counters (the storage rule switched off)."""
    out = tmp_path_factory.mktemp("sim") / "history"
    args = ["--members", "3", "--days", "1", "--seed", str(SEED), "--start", "2026-11-20"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parquet, "thin_counters", lambda table: table)
        result = CliRunner().invoke(command, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def day_of_three(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "history"
    args = ["--members", "3", "--days", "1", "--seed", str(SEED), "--start", "2026-11-20"]
    result = CliRunner().invoke(command, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_writes_one_partition_per_day_with_every_second_of_every_member(day_of_three: Path) -> None:
    (group_dir,) = day_of_three.glob("group=*")
    uuid.UUID(group_dir.name.removeprefix("group="))  # default group name is a UUID
    assert [p.name for p in group_dir.iterdir()] == ["date=2026-11-20"]
    files = sorted((group_dir / "date=2026-11-20").glob("part-*.parquet"))
    assert len(files) == 3  # one segment per member-day
    table = read_history(day_of_three)
    assert table.num_rows == 3 * 86_400
    assert [(f.name, str(f.type)) for f in table.schema] == list(HISTORY_COLUMNS)
    assert sorted(set(table["member_id"].to_pylist())) == sorted(member_ids(SEED, 3))


def _column_bytes(history: Path) -> dict[str, int]:
    """Compressed bytes of each column over every file (from the Parquet footers)."""
    sizes: dict[str, int] = {}
    for path in history.glob("group=*/date=*/part-*.parquet"):
        meta = pq.ParquetFile(path).metadata
        for g in range(meta.num_row_groups):
            for c in range(meta.num_columns):
                chunk = meta.row_group(g).column(c)
                sizes[chunk.path_in_schema] = (
                    sizes.get(chunk.path_in_schema, 0) + chunk.total_compressed_size
                )
    return sizes


def test_bytes_per_sample_at_most_ten_without_the_applier_counters(day_of_three: Path) -> None:
    sizes = _column_bytes(day_of_three)
    rest = sum(v for k, v in sizes.items() if k not in APPLIER_HISTORY_COLUMNS)
    assert rest / (3 * 86_400) <= 10.0


def test_applier_counters_cost_at_most_fourteen_bytes_per_sample(day_of_three: Path) -> None:
    # 17 counters, 7 of them nanosecond sums whose per-second steps are all noise:
    # about 12 bytes with delta encoding and zstd (plain or byte-stream-split: 16-32).
    sizes = _column_bytes(day_of_three)
    applier = sum(sizes[name] for name in APPLIER_HISTORY_COLUMNS)
    assert applier / (3 * 86_400) <= 14.0
    whole = sum(p.stat().st_size for p in day_of_three.glob("group=*/date=*/part-*.parquet"))
    assert whole / (3 * 86_400) <= 24.0


def test_values_match_the_model_at_random_seconds(day_of_three: Path) -> None:
    (group_dir,) = day_of_three.glob("group=*")
    group = group_dir.name.removeprefix("group=")
    members = member_ids(SEED, 3)
    model = GroupModel(SimulationSettings(group=group, members=tuple(members), seed=SEED))
    rng = random.Random(5)
    seconds = [0, 30, 86_399, *rng.sample(range(86_400), 20)]
    table = read_history(day_of_three)
    table = table.filter(pc.is_in(table["seq"], pa.array([s + 1 for s in seconds], pa.int64())))
    by_key = {(r["member_id"], r["seq"]): r for r in table.to_pylist()}
    for member in members:
        for second in seconds:
            row = by_key[(member, second + 1)]  # seq 1 is 00:00:00 of the first day
            t_us = (DAY_START_S + second) * 1_000_000
            stats = model.stats_at(member, t_us)
            identity = model.member_at(member, t_us)
            assert row["sampled_at"] == dt.datetime.fromtimestamp(DAY_START_S + second, dt.UTC)
            assert row["group_name"] == group and row["member_state"] == identity.state
            assert (row["member_host"], row["member_port"]) == (identity.host, identity.port)
            assert row["count_transactions_in_queue"] == stats.transactions_waiting_certification
            assert row["count_transactions_checked"] == stats.transactions_certified
            assert row["count_conflicts_detected"] == stats.transactions_negative_certified
            assert row["count_transactions_rows_validating"] == stats.transactions_rows_validating
            assert (
                row["count_transactions_remote_in_applier_queue"]
                == stats.transactions_waiting_apply
            )
            assert row["count_transactions_remote_applied"] == stats.transactions_applied
            assert row["count_transactions_local_proposed"] == stats.transactions_local
            assert row["count_transactions_local_rollback"] == stats.transactions_local_rollback
            if second % 30 == 0:
                committed = stats.transactions_committed_all_members.decode()
                assert row["transactions_committed_all_members"] == committed
                assert (
                    row["last_conflict_free_transaction"]
                    == stats.transaction_last_conflict_free.decode()
                )
            else:
                assert row["transactions_committed_all_members"] is None
            channels = model.lag_at(member, t_us)  # what the member's daemon records
            figures = lag_history(MemberLag(t_us, channels) if channels else None, 0.0)
            assert {name: row[name] for name in LAG_HISTORY_COLUMNS} == figures
            applier = applier_history(model.applier_at(member, t_us))
            if second % 10 == 9 or second == 0:  # kept: each 10 s window's last, the first
                assert row["transactions_committed_count"] == stats.transactions_applied
            else:
                applier = dict.fromkeys(applier)
            assert {name: row[name] for name in APPLIER_HISTORY_COLUMNS} == applier


def test_segments_use_the_daemon_parquet_settings(day_of_three: Path) -> None:
    path = next(day_of_three.glob("group=*/date=*/part-*.parquet"))
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 1
    column = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
        for i in range(meta.num_columns)
    }
    assert "DELTA_BINARY_PACKED" in column["count_transactions_checked"].encodings
    assert column["sampled_at"].compression == "ZSTD"


def _last_iso_week_monday(today: dt.date) -> dt.date:
    year, week, _ = (today - dt.timedelta(days=7)).isocalendar()
    return dt.date.fromisocalendar(year, week, 1)


def _applier_rollup(history: Path, unit: str) -> list[tuple[Any, ...]]:
    sql = applier_sql(history, BUCKET_US[unit])
    return duckdb.sql(f"SELECT * FROM ({sql}) ORDER BY ALL").fetchall()


@pytest.mark.slow
def test_applier_rollups_equal_those_of_every_sample_counted_from_the_kept_ones(
    day_of_three: Path, full_cadence_day_of_three: Path
) -> None:
    # hours only: a day's steps are its hours' (the same steps, bucketed coarser);
    # day sums across gaps of days are history/test_cadence.py's random histories
    full = _applier_rollup(full_cadence_day_of_three, "hour")
    kept = _applier_rollup(day_of_three, "hour")
    assert len(full) == len(kept) > 0
    for a, b in zip(kept, full, strict=True):
        # every figure equal; `samples` (next to last) counts the kept ones
        assert a[:-2] == b[:-2] and a[-1] == b[-1]
    days = duckdb.sql(
        f"SELECT samples FROM ({applier_sql(day_of_three, BUCKET_US['day'])})"
    ).fetchall()
    # each member-day: its first second and the last of each of its 8640 windows
    assert days and {n for (n,) in days} == {1 + 86_400 // 10}


def test_the_default_run_is_the_last_whole_iso_week() -> None:
    days = next(p for p in command.params if p.name == "days")
    assert days.default == 7
    for today in (dt.date(2026, 11, 25), dt.date(2026, 11, 23), dt.date(2027, 1, 3)):
        first = default_start(7, today)
        assert first == _last_iso_week_monday(today)
        week = {(first + dt.timedelta(days=n)).isocalendar()[:2] for n in range(7)}
        assert len(week) == 1, week  # one ISO week, Monday to Sunday
        assert first + dt.timedelta(days=7) <= today
    assert default_start(14, dt.date(2026, 11, 25)) == dt.date(2026, 11, 9)  # by hand


def test_default_start_is_last_weeks_monday_seq_continues_and_rerun_replaces(
    tmp_path: Path,
) -> None:
    args = ["--members", "1", "--days", "2", "--group", "prod eu/1", "--out", str(tmp_path)]
    for _ in range(2):  # the second run must replace the files, not add rows
        result = CliRunner().invoke(command, args)
        assert result.exit_code == 0, result.output
    monday = _last_iso_week_monday(dt.datetime.now(dt.UTC).date())
    group_dir = tmp_path / "group=prod%20eu%2F1"
    days = [monday, monday + dt.timedelta(days=1)]
    assert sorted(p.name for p in group_dir.iterdir()) == [f"date={d.isoformat()}" for d in days]
    table = read_history(tmp_path)
    assert table.num_rows == 2 * 86_400
    assert table["seq"].to_pylist() == list(range(1, 2 * 86_400 + 1))
    assert set(table["group_name"].to_pylist()) == {"prod eu/1"}
    assert len(set(table["incarnation"].to_pylist())) == 1


def test_member_ids_are_deterministic_per_seed() -> None:
    assert member_ids(1, 9) == member_ids(1, 9)
    assert len(set(member_ids(1, 9))) == 9
    assert set(member_ids(1, 3)).isdisjoint(member_ids(2, 3))


def test_commit_path_counters_every_ten_seconds_as_the_live_model(day_of_three: Path) -> None:
    table = read_history(day_of_three)
    settings = SimulationSettings(members=tuple(member_ids(SEED, 3)))  # only the links matter
    kept = pc.is_valid(table["cp_consensus_us"]).to_pylist()
    seconds = pc.divide(table["sampled_at"].cast(pa.int64()), 1_000_000).to_pylist()
    assert kept == [s % 10 == 0 for s in seconds]
    rows = table.filter(pc.is_valid(table["cp_consensus_us"])).to_pylist()
    for r in random.Random(SEED).sample(rows, 20):
        s = r["sampled_at"].timestamp()
        live = commit_path_at(
            settings, r["member_id"], int(s), r["count_transactions_local_proposed"]
        )
        assert {c: r[c] for c in COMMIT_PATH_HISTORY_COLUMNS} == commit_path_history(live)


def test_commit_path_counters_cost_under_one_byte_per_sample(day_of_three: Path) -> None:
    sizes = _column_bytes(day_of_three)
    cp = sum(sizes[name] for name in COMMIT_PATH_HISTORY_COLUMNS)
    assert cp / (3 * 86_400) <= 1.0


@pytest.mark.parametrize("hours", ["13-10", "10", "a-b", "0-25"])
def test_a_slow_link_outside_the_day_is_refused_naming_the_option(
    hours: str, tmp_path: Path
) -> None:
    args = ["--days", "1", "--slow-link", hours, "--out", str(tmp_path / "h")]
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 2
    assert "--slow-link" in result.output and "0 <= FROM < TO <= 24" in result.output
    assert not (tmp_path / "h").exists()


def test_slow_link_hours_slow_the_last_members_rounds_in_those_hours(tmp_path: Path) -> None:
    out = tmp_path / "h"
    args = ["--members", "1", "--days", "1", "--start", "2026-11-20", "--slow-link", "10-13"]
    result = CliRunner().invoke(command, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = read_history(out)
    at = {r["sampled_at"].strftime("%H:%M:%S"): r for r in table.to_pylist()}

    def per_round(first: str, second: str) -> float:
        a, b = at[first], at[second]
        rounds = b["cp_consensus_count"] - a["cp_consensus_count"]
        return float((b["cp_consensus_us"] - a["cp_consensus_us"]) / rounds)

    # a member alone: a round is its own loop, 2 x 0.5 ms; with its slow link 2 x 25 ms
    assert per_round("09:00:00", "09:00:10") == 1_000
    assert per_round("11:00:00", "11:00:10") == 50_000
    assert per_round("13:00:10", "13:00:20") == 1_000
