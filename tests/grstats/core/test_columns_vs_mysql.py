"""Every grstats column that carries a MySQL name, against MySQL's own definitions.

The definitions are MySQL's (tests/fixtures/mysql_definitions.json, cited per
version); the registry is grstats' (grstats/core/columns.py). Each registry
column whose name MySQL declares in the table it mirrors is compared, per
version, on name, type family (and length / fractional digits), signedness
and NULL. The differences that are deliberate are listed once below, each
with its reason; any other difference fails, and so does a listed one that
no longer exists (the list never goes stale).
"""

from __future__ import annotations

import ast
from pathlib import Path

from grstats.core import columns as col
from tests.fixtures import mysql_definitions as defs
from tests.fixtures.fake_mysql import FakeMySQL

# registry table -> the MySQL tables its MySQL-named columns come from
MIRRORS: dict[str, tuple[str, ...]] = {
    col.MEMBER_STATS.name: ("replication_group_member_stats",),
    col.MEMBERS.name: ("replication_group_members",),
    col.MEMBER_LAG.name: (
        "replication_connection_status",
        "replication_applier_status_by_coordinator",
        "replication_applier_status_by_worker",
    ),
    col.APPLIER_METRICS.name: ("replication_applier_metrics",),
    col.APPLIER_PROGRESS_BY_WORKER.name: ("replication_applier_progress_by_worker",),
    # the six WL#3656 channel tables mirror their namesakes
    **{t.name: (t.name,) for t in col.CHANNEL_TABLES},
}

_NO_APPLIER_TABLES = (
    "MySQL 8.0 and 8.4 ship no WL#15620 tables: grstats shows the same columns with NULL "
    "(or the 'derived' figures its 8.0 tables tell), so every column is nullable and exists"
)
_ALL_MEMBERS = (
    "grstats shows every member's rows in one table: MEMBER_ID tells them apart "
    "(MySQL's table is the local server's own)"
)
_GTID_90 = (
    "one declaration for every version: CHAR(90) holds 8.4+'s tagged GTIDs (up to 89 "
    "characters) and every 8.0 GTID (at most 57)"
)
_APPLIER_NULL = (
    "NULL where the server lacks the WL#15620 tables or the 8.0 tables cannot tell "
    "(see core.applier's 'derived' source)"
)

# grstats' own figures in a mirrored table (derived from MySQL's columns, not MySQL's)
GRSTATS_OWN = frozenset(
    {
        col.REPLICATION_LAG,
        col.REPLICATION_LAG_SECONDS,
        col.QUEUE_LAG_SECONDS,
        col.APPLY_LAG_SECONDS,
        col.APPLY_TIME_SECONDS,
        col.CLOCK_OFFSET_SECONDS,
        col.LAG_WITHIN_CLOCK_OFFSET,
    }
)

# (registry table, column, version, aspect) -> reason; aspect: missing, family, length,
# fsp, unsigned, nullable
DELIBERATE: dict[tuple[str, str, str, str], str] = {}
for _v in defs.VERSIONS:
    for _t in (col.MEMBER_LAG, col.APPLIER_METRICS, col.APPLIER_PROGRESS_BY_WORKER):
        DELIBERATE[(_t.name, col.MEMBER_ID, _v, "missing")] = _ALL_MEMBERS
for _v in ("8.0", "8.4"):
    for _t in (col.APPLIER_METRICS, col.APPLIER_PROGRESS_BY_WORKER):
        for _c in _t.columns:
            if _c.name != col.MEMBER_ID:
                DELIBERATE[(_t.name, _c.name, _v, "missing")] = _NO_APPLIER_TABLES
for _gtid in (
    col.LAST_QUEUED_TRANSACTION,
    col.LAST_PROCESSED_TRANSACTION,
    col.LAST_APPLIED_TRANSACTION,
    col.APPLYING_TRANSACTION,
):
    DELIBERATE[(col.MEMBER_LAG.name, _gtid, "8.0", "length")] = _GTID_90
for _c in col.APPLIER_METRICS.columns + col.APPLIER_PROGRESS_BY_WORKER.columns:
    if _c.name not in (col.MEMBER_ID, col.CHANNEL_NAME) and _c.nullable:
        _table = next(
            t.name for t in (col.APPLIER_METRICS, col.APPLIER_PROGRESS_BY_WORKER) if _c in t.columns
        )
        _mysql = MIRRORS[_table][0]
        _declared = {c.name: c for c in defs.columns(_mysql, "9.x") or ()}
        if _c.name in _declared and not _declared[_c.name].nullable:
            DELIBERATE[(_table, _c.name, "9.x", "nullable")] = _APPLIER_NULL


_MIRRORED_NULL = (
    "a mirrored channel column is NULL where the member's server does not show it "
    "(an older 8.0) or sent a value of the wrong kind (counted), never a dropped row"
)
for _t in col.CHANNEL_TABLES:
    for _v in defs.VERSIONS:
        DELIBERATE[(_t.name, col.MEMBER_ID, _v, "missing")] = _ALL_MEMBERS
        for _theirs in defs.columns(_t.name, _v) or ():
            if not _theirs.nullable and _theirs.name not in (col.CHANNEL_NAME,):
                DELIBERATE[(_t.name, _theirs.name, _v, "nullable")] = _MIRRORED_NULL
            if _theirs.family == "char" and _theirs.length == 57:  # 8.0's GTID width
                DELIBERATE[(_t.name, _theirs.name, _v, "length")] = _GTID_90


def _registry_column(c: col.Column) -> defs.MySQLColumn:
    return defs.parse(f"{c.name} {c.sql_type}{'' if c.nullable else ' not null'}")


def _mysql_named(table: col.TableDef) -> list[col.Column]:
    return [c for c in table.columns if c.name not in GRSTATS_OWN]


def _differences() -> dict[tuple[str, str, str, str], str]:
    found: dict[tuple[str, str, str, str], str] = {}
    for table in col.TABLES:
        if table.name not in MIRRORS:
            continue
        for version in defs.VERSIONS:
            declared: dict[str, defs.MySQLColumn] = {}
            for mysql_table in MIRRORS[table.name]:
                for c in defs.columns(mysql_table, version) or ():
                    declared.setdefault(c.name, c)
            for column in _mysql_named(table):
                if column.name not in declared:
                    found[(table.name, column.name, version, "missing")] = "not declared"
                    continue
                mine, theirs = _registry_column(column), declared[column.name]
                for aspect in ("family", "length", "fsp", "unsigned", "nullable"):
                    if getattr(mine, aspect) != getattr(theirs, aspect):
                        found[(table.name, column.name, version, aspect)] = (
                            f"grstats {column.sql_type!r} nullable={column.nullable}, "
                            f"MySQL {theirs.declaration!r}"
                        )
    return found


def test_registry_columns_match_mysql_definitions_but_for_the_listed_differences() -> None:
    found = _differences()
    unexpected = {k: v for k, v in found.items() if k not in DELIBERATE}
    stale = sorted(k for k in DELIBERATE if k not in found)
    assert unexpected == {}, "differences from MySQL's definitions: " + "\n".join(
        f"{k}: {v}" for k, v in sorted(unexpected.items())
    )
    assert stale == [], f"listed as deliberate but no longer different: {stale}"


def test_every_mysql_named_registry_column_is_declared_by_mysql_in_some_version() -> None:
    # a name no MySQL version declares (a worklog draft, a typo) reads NULL on every server
    for table in col.TABLES:
        if table.name not in MIRRORS:
            continue
        shipped = {
            c.name
            for t in MIRRORS[table.name]
            for v in defs.VERSIONS
            for c in defs.columns(t, v) or ()
        }
        ours = {c.name for c in _mysql_named(table)} - {col.MEMBER_ID}
        assert ours <= shipped, sorted(ours - shipped)


def test_fake_server_tables_are_mysqls_definitions_for_each_version() -> None:
    for version in defs.VERSIONS:
        fake = FakeMySQL(version)
        for table in defs.tables():
            declared = defs.columns(table, version)
            if declared is None:
                assert table not in fake.tables
            else:
                assert fake.tables[table][0] == [c.name for c in declared]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.extend([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def test_fake_servers_never_take_their_columns_from_grstats_registry() -> None:
    # a fixture whose columns come from grstats' registry would agree with its mistakes:
    # the fake and its definitions import nothing of grstats; the tests that fill the
    # fake's tables do not import the registry
    tests = Path(__file__).resolve().parents[2]
    for path in (tests / "fixtures" / "fake_mysql.py", tests / "fixtures" / "mysql_definitions.py"):
        assert not [m for m in _imports(path) if m.startswith("grstats")], path
    filling = sorted((tests / "grstats" / "sources" / "mysql").glob("test_*.py"))
    assert len(filling) >= 6, filling  # the mysql source's tests moved: this list follows them
    for path in [tests / "fixtures" / "mysql_source.py", *filling]:
        registry = [m for m in _imports(path) if m.startswith("grstats.core.columns")]
        assert registry == [], path
