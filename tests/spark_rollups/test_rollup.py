"""rollup.py without Spark: date planning, the command line's user errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_rollups.__main__ import main as cli_main
from spark_rollups.manifest import Manifest, next_manifest, parse
from spark_rollups.rollup import plan_run

# escaped group dir value -> date -> segment fingerprint
HISTORY = {
    "g1": {"2026-11-15": "a15", "2026-11-16": "a16", "2026-11-17": "a17"},
    "g%2F2": {"2026-11-17": "b17"},
}
ALL_DONE = {"g1": {"2026-11-15", "2026-11-16", "2026-11-17"}, "g%2F2": {"2026-11-17"}}


def _manifest(groups: dict[str, dict[str, str]]) -> Manifest:
    return Manifest(1.0, groups)


def test_first_run_rolls_up_every_date() -> None:
    plan = plan_run(HISTORY, {}, None)
    assert plan.dates == {"g1": ["2026-11-15", "2026-11-16", "2026-11-17"], "g%2F2": ["2026-11-17"]}
    assert plan.baselines == {"g1": [], "g%2F2": []}


def test_incremental_run_rolls_up_only_a_new_date() -> None:
    seen = _manifest(
        {"g1": {"2026-11-15": "a15", "2026-11-16": "a16"}, "g/2": {"2026-11-17": "b17"}}
    )
    plan = plan_run(HISTORY, ALL_DONE, seen)
    assert plan.dates == {"g1": ["2026-11-17"]}
    assert plan.baselines == {"g1": ["2026-11-16"]}  # read only for the last samples


def test_a_changed_date_is_redone_with_the_day_after_it() -> None:
    seen = _manifest(
        {"g1": {"2026-11-15": "a15", "2026-11-16": "old", "2026-11-17": "a17"}, "g/2": {}}
    )
    plan = plan_run(HISTORY, ALL_DONE, seen, group="g1")
    assert plan.dates == {"g1": ["2026-11-16", "2026-11-17"]}  # 17's first step reads 16
    assert plan.baselines == {"g1": ["2026-11-15"]}


def test_nothing_changed_means_nothing_to_do() -> None:
    seen = _manifest({"g1": dict(HISTORY["g1"]), "g/2": dict(HISTORY["g%2F2"])})
    assert plan_run(HISTORY, ALL_DONE, seen).dates == {}


def test_a_date_missing_from_the_output_is_redone() -> None:
    seen = _manifest({"g1": dict(HISTORY["g1"]), "g/2": dict(HISTORY["g%2F2"])})
    done = {"g1": {"2026-11-15", "2026-11-17"}, "g/2": {"2026-11-17"}}  # Spark's escaping
    assert plan_run(HISTORY, done, seen).dates == {"g1": ["2026-11-16", "2026-11-17"]}


def test_since_and_until_bound_the_dates_and_ignore_the_manifest() -> None:
    seen = _manifest({"g1": dict(HISTORY["g1"])})
    plan = plan_run(HISTORY, ALL_DONE, seen, since="2026-11-16", until="2026-11-16")
    assert plan.dates == {"g1": ["2026-11-16"]}
    assert plan.baselines == {"g1": ["2026-11-15"]}


def test_group_filter_matches_the_unescaped_name() -> None:
    assert plan_run(HISTORY, {}, None, group="g/2").dates == {"g%2F2": ["2026-11-17"]}


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "{not json",
        "[]",
        '{"format": "other", "period_seconds": 1.0, "groups": {}}',
        '{"format": "grstats-rollup-manifest/1", "period_seconds": 5.0, "groups": {}}',
        '{"format": "grstats-rollup-manifest/1", "period_seconds": 1.0, "groups": {"g": 3}}',
    ],
)
def test_missing_corrupt_or_foreign_manifest_means_a_full_run(text: str | None) -> None:
    assert parse(text, 1.0) is None


def test_manifest_round_trips() -> None:
    manifest = _manifest({"g/2": {"2026-11-17": "b17"}})
    assert parse(manifest.dumps(), 1.0) == manifest


def test_next_manifest_records_processed_dates_and_forgets_deleted_ones() -> None:
    seen = _manifest({"g1": {"2026-11-14": "gone", "2026-11-15": "a15", "2026-11-16": "old"}})
    plan = plan_run(HISTORY, ALL_DONE, seen, group="g1")
    after = next_manifest(seen, HISTORY, plan, 1.0)
    assert after.groups == {"g1": dict(HISTORY["g1"])}  # g/2 was not processed: not recorded


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
