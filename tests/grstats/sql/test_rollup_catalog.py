"""The SQL endpoint shows the applier rollup tables like the other rollups."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from grstats.sql import catalog
from grstats.sql.engine import Engine


def _engine(rollups: Path) -> Engine:
    return Engine(
        history_dir="",
        rollups_dir=str(rollups),
        query_timeout=5.0,
        max_rows=100,
        max_result_bytes=100_000,
    )


def test_applier_tables_are_grstats_tables_with_their_columns(tmp_path: Path) -> None:
    partition = tmp_path / "applier_member_hour" / "group=g1" / "date=2026-11-18"
    partition.mkdir(parents=True)
    table = pa.table(
        {"member_id": ["a"], "transactions_committed": [5], "commit_order_share": [0.5]}
    )
    pq.write_table(table, partition / "part-0.parquet")
    (tmp_path / "applier_member_day").mkdir()  # a history without applier figures: no files
    engine = _engine(tmp_path)
    assert ("grstats", "applier_member_hour") in engine.known_tables()
    types = engine.rollup_types()
    assert set(types) == {"applier_member_hour"}
    assert types["applier_member_hour"]["transactions_committed"] == "bigint"
    assert types["applier_member_hour"]["commit_order_share"] == "double"


def test_member_hosts_is_a_grstats_table(tmp_path: Path) -> None:
    """The members dimension the rollup writes beside its tables is queryable too."""
    partition = tmp_path / "member_hosts" / "group=g1" / "date=2026-11-18"
    partition.mkdir(parents=True)
    table = pa.table({"member_id": ["a"], "member_host": ["db1"], "member_port": [3306]})
    pq.write_table(table, partition / "part-0.parquet")
    (tmp_path / "_skipped_files.json").write_text("{}", encoding="utf-8")
    engine = _engine(tmp_path)
    assert ("grstats", "member_hosts") in engine.known_tables()
    assert engine.rollup_types()["member_hosts"]["member_port"] == "bigint"


def test_the_catalog_lists_every_table_the_rollup_writes() -> None:
    """grstats cannot import spark_rollups (the layering): this test ties the two lists.

    A rollup table missing from `catalog.ROLLUP_TABLES` would be silently
    hidden by the SQL endpoint; `_skipped_files.json` is a file, not a table.
    """
    from spark_rollups import rollup  # noqa: PLC0415  (pyspark, imported without a JVM)

    assert sorted(catalog.ROLLUP_TABLES) == sorted(rollup.WRITTEN_TABLES)
    assert len(set(rollup.WRITTEN_TABLES)) == len(rollup.WRITTEN_TABLES)
