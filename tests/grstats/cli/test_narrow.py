"""The narrow view (`grstats.cli.narrow`) on rows written by hand: widths, labels, footer.

Expected texts are worked out by hand from the rows: which columns fit a
width, how many of the table's columns are hidden, which UUIDs are members.
"""

from __future__ import annotations

import pytest

from grstats.cli import narrow
from grstats.core import columns as col
from grstats.core.snapshot import COMMIT_PATH_TABLE, MEMBER_GTIDS_TABLE, MEMBER_STATS_TABLE

A = "aaaaaaaa-0000-4000-8000-00000000000a"
B = "bbbbbbbb-0000-4000-8000-00000000000b"
G = "99999999-0000-4000-8000-000000000099"
LABELS = {A: "db1.example:3306", B: "db2.example:3306"}


def _stats_row(member: str) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(col.table(MEMBER_STATS_TABLE).names, 123456)
    row.update(
        CHANNEL_NAME="group_replication_applier",
        VIEW_ID="17650000000000000:3",
        MEMBER_ID=member,
        TRANSACTIONS_COMMITTED_ALL_MEMBERS=f"{G}:1-123456",
        LAST_CONFLICT_FREE_TRANSACTION=f"{G}:123456",
    )
    return row


def _headers(text: str) -> list[str]:
    header = text.splitlines()[1]
    return [cell.strip() for cell in header.strip("|").split("|")]


@pytest.mark.parametrize("width", [80, 120, 160, 200])
def test_no_line_is_wider_than_the_width(width: int) -> None:
    text = narrow.narrow_table(MEMBER_STATS_TABLE, [_stats_row(A), _stats_row(B)], LABELS, width)
    assert max(len(line) for line in text.splitlines()) <= width, text


def test_a_wider_terminal_shows_more_columns_and_the_footer_counts_the_rest() -> None:
    rows = [_stats_row(A), _stats_row(B)]
    at80 = narrow.narrow_table(MEMBER_STATS_TABLE, rows, LABELS, 80)
    at160 = narrow.narrow_table(MEMBER_STATS_TABLE, rows, LABELS, 160)
    shown80, shown160 = _headers(at80), _headers(at160)
    assert len(shown160) > len(shown80)
    # MEMBER plus 5 counters of 10 characters ("| 123456 " pads to the header) fit 80:
    # | MEMBER (16) | IN_QUEUE | CHECKED | CONFLICTS | APPLY_QUEUE | APPLIED |
    assert shown80 == ["MEMBER", "IN_QUEUE", "CHECKED", "CONFLICTS", "APPLY_QUEUE", "APPLIED"]
    assert at80.splitlines()[-1] == (
        "(7 of 13 columns hidden; all, under MySQL's names: --wide, -E, --format json)"
    )
    assert at160.splitlines()[-1].startswith(f"({13 - len(shown160)} of 13 columns hidden")


def test_members_by_host_port_and_a_gtids_uuid_kept() -> None:
    rows = [
        {
            col.MEMBER_ID: A,
            col.ERRANT_COUNT: 0,
            col.MISSING_COUNT: 0,
            col.RECOVERY_METHOD: "INCREMENTAL",
            col.DONORS: f"{B}",
            "GTID_EXECUTED": f"{G}:1-10,\n{A}:1-2",
        }
    ]
    text = narrow.narrow_table(MEMBER_GTIDS_TABLE, rows, LABELS, 200)
    assert "db1.example:3306" in text and "db2.example:3306" in text, text
    assert f"{A}:1-2" in text, text  # a GTID's source UUID is data
    assert B not in text and A + " " not in text, text


def test_a_shared_host_port_shows_the_labels_short_uuid() -> None:
    from grstats.core.labels import member_labels  # noqa: PLC0415

    labels = member_labels(
        [
            {col.MEMBER_ID: A, col.MEMBER_HOST: "lab", col.MEMBER_PORT: 3306},
            {col.MEMBER_ID: B, col.MEMBER_HOST: "lab", col.MEMBER_PORT: 3306},
        ]
    )
    text = narrow.narrow_table(MEMBER_STATS_TABLE, [_stats_row(A), _stats_row(B)], labels, 80)
    assert "lab:3306/aaaaaaaa" in text and "lab:3306/bbbbbbbb" in text, text


def test_seconds_read_as_durations() -> None:
    row = {col.MEMBER_ID: A, col.COMMIT_PATH_DOMINANT: "consensus", col.COMMIT_PATH_PERIOD: 754.2}
    text = narrow.narrow_table(COMMIT_PATH_TABLE, [row], LABELS, 80)
    assert "12 min 34 s" in text, text


def test_a_cell_wider_than_the_terminal_is_cut_not_the_box() -> None:
    rows = [{col.MEMBER_ID: "x" * 300}]
    text = narrow.narrow_table(MEMBER_GTIDS_TABLE, rows, {}, 80)
    assert max(len(line) for line in text.splitlines()) <= 80, text


def test_the_width_follows_columns_else_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "132")
    assert narrow.terminal_width() == 132
    monkeypatch.setenv("COLUMNS", "10")
    assert narrow.terminal_width() == narrow.MIN_WIDTH
    monkeypatch.delenv("COLUMNS")
    # pytest's stdout is not a terminal: the width is not known
    assert narrow.terminal_width() == 80


def test_members_are_listed_in_host_port_order_whatever_the_rows_order() -> None:
    # B's UUID sorts after A's, but its label db0 sorts first; an unlabelled member comes last
    labels = {A: "db1.example:3306", B: "db0.example:3306"}
    other = "cccccccc-0000-4000-8000-00000000000c"
    rows = [_stats_row(other), _stats_row(A), _stats_row(B)]
    body = narrow.narrow_table(MEMBER_STATS_TABLE, rows, labels, 80).splitlines()[3:6]
    members = [line.split("|")[1].strip() for line in body]
    assert members[:2] == ["db0.example:3306", "db1.example:3306"]
    assert "db" not in members[2]  # the unlabelled one, as the view shows a bare member
