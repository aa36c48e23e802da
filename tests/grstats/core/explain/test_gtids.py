"""The gtids explain text (`grstats gtids --explain`, the live page): text and SQL, by hand."""

from __future__ import annotations

from grstats.core import columns as col
from grstats.core.explain import gtids_text, inject_statements
from protocol import GtidSet

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
M1 = "11111111-1111-1111-1111-111111111111"
M2 = "22222222-2222-2222-2222-222222222222"


def row(member: str, **cells: object) -> dict[str, object]:
    out: dict[str, object] = dict.fromkeys(col.MEMBER_GTIDS.names)
    out[col.MEMBER_ID] = member
    out.update(cells)
    return out


def test_injection_is_one_empty_transaction_per_gtid_tags_included() -> None:
    statements, left = inject_statements(GtidSet.parse(f"{M1}:1-2:maint:7"))
    assert statements == [
        f"SET GTID_NEXT='{M1}:1'; BEGIN; COMMIT;",
        f"SET GTID_NEXT='{M1}:2'; BEGIN; COMMIT;",
        f"SET GTID_NEXT='{M1}:maint:7'; BEGIN; COMMIT;",
        "SET GTID_NEXT='AUTOMATIC';",
    ]
    assert left == 0


def test_injection_is_bounded_and_says_how_many_are_left() -> None:
    statements, left = inject_statements(GtidSet.parse(f"{M1}:1-1000000"), limit=3)
    assert statements[-2] == f"SET GTID_NEXT='{M1}:3'; BEGIN; COMMIT;"
    assert len(statements) == 4 and left == 999_997


def test_explain_names_the_errant_gtid_since_when_and_what_to_do() -> None:
    rows = [
        row(
            M1,
            **{
                col.ERRANT_TRANSACTIONS: f"{M1}:5",
                col.ERRANT_COUNT: 1,
                col.ERRANT_SINCE: "2026-11-25 20:00:00.000000",
                col.MISSING_COUNT: 0,
                col.RECOVERY_METHOD: "REPROVISION",
                col.DONORS: M2,
            },
        ),
        row(
            M2,
            **{
                col.ERRANT_TRANSACTIONS: "",
                col.ERRANT_COUNT: 0,
                col.MISSING_COUNT: 1,
                col.MISSING_FIRST_UUID: M1,
                col.RECOVERY_METHOD: "INCREMENTAL",
                col.DONORS: M1,
            },
        ),
    ]
    text = gtids_text(rows)
    assert f"{M1}: 1 errant, 0 missing" in text
    assert "errant since 2026-11-25 20:00:00.000000" in text
    assert f"SET GTID_NEXT='{M1}:5'; BEGIN; COMMIT;" in text
    assert "recoveryMethod: 'clone'" in text
    assert "recovery: REPROVISION: Group Replication refuses a member with extra GTIDs" in text
    assert f"recovery: INCREMENTAL from {M1}" in text
    # a missing count alone is no alarm: the text says it is normal in flight
    assert f"missing: first UUID {M1} (in the others' sets; normal in flight" in text


def test_explain_escapes_control_characters_from_rows() -> None:
    text = gtids_text([row(M1 + "\x1b[2J", **{col.RECOVERY_METHOD: None})])
    assert "\x1b" not in text and "\\x1b" in text


def test_explain_names_members_and_donors_host_port_in_that_order() -> None:
    labels = {M1: "db2:3306", M2: "db1:3306"}
    rows = [
        row(
            M1,
            **{
                col.ERRANT_COUNT: 0,
                col.MISSING_COUNT: 0,
                col.RECOVERY_METHOD: "INCREMENTAL",
                col.DONORS: M2,
            },
        ),
        row(
            M2,
            **{
                col.ERRANT_COUNT: 0,
                col.MISSING_COUNT: 0,
                col.RECOVERY_METHOD: "INCREMENTAL",
                col.DONORS: M1,
            },
        ),
    ]
    text = gtids_text(rows, labels)
    # db1 (M2) before db2 (M1): host:port order, not UUID order
    assert text.index("db1:3306: 0 errant") < text.index("db2:3306: 0 errant")
    assert "recovery: INCREMENTAL from db2:3306" in text
    assert M1 not in text and M2 not in text
