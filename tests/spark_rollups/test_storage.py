"""storage.py: partition listing, fingerprints and the atomic manifest write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from spark_rollups import storage

pytestmark = pytest.mark.slow


def test_local_path_strips_file_urls() -> None:
    assert storage.local_path("/var/x") == "/var/x"
    assert storage.local_path("file:///var/x") == "/var/x"
    assert storage.local_path("file:/var/x") == "/var/x"
    assert storage.local_path("rel/x") == "rel/x"
    assert storage.local_path("s3a://bucket/x") is None
    assert storage.local_path("hdfs://nn:8020/x") is None


def test_local_atomic_write_replaces_the_file_and_leaves_no_temporary(
    spark: Any, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "_m.json"
    storage.write_text_atomic(spark, str(target), "one")
    storage.write_text_atomic(spark, f"file://{target}", "two")
    assert target.read_text() == "two"
    assert os.listdir(target.parent) == ["_m.json"]
    assert storage.read_text(spark, str(target)) == "two"
    assert storage.read_text(spark, str(tmp_path / "missing.json")) is None


def test_hadoop_write_replaces_the_file_and_reads_back(spark: Any, tmp_path: Path) -> None:
    # The branch taken for hdfs:// or s3a:// paths, run on Hadoop's local file system.
    url = f"file://{tmp_path}/out/_m.json"
    storage._write_hadoop(spark, url, b"first")
    storage._write_hadoop(spark, url, "second \u00e9".encode())
    assert (tmp_path / "out" / "_m.json").read_text(encoding="utf-8") == "second \u00e9"
    assert storage._read_hadoop(spark, url) == "second \u00e9"
    assert storage._read_hadoop(spark, f"file://{tmp_path}/none.json") is None
    visible = [n for n in os.listdir(tmp_path / "out") if not n.endswith(".crc")]
    assert visible == ["_m.json"]  # no temporary left behind


def test_fingerprint_changes_when_a_segment_is_added(spark: Any, tmp_path: Path) -> None:
    day = tmp_path / "group=g%2F1" / "date=2026-11-17"
    day.mkdir(parents=True)
    (day / "part-0.parquet").write_bytes(b"x")
    (day / "_tmp-ignored.parquet").write_bytes(b"y")
    first = storage.partition_fingerprints(spark, str(tmp_path))
    assert list(first) == ["g%2F1"]
    assert list(first["g%2F1"]) == ["2026-11-17"]
    (day / "_tmp-other.parquet").write_bytes(b"z")  # not a segment: no change
    assert storage.partition_fingerprints(spark, str(tmp_path)) == first
    (day / "part-1.parquet").write_bytes(b"x")
    assert storage.partition_fingerprints(spark, str(tmp_path)) != first
    assert storage.list_partitions(spark, str(tmp_path)) == {"g%2F1": {"2026-11-17"}}
