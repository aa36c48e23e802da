"""Issue 39 rows 2 and 3: the SQL view's WAL tail bounded in time and memory, never silent.

Strategy: WAL files are written by hand with the writer's own record codec
(`encode_record`), large ones by repeating records of `sample_row`; the
endpoint runs in this process (`sql_inprocess`) and PyMySQL asks it. What is
checked, each against a figure worked out by hand:
- the tail's read counts against the statement's `query_timeout`: a
  16 MiB file is answered or refused (3024) within the timeout and a margin,
  and the next statements go on from where the read was left until the rows
  are all shown;
- a grown file is decoded and thinned from where it was left: the thinning
  (`segment_parts`) sees only the appended rows;
- files left out past the byte bound are a counter (`tail_skipped_files`),
  a warning in the query's answer (SHOW WARNINGS), and a /healthz reason;
- a writer flushes when its WAL passes `flush_bytes`, not only every
  `flush_interval`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from grstats.core import health as h
from grstats.core.health import Health
from grstats.core.snapshot import SqlFigures
from grstats.daemon.health import EchoWatch, daemon_health
from grstats.history import tail as tail_module
from grstats.history.tail import WalTail
from grstats.history.wal import encode_record
from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.daemons import wait_for
from tests.fixtures.history_faults import fast_writer
from tests.fixtures.sql_inprocess import Running, serve
from tests.grstats.history.rows import parts, sample_row, wal_file

pytestmark = pytest.mark.faults

PASSWORD = "s3cret"
COUNT = "SELECT count(*) FROM grstats.history"
TIMEOUT_S = 0.5
MARGIN_S = 2.5  # a loaded 2-core machine: the refusal itself, the client's round trip


def _options(history: Path, **kw: Any) -> SqlOptions:
    base: dict[str, Any] = {
        "port": 0,
        "password_hash": native_password_hash(PASSWORD),
        "history_dir": str(history),
        "query_timeout": TIMEOUT_S,
    }
    return SqlOptions(**{**base, **kw})


def _ask(port: int, sql: str) -> tuple[int, Any, list[Any]]:
    """(0, rows, warnings) or (MySQL error, message, [])."""
    try:
        with (
            pymysql.connect(
                host="127.0.0.1", port=port, user="grstats", password=PASSWORD, read_timeout=60
            ) as conn,
            conn.cursor() as cur,
        ):
            cur.execute(sql)
            rows = cur.fetchall()
            return 0, rows, list(conn.show_warnings() or ())
    except pymysql.MySQLError as exc:
        return int(exc.args[0]), str(exc.args[1]), []


def _big_wal(history: Path, mib: int) -> int:
    """A WAL file of about `mib` MiB of distinct rows; returns the row count."""
    one = encode_record(sample_row(1))
    count = (mib << 20) // len(one)
    records = b"".join(encode_record(sample_row(seq)) for seq in range(1, count + 1))
    wal_file(history, "wbig00000001-000000000001-0a", records)
    return count


@pytest.fixture
def big(tmp_path: Path) -> Iterator[tuple[Running, int]]:
    count = _big_wal(tmp_path, 16)
    yield from ((r, count) for r in serve(_options(tmp_path)))


def test_the_tail_read_counts_against_the_query_timeout_and_resumes(
    big: tuple[Running, int],
) -> None:
    running, count = big
    answers = []
    for _ in range(60):
        started = time.monotonic()
        code, rows, _ = _ask(running.port, COUNT)
        took = time.monotonic() - started
        assert took < TIMEOUT_S + MARGIN_S, f"{took:.2f} s for one statement"
        answers.append(code)
        if code == 0:
            assert rows == ((count,),)
            break
        assert code == 3024, (code, rows)
    assert answers[-1] == 0, answers  # each statement read on from where the last stopped
    assert answers[0] == 3024, answers  # 16 MiB are not read within 0.5 s


def test_a_grown_file_is_thinned_only_for_its_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    thinned: list[int] = []
    real = tail_module.segment_parts

    def spy(table: Any, segment_id: str) -> Any:
        thinned.append(table.num_rows)
        return real(table, segment_id)

    monkeypatch.setattr(tail_module, "segment_parts", spy)
    path = wal_file(
        tmp_path,
        "wgrow0000001-000000000001-0f",
        b"".join(encode_record(sample_row(s)) for s in range(1, 101)),
    )
    tail = WalTail(tmp_path)
    assert tail.table().num_rows == 100
    with path.open("ab") as f:
        f.write(b"".join(encode_record(sample_row(s)) for s in range(101, 111)))
    assert sorted(tail.table().column("seq").to_pylist()) == list(range(1, 111))
    assert thinned == [100, 10]  # the 10 appended rows, not 110 again


def test_skipped_files_are_counted_warned_in_the_answer_and_a_health_reason(
    tmp_path: Path,
) -> None:
    one = len(encode_record(sample_row(1)))
    for n, seq in enumerate((1, 2, 3), start=1):
        wal_file(tmp_path, f"wskp00000001-{n:012d}-1{n}", encode_record(sample_row(seq)))
    tail = WalTail(tmp_path, max_bytes=one + 16)  # room for the newest file only
    with contextlib.contextmanager(serve)(
        _options(tmp_path, query_timeout=10.0), tail=tail
    ) as running:
        code, rows, warnings = _ask(running.port, "SELECT seq FROM grstats.history")
        assert (code, rows) == (0, ((3,),))
        assert len(warnings) == 1, warnings
        level, _, message = warnings[0]
        assert level == "Warning" and "2 write-ahead log files" in message, warnings
        figures = running.figures()
    assert figures.tail_skipped_files == 2
    assert figures.tail_skipped_total == 2
    health = daemon_health(Health(), None, EchoWatch(), figures, own=0)
    assert h.SQL_TAIL_SKIPPED in health.codes()
    healthy = daemon_health(Health(), None, EchoWatch(), SqlFigures(serving=True), own=0)
    assert healthy.codes() == ()


async def test_a_writer_flushes_when_its_wal_passes_flush_bytes(tmp_path: Path) -> None:
    writer = fast_writer(tmp_path, flush_interval_s=3600.0, flush_bytes=64 << 10)
    await writer.start()
    try:
        for seq in range(1, 1001):  # ~300 B a record: ~300 KB, past 64 KiB
            writer.record(sample_row(seq))
        await asyncio.to_thread(wait_for, lambda: parts(tmp_path), 30, "a Parquet segment")
    finally:
        await writer.close()
