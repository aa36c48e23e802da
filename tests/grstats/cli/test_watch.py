"""`grstats watch` view arithmetic: rates since the last refresh, changes, restarts."""

from __future__ import annotations

from rich.console import Console

from grstats.cli.watchview import build_view, fit_columns, live_table, plain_table

M1 = "11111111-1111-1111-1111-111111111111"


def _tables(checked: int, conflicts: int, applied: int, queue: int, state: str = "ONLINE") -> dict:
    return {
        "replication_group_member_stats": [
            {
                "MEMBER_ID": M1,
                "COUNT_TRANSACTIONS_CHECKED": checked,
                "COUNT_CONFLICTS_DETECTED": conflicts,
                "COUNT_TRANSACTIONS_REMOTE_APPLIED": applied,
                "COUNT_TRANSACTIONS_IN_QUEUE": queue,
            }
        ],
        "replication_group_members": [
            {"MEMBER_ID": M1, "MEMBER_HOST": "db1", "MEMBER_PORT": 3306, "MEMBER_STATE": state}
        ],
        "grstats_member_status": [{"MEMBER_ID": M1, "LAST_SEEN_AGE_SECONDS": 0.5}],
    }


def test_first_refresh_has_no_rates() -> None:
    rows, changed, _ = build_view(_tables(100, 4, 50, 0), at=10.0, previous=None)
    assert rows[0]["checked/s"] is None
    assert rows[0]["MEMBER"] == "db1:3306"
    assert changed == set()


def test_rates_are_per_second_since_the_previous_refresh() -> None:
    _, _, state = build_view(_tables(100, 4, 50, 0), at=10.0, previous=None)
    rows, _, _ = build_view(_tables(160, 7, 70, 0), at=12.0, previous=state)
    # (160-100)/2, (7-4)/2, (70-50)/2
    assert rows[0]["checked/s"] == 30.0
    assert rows[0]["conflicts/s"] == 1.5
    assert rows[0]["applied/s"] == 10.0


def test_counter_going_down_is_a_restart_without_a_rate() -> None:
    _, _, state = build_view(_tables(100, 4, 50, 0), at=10.0, previous=None)
    rows, _, _ = build_view(_tables(5, 0, 1, 0), at=11.0, previous=state)
    assert rows[0]["checked/s"] is None
    assert rows[0]["applied/s"] is None


def test_changed_cells_are_reported_but_not_the_age() -> None:
    _, _, state = build_view(_tables(100, 4, 50, 0), at=10.0, previous=None)
    _, changed, _ = build_view(_tables(100, 5, 50, 3, "UNREACHABLE"), at=11.0, previous=state)
    assert changed == {(M1, "CONFLICTS"), (M1, "IN_QUEUE"), (M1, "STATE")}


def test_narrow_terminal_keeps_member_state_queues_and_rates() -> None:
    rows, _, _ = build_view(_tables(100, 4, 50, 0), at=10.0, previous=None)
    columns, _ = fit_columns(rows, 100)
    assert {"MEMBER", "STATE", "IN_QUEUE", "APPLIER_QUEUE", "checked/s"} <= set(columns)
    assert "PROPOSED" not in columns
    wide, short = fit_columns(rows, 400)
    assert "PROPOSED" in wide
    assert not short


def test_unreachable_member_is_drawn_in_red() -> None:
    rows, changed, _ = build_view(_tables(1, 0, 1, 0, "UNREACHABLE"), at=1.0, previous=None)
    # Pin the terminal: rich assumes 80x25 on TERM=dumb unless both sizes are given.
    console = Console(
        force_terminal=True, color_system="standard", width=300, height=25, record=True
    )
    console.print(live_table(rows, changed, "title", 300))
    line = next(x for x in console.export_text(styles=True).splitlines() if "UNREACHABLE" in x)
    assert "\x1b[1;31mUNREACHABLE" in line  # bold red


def test_remote_text_cannot_reach_the_terminal_raw() -> None:
    tables = _tables(1, 0, 1, 0, "ONLINE\x1b[2J")
    tables["replication_group_members"][0]["MEMBER_HOST"] = "db1\x1b]0;owned\x07"
    rows, changed, _ = build_view(tables, at=1.0, previous=None)
    console = Console(
        force_terminal=True, color_system="standard", width=300, height=25, record=True
    )
    console.print(live_table(rows, changed, "title\x1b[H", 300))
    text = console.export_text(styles=False)
    assert "\x1b" not in text and "\x07" not in text
    assert "db1\\x1b]0;owned\\x07:3306" in text
    assert "ONLINE\\x1b[2J" in text
    assert "title\\x1b[H" in text
    plain = plain_table(rows, "t")
    assert "\x1b" not in plain and "ONLINE\\x1b[2J" in plain
