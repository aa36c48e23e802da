"""core.pageview: the live page's figures, texts and member rows, worked out by hand."""

from __future__ import annotations

import pytest

from grstats.core import columns as col
from grstats.core.pageview import (
    PAGE_COLUMNS,
    PageField,
    error_tables,
    field_text,
    group_rows,
    groups,
    page_tables,
)
from tests.fixtures.page_snapshot import OTHER_GROUP, Member, group_snapshot, uuid

LAG = "replication_group_member_lag"
FLOW = "grstats_flow_control"
COMMIT = "grstats_member_commit_path"


@pytest.mark.parametrize(
    ("field", "row", "expected"),
    [
        (PageField("t", "Q", "count"), {"Q": 1355}, ("1,355", "")),
        (PageField("t", "Q", "count"), {"Q": None}, ("\u2014", "")),
        (PageField("t", "Q", "count"), {}, ("\u2014", "")),
        (PageField("t", "Q", "count"), None, ("\u2014", "")),
        (PageField("t", "L", "duration"), {"L": 9.624431}, ("9.6 s", "")),
        (PageField("t", "L", "duration"), {"L": 4 * 3600 + 23 * 60 + 5}, ("4 h 23 min", "")),
        (PageField("t", "L", "duration"), {"L": 0.004}, ("0.00 s", "")),
        (PageField("t", "L", "duration"), {"L": "soon"}, ("\u2014", "")),
        (PageField("t", "R", "rate"), {"R": 87.92}, ("87.9", "")),
        (PageField("t", "R", "rate"), {"R": 1234.4}, ("1,234", "")),
        (PageField("t", "S", "state"), {"S": "ONLINE"}, ("ONLINE", "ok")),
        (PageField("t", "S", "state"), {"S": "UNREACHABLE"}, ("UNREACHABLE", "bad")),
        (PageField("t", "S", "state"), {"S": "RECOVERING"}, ("RECOVERING", "warn")),
        (PageField("t", "S", "state"), {"S": "<b>ONLINE</b>"}, ("<b>ONLINE</b>", "warn")),
        (PageField("t", "F", "ready"), {"F": 1}, ("ready", "ok")),
        (PageField("t", "F", "ready"), {"F": 0}, ("not ready", "bad")),
        (PageField("t", "F", "ready"), {"F": None}, ("\u2014", "")),
        (PageField("t", "B", "flag"), {"B": ""}, ("no", "")),
        (PageField("t", "B", "flag"), {"B": "applier"}, ("applier", "warn")),
        (PageField("t", "B", "flag"), {"B": 1}, ("yes", "warn")),
        (PageField("t", "B", "flag"), {"B": 0}, ("no", "")),
        (PageField("t", "X", "text"), {"X": "a\x1b[31mb\u202e"}, ("a\\x1b[31mb\\u202e", "")),
    ],
)
def test_field_text(
    field: PageField, row: dict[str, object] | None, expected: tuple[str, str]
) -> None:
    assert field_text(field, row) == expected


def test_a_64_kib_text_is_cut_and_says_how_much_more_there_was() -> None:
    text, _ = field_text(PageField("t", "X", "text"), {"X": "h" * 65536})
    assert text == "h" * 120 + "\u2026 (65,416 more characters)"


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"DOMINANT": "consensus", "CONSENSUS_SHARE": 0.734}, "consensus 73 %"),
        ({"DOMINANT": "certification_gc", "CERTIFICATION_GC_SHARE": None}, "certification gc"),
        ({"DOMINANT": ""}, "\u2014"),
        ({"DOMINANT": None}, "\u2014"),
    ],
)
def test_the_commit_path_reads_its_dominant_cost_and_share(
    row: dict[str, object], expected: str
) -> None:
    field = PageField(COMMIT, "DOMINANT", "dominant")
    assert field_text(field, row) == (expected, "")


def test_every_figure_names_a_declared_column_of_a_declared_table() -> None:
    for column in PAGE_COLUMNS:
        for f in column.fields:
            if f.table != "recent":
                assert f.column in col.table(f.table).names, (f.table, f.column)
    assert "grstats_member_status" in page_tables()


def test_members_are_in_host_port_order_with_their_own_rows() -> None:
    a, b, c = uuid(1), uuid(2), uuid(3)
    snapshot = group_snapshot(
        [
            Member(c, host="db-a", port=3306, lag_s=12.5),
            Member(a, host="db-c", port=3306, local=True),
            Member(b, host="db-b", port=3307),
        ]
    )
    rows = group_rows(snapshot, snapshot.group_name)
    assert [(r.label, r.local) for r in rows] == [
        ("db-a:3306", False),
        ("db-b:3307", False),
        ("db-c:3306", True),
    ]
    assert rows[0].rows[LAG]["REPLICATION_LAG_SECONDS"] == 12.5


def test_a_collector_page_shows_one_group_only() -> None:
    a, b = uuid(1), uuid(2)
    snapshot = group_snapshot(
        [Member(a, host="one"), Member(b, host="two", group=OTHER_GROUP)], group_name=""
    )
    assert groups(snapshot) == {"aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa": 1, OTHER_GROUP: 1}
    assert [r.label for r in group_rows(snapshot, OTHER_GROUP)] == ["two:3306"]


def test_the_group_applier_channel_row_is_the_members_lag() -> None:
    a = uuid(1)
    other = {"MEMBER_ID": a, "CHANNEL_NAME": "async_from_dc2", "REPLICATION_LAG_SECONDS": 99.0}
    gr = {"MEMBER_ID": a, "CHANNEL_NAME": "group_replication_applier"} | {
        "REPLICATION_LAG_SECONDS": 1.0
    }
    snapshot = group_snapshot([Member(a)], extra_tables={LAG: [other, gr]})
    (row,) = group_rows(snapshot, snapshot.group_name)
    assert row.rows[LAG]["REPLICATION_LAG_SECONDS"] == 1.0


ERRORS_PROBE = col.TableDef(
    name="replication_connection_status",
    schema="performance_schema",
    columns=(
        col.Column(col.MEMBER_ID, "char(36)", "id"),
        col.Column(col.CHANNEL_NAME, "char(64)", "id"),
        col.Column("LAST_ERROR_NUMBER", "int", "number"),
        col.Column("LAST_ERROR_MESSAGE", "varchar(1024)"),
    ),
)


def test_a_table_with_channel_errors_is_read_once_declared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = uuid(1), uuid(2)
    errors = [
        {"MEMBER_ID": a, "CHANNEL_NAME": "async_from_dc2", "LAST_ERROR_NUMBER": 2003,
         "LAST_ERROR_MESSAGE": "error connecting to master 'repl@dc2:3306'"},
        {"MEMBER_ID": b, "CHANNEL_NAME": "async_from_dc2", "LAST_ERROR_NUMBER": 0,
         "LAST_ERROR_MESSAGE": ""},
    ]  # fmt: skip
    snapshot = group_snapshot([Member(a), Member(b)], extra_tables={ERRORS_PROBE.name: errors})
    assert error_tables() == ()
    assert [r.errors for r in group_rows(snapshot, snapshot.group_name)] == [(), ()]
    monkeypatch.setattr(col, "TABLES", (*col.TABLES, ERRORS_PROBE))
    assert error_tables() == (ERRORS_PROBE.name,)
    assert ERRORS_PROBE.name in page_tables()
    shown = [r.errors for r in group_rows(snapshot, snapshot.group_name)]
    error = "async_from_dc2: error 2003: error connecting to master 'repl@dc2:3306'"
    assert shown == [(error,), ()]
