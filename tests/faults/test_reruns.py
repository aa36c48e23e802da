"""Issue 39's re-runs of last round's #14, #15 and #17, as they stand now.

- #14, a corrupt segment in a finished day: housekeeping skips it (quarantined,
  named) and goes on with every later partition; the SQL view keeps answering
  from the readable files. (The writer side is also
  `test_history_integrity.test_housekeeping_skips_a_corrupt_file_...`.)
- #15, the rollup on a corrupt history: `test_rollup_faults` (a zero-length and
  a truncated segment are skipped and named; `--strict` fails) -- run as it is.
- #17, `stats --bus` against 300 hostile retained messages: the read is
  bounded (the collector's member cap, the read's deadline) and the command
  says how many messages it could not show, by reason; expected counts by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pymysql
import pytest

from grstats.sql import SqlOptions, native_password_hash
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.broker import Broker
from tests.fixtures.bus_helpers import publish_retained
from tests.fixtures.cli import grstats
from tests.fixtures.daemons import GRSTATS
from tests.fixtures.sql_inprocess import serve

pytestmark = pytest.mark.faults

GROUP = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
FAKES = 280  # well-formed envelopes of 280 members: 64 fit the per-group cap
JUNK = 20  # payloads that are no envelope at all
CAP = 64  # [limits] max_members_per_group's default (a collector's view: all remote)


def _envelope(member: str, n: int) -> bytes:
    info = MemberInfo(
        id=member, host=f"10.0.{n // 250}.{n % 250}", port=3306, state="ONLINE",
        role="SECONDARY", version="8.4.3", gcs_id=f"10.0.0.9:{33061 + n}",
    )  # fmt: skip
    return encode_envelope(
        Envelope(
            group=GROUP,
            member=info,
            view_id="17000000:7",
            incarnation=99,
            seq=5,
            sent_us=time.time_ns() // 1000,
            stats=encode_pipeline_stats(PipelineStats(transactions_certified=n)),
        )
    )


def test_stats_bus_against_300_hostile_retained_messages_is_bounded_and_says_what_it_left_out(
    broker: Broker,
) -> None:
    members = [str(uuid.UUID(int=(7 << 64) + n)) for n in range(FAKES + JUNK)]
    messages = [
        (f"grstats/v1/{GROUP}/{m}/stats", _envelope(m, n)) for n, m in enumerate(members[:FAKES])
    ]
    messages += [(f"grstats/v1/{GROUP}/{m}/stats", b"\x00junk") for m in members[FAKES:]]
    asyncio.run(publish_retained(broker.host, broker.port, messages))
    started = time.monotonic()
    done = grstats("stats", "--bus", broker.url, "--format", "json", timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == CAP
    not_shown = FAKES - CAP + JUNK  # 236
    assert f"{not_shown} of {FAKES + JUNK} messages" in done.stderr, done.stderr
    assert f"over_limit {FAKES - CAP}" in done.stderr and f"malformed {JUNK}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert took < 30, f"{took:.1f} s"


def test_a_corrupt_segment_in_a_finished_day_leaves_the_sql_view_answering(tmp_path: Path) -> None:
    history = tmp_path / "history"
    subprocess.run(
        [GRSTATS, "simulate", "--members", "2", "--days", "2", "--start", "2024-03-04",
         "--out", str(history)],
        check=True, capture_output=True,
    )  # fmt: skip
    segments = sorted(history.glob("group=*/date=*/*.parquet"))
    broken = next(p for p in segments if "date=2024-03-04" in str(p))
    readable = [p for p in segments if p != broken]
    expected = sum(pq.read_metadata(p).num_rows for p in readable)  # by hand, per file
    second_day = sum(pq.read_metadata(p).num_rows for p in readable if "2024-03-05" in str(p))
    broken.write_bytes(broken.read_bytes()[: broken.stat().st_size // 2])  # a torn copy
    options = SqlOptions(
        port=0, password_hash=native_password_hash("s3cret"), history_dir=str(history),
        query_timeout=30.0,
    )  # fmt: skip
    with (
        contextlib.contextmanager(serve)(options) as running,
        pymysql.connect(
            host="127.0.0.1", port=running.port, user="grstats", password="s3cret",
            read_timeout=60,
        ) as conn,
        conn.cursor() as cur,
    ):  # fmt: skip
        cur.execute("SELECT count(*) FROM grstats.history WHERE date = '2024-03-05'")
        assert cur.fetchall() == ((second_day,),)
        cur.execute("SELECT count(*) FROM grstats.history")
        assert cur.fetchall() == ((expected,),)
        warnings = conn.show_warnings()
    assert len(warnings) == 1 and broken.name in warnings[0][2], warnings
