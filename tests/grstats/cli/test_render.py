"""mysql-client-like renderings: expected text written out by hand."""

from __future__ import annotations

import csv
import io
import json

from grstats.cli.render import csv_text, json_text, render, table, vertical

ROWS = [
    {"MEMBER_ID": "m1", "MEMBER_PORT": 3306, "MEMBER_STATE": "ONLINE"},
    {"MEMBER_ID": "member-two", "MEMBER_PORT": 33060, "MEMBER_STATE": None},
]
COLUMNS = ("MEMBER_ID", "MEMBER_PORT", "MEMBER_STATE")


def test_table_is_boxed_numbers_right_aligned_null_and_row_count() -> None:
    expected = (
        "+------------+-------------+--------------+\n"
        "| MEMBER_ID  | MEMBER_PORT | MEMBER_STATE |\n"
        "+------------+-------------+--------------+\n"
        "| m1         |        3306 | ONLINE       |\n"
        "| member-two |       33060 | NULL         |\n"
        "+------------+-------------+--------------+\n"
        "2 rows in set\n"
    )
    assert table(ROWS, COLUMNS) == expected


def test_table_of_no_rows_is_empty_set() -> None:
    assert table([], COLUMNS) == "Empty set\n"


def test_one_row_is_singular() -> None:
    assert table(ROWS[:1], COLUMNS).endswith("\n1 row in set\n")


def test_vertical_is_like_backslash_g() -> None:
    expected = (
        "*************************** 1. row ***************************\n"
        "   MEMBER_ID: m1\n"
        " MEMBER_PORT: 3306\n"
        "MEMBER_STATE: ONLINE\n"
        "*************************** 2. row ***************************\n"
        "   MEMBER_ID: member-two\n"
        " MEMBER_PORT: 33060\n"
        "MEMBER_STATE: NULL\n"
        "2 rows in set\n"
    )
    assert vertical(ROWS, COLUMNS) == expected


def test_csv_has_header_and_empty_field_for_null() -> None:
    parsed = list(csv.reader(io.StringIO(csv_text(ROWS, COLUMNS))))
    assert parsed == [
        ["MEMBER_ID", "MEMBER_PORT", "MEMBER_STATE"],
        ["m1", "3306", "ONLINE"],
        ["member-two", "33060", ""],
    ]


def test_json_keeps_types_and_column_order() -> None:
    text = json_text(ROWS, COLUMNS)
    assert json.loads(text) == ROWS
    assert list(json.loads(text)[0]) == list(COLUMNS)


def test_missing_key_is_null_in_every_format() -> None:
    rows = [{"MEMBER_ID": "m1"}]
    assert "MEMBER_STATE: NULL" in render("vertical", rows, COLUMNS)
    assert json.loads(render("json", rows, COLUMNS)) == [
        {"MEMBER_ID": "m1", "MEMBER_PORT": None, "MEMBER_STATE": None}
    ]


def test_explicit_right_alignment_overrides_detection() -> None:
    text = table([{"A": "1", "B": "x"}, {"A": "22", "B": "y"}], ("A", "B"), right={"A"})
    assert "|  1 | x |" in text


HOSTILE = [{"MEMBER_ID": "m1", "MEMBER_PORT": 1, "MEMBER_STATE": "ON\x1b[2JLINE\x9b31m\x07\x7f"}]


def test_table_shows_control_characters_as_escapes() -> None:
    expected = (
        "+-----------+-------------+------------------------------+\n"
        "| MEMBER_ID | MEMBER_PORT | MEMBER_STATE                 |\n"
        "+-----------+-------------+------------------------------+\n"
        "| m1        |           1 | ON\\x1b[2JLINE\\x9b31m\\x07\\x7f |\n"
        "+-----------+-------------+------------------------------+\n"
        "1 row in set\n"
    )
    assert table(HOSTILE, COLUMNS) == expected


def test_vertical_prints_a_newline_and_escapes_carriage_returns_and_bidi_overrides() -> None:
    rows = [{"MEMBER_ID": "a\nb\r", "MEMBER_PORT": 1, "MEMBER_STATE": "\u202eENILNO"}]
    lines = vertical(rows, COLUMNS).split("\n")
    assert lines[1:3] == ["   MEMBER_ID: a", "b\\x0d"]  # the newline as the mysql client's \G
    assert lines[4] == "MEMBER_STATE: \\u202eENILNO"


# A GTID set as MySQL prints it: one UUID per line, separated by ",\n".
GTID_SET = (
    "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-12345,\nbbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:tag_1:7"
)
GTID_ROWS = [{"MEMBER_ID": "m1", "MEMBER_PORT": 1, "MEMBER_STATE": GTID_SET}]


def test_table_shows_a_gtid_set_on_several_lines_of_one_cell() -> None:
    expected = (
        "+-----------+-------------+-----------------------------------------------+\n"
        "| MEMBER_ID | MEMBER_PORT | MEMBER_STATE                                  |\n"
        "+-----------+-------------+-----------------------------------------------+\n"
        "| m1        |           1 | aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-12345, |\n"
        "|           |             | bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:tag_1:7  |\n"
        "+-----------+-------------+-----------------------------------------------+\n"
        "1 row in set\n"
    )
    assert table(GTID_ROWS, COLUMNS) == expected


def test_vertical_shows_a_gtid_set_on_several_lines() -> None:
    lines = vertical(GTID_ROWS, COLUMNS).split("\n")
    assert lines[3:5] == [
        "MEMBER_STATE: aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-12345,",
        "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb:tag_1:7",
    ]


def test_csv_quotes_the_real_newline_and_reads_back_the_exact_text() -> None:
    rows = [*GTID_ROWS, {"MEMBER_ID": "m2", "MEMBER_PORT": 2, "MEMBER_STATE": "x\ny\x1b"}]
    text = csv_text(rows, COLUMNS)
    assert '"' + GTID_SET + '"' in text  # RFC 4180: the field is quoted, the newline kept
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    assert parsed[1] == ["m1", "1", GTID_SET]
    assert parsed[2] == ["m2", "2", "x\ny\\x1b"]  # the newline is data, ESC still escaped


def test_json_keeps_the_newline_of_a_gtid_set() -> None:
    assert json.loads(json_text(GTID_ROWS, COLUMNS))[0]["MEMBER_STATE"] == GTID_SET


def test_csv_neutralises_control_characters() -> None:
    text = csv_text(HOSTILE, COLUMNS)
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text
    assert list(csv.reader(io.StringIO(text)))[1] == ["m1", "1", "ON\\x1b[2JLINE\\x9b31m\\x07\\x7f"]


def test_json_keeps_the_data_escaped_by_json() -> None:
    text = json_text(HOSTILE, COLUMNS)
    assert "\x1b" not in text
    assert json.loads(text)[0]["MEMBER_STATE"] == "ON\x1b[2JLINE\x9b31m\x07\x7f"
