"""rollup.py without Spark: date planning, the command line's user errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_rollups.__main__ import main as cli_main
from spark_rollups.rollup import plan_run

HISTORY = {"g1": {"2026-11-15", "2026-11-16", "2026-11-17"}, "g%2F2": {"2026-11-17"}}


def test_first_run_rolls_up_every_date() -> None:
    plan = plan_run(HISTORY, {}, None, None, None)
    assert plan.dates == {"g1": ["2026-11-15", "2026-11-16", "2026-11-17"], "g%2F2": ["2026-11-17"]}
    assert plan.baselines == {"g1": [], "g%2F2": []}


def test_incremental_run_redoes_the_newest_rolled_up_date() -> None:
    plan = plan_run(HISTORY, {"g1": {"2026-11-15", "2026-11-16"}}, None, None, "g1")
    assert plan.dates == {"g1": ["2026-11-16", "2026-11-17"]}
    assert plan.baselines == {"g1": ["2026-11-15"]}  # read only for the last samples


def test_incremental_run_matches_groups_escaped_differently() -> None:
    history = {"a%20b": {"2026-11-16", "2026-11-17"}}  # history.py quotes the space
    plan = plan_run(history, {"a b": {"2026-11-17"}}, None, None, None)  # Spark does not
    assert plan.dates == {"a%20b": ["2026-11-17"]}


def test_since_and_until_bound_the_dates() -> None:
    plan = plan_run(HISTORY, {}, "2026-11-16", "2026-11-16", None)
    assert plan.dates == {"g1": ["2026-11-16"]}
    assert plan.baselines == {"g1": ["2026-11-15"]}


def test_group_filter_matches_the_unescaped_name() -> None:
    assert plan_run(HISTORY, {}, None, None, "g/2").dates == {"g%2F2": ["2026-11-17"]}


def test_missing_history_directory_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli_main(["rollup", "--history", str(tmp_path / "nope"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert "history directory not found" in err


def test_missing_rollups_directory_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--rollups", str(tmp_path / "nope"), "--week", "2026-W47"]
    status = cli_main([*argv, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1


def test_bad_week_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report", "--rollups", str(tmp_path), "--week", "2026-47", "--out", str(tmp_path)]
    assert cli_main(argv) == 2
    assert "ISO week" in capsys.readouterr().err


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["--help"]) == 0
    assert "python -m spark_rollups rollup --history" in capsys.readouterr().out


def test_rollup_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["rollup", "--help"])
    assert exit_info.value.code == 0
    assert "--since 2026-11-16" in capsys.readouterr().out
