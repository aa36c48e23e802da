"""`grstats decode` through the real CLI group, in-process and as the installed script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grstats.cli.main import main
from tests.fixtures.paths import load_vectors


def _vector(file: str, name: str) -> dict[str, Any]:
    vector: dict[str, Any] = next(v for v in load_vectors(file) if v["name"] == name)
    return vector


def _run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(main, ["decode", *args], input=stdin)


def _grstats_script() -> Path:
    script = Path(sys.executable).parent / "grstats"
    if not script.exists():
        pytest.skip("grstats console script not installed beside this interpreter")
    return script


# --- table ----------------------------------------------------------------------------


def test_table_lists_fields_ps_columns_and_values() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_with_gtids")
    result = _run(vector["hex"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    certified = next(line for line in lines if line.startswith("transactions_certified "))
    assert certified.split() == ["transactions_certified", "COUNT_TRANSACTIONS_CHECKED", "12345"]
    assert any(line.split()[:2] == ["header.cargo_type", "6"] for line in lines)
    assert any(line.split()[:2] == ["header.message_len", "16"] for line in lines)


def test_table_columns_are_aligned() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_busy_writer")
    lines = _run(vector["hex"]).output.splitlines()
    value_column = lines[0].index("VALUE")
    rows = [line for line in lines[1:] if line.strip()]
    assert all(line[value_column - 2 : value_column] == "  " for line in rows)
    assert all(line[value_column] != " " for line in rows)


def test_table_shows_gtid_text_and_timestamp() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_with_gtids")
    output = _run(vector["hex"]).output
    assert vector["transactions_committed_all_members"] in output
    assert str(vector["sent_timestamp"]) in output


def test_table_shows_negative_counter_as_ps_does() -> None:
    vector = _vector("pipeline_stats_encode.json", "minus_one_waiting")
    output = _run(vector["hex"]).output
    assert "-1 (P_S shows 18446744073709551615)" in output


def test_non_utf8_gtid_bytes_are_shown_as_hex() -> None:
    # Built by hand: the five positional items, then item 8 holding b"\xff\xfe".
    message = (
        "01000000" "1000" "1000000000000000" "0600"
        "0100" "0400000000000000" "00000000"
        "0200" "0400000000000000" "00000000"
        "0300" "0800000000000000" "0000000000000000"
        "0400" "0800000000000000" "0000000000000000"
        "0500" "0800000000000000" "0000000000000000"
        "0800" "0200000000000000" "fffe"
    )  # fmt: skip
    result = _run(message)
    assert result.exit_code == 0, result.output
    assert "hex:fffe" in result.output
    document = json.loads(_run("--format", "json", message).output)
    assert document["fields"]["transactions_committed_all_members_hex"] == "fffe"


# --- json -----------------------------------------------------------------------------


def test_json_output_matches_vector_fields() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_three_member_sets")
    result = _run("--format", "json", vector["hex"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    for name, value in document["fields"].items():
        assert value == vector[name], name
    assert document["header"] == {
        "version": 1,
        "fixed_header_len": 16,
        "message_len": 16,
        "cargo_type": 6,
    }
    assert document["length"] == vector["length"]


def test_json_performance_schema_values_are_unsigned() -> None:
    vector = _vector("pipeline_stats_encode.json", "int32_min_waiting")
    document = json.loads(_run("--format", "json", vector["hex"]).output)
    shown = document["performance_schema"]["COUNT_TRANSACTIONS_IN_QUEUE"]
    assert shown == 2**64 + vector["transactions_waiting_certification"]


def test_json_without_timestamp_item_has_null() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_idle_secondary")
    document = json.loads(_run("--format", "json", vector["hex_without_sent_timestamp"]).output)
    assert document["fields"]["sent_timestamp"] is None


# --- input forms ----------------------------------------------------------------------


def test_hex_with_spaces_colons_and_newlines_is_accepted() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_busy_writer")
    raw = vector["hex"]
    spaced = ":".join(raw[i : i + 2] for i in range(0, 40, 2)) + "\n " + raw[40:]
    assert _run(spaced).output == _run(raw).output


def test_hex_split_over_several_arguments_is_joined() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_busy_writer")
    raw = vector["hex"]
    assert _run(raw[:32], raw[32:]).output == _run(raw).output


def test_dash_reads_hex_from_stdin() -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_with_gtids")
    result = _run("-", stdin=vector["hex"] + "\n")
    assert result.exit_code == 0, result.output
    assert result.output == _run(vector["hex"]).output


def test_file_reads_raw_bytes(tmp_path: Path) -> None:
    vector = _vector("pipeline_stats_encode.json", "typical_with_gtids")
    capture = tmp_path / "capture.bin"
    capture.write_bytes(bytes.fromhex(vector["hex"]))
    result = _run("--file", str(capture))
    assert result.exit_code == 0, result.output
    assert result.output == _run(vector["hex"]).output


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["truncated_after_first_item", "string_length_all_ones", "cargo_type_15", "empty_buffer"],
)
def test_malformed_message_exits_1_with_reason_and_offset(name: str) -> None:
    vector = _vector("pipeline_stats_decode_malformed.json", name)
    result = CliRunner().invoke(main, ["decode", "-"], input=vector["hex"])
    assert result.exit_code == 1
    assert vector["expected"]["error_message"] in result.stderr
    assert "at offset " in result.stderr
    assert result.stdout == ""


def test_malformed_message_reports_offset_of_failing_item() -> None:
    vector = _vector("pipeline_stats_decode_malformed.json", "truncated_after_first_item")
    result = _run(vector["hex"])
    # Item 1 ends at byte 30, where the missing item 2 should start.
    assert "Malformed payload item at offset 30" in result.stderr


@pytest.mark.parametrize("text", ["01zz", "010", "hello"])
def test_bad_hex_exits_2_with_one_line(text: str) -> None:
    result = _run(text)
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "hex" in result.stderr


def test_unreadable_file_exits_2_with_one_line(tmp_path: Path) -> None:
    result = _run("--file", str(tmp_path / "missing.bin"))
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "missing.bin" in result.stderr
    assert "Traceback" not in result.output


def test_hex_and_file_together_exit_2(tmp_path: Path) -> None:
    capture = tmp_path / "capture.bin"
    capture.write_bytes(b"\x01")
    assert _run("0100", "--file", str(capture)).exit_code == 2


def test_no_input_exits_2() -> None:
    assert _run().exit_code == 2


def test_help_shows_an_example() -> None:
    result = _run("--help")
    assert result.exit_code == 0
    assert "grstats decode 0100" in result.output


# --- the installed script ---------------------------------------------------------------


def test_installed_script_decodes_and_reports_malformed() -> None:
    script = _grstats_script()
    vector = _vector("pipeline_stats_encode.json", "typical_with_gtids")
    good = subprocess.run(
        [str(script), "decode", "--format", "json", "-"],
        input=vector["hex"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["fields"]["transactions_certified"] == 12345

    bad = subprocess.run(
        [str(script), "decode", vector["hex"][:56]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 1
    assert "Malformed payload item at offset 16" in bad.stderr
    assert "Traceback" not in bad.stderr
