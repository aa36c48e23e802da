"""A history writer process for the crash-safety test (it is killed with SIGKILL).

Usage: python crash_writer.py DIR SIDE_FILE INCARNATION BASE_US

It records rows from `make_row` (seq 1, 2, ...) continuously with short fsync
and flush intervals, and each time the writer reports more rows fsynced it
appends "<incarnation> <highest fsynced seq>" to SIDE_FILE and fsyncs that
file, so the test knows a lower bound of what must survive.  Bounded: it
stops by itself after MAX_ROWS rows or MAX_SECONDS.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from grstats.core.records import HistoryRow
from grstats.history.writer import HistoryWriter

MEMBER = "c0ffee00-0000-4000-8000-000000000001"
MAX_ROWS = 200_000
MAX_SECONDS = 30.0
ROWS_PER_TICK = 20


def make_row(incarnation: int, seq: int, base_us: int) -> HistoryRow:
    """The deterministic sample number `seq` of run `incarnation`."""
    return HistoryRow(
        group_name="crash-group",
        member_id=MEMBER,
        member_host="127.0.0.1",
        member_port=3306,
        member_state="ONLINE",
        member_role="PRIMARY",
        member_version="8.4.3",
        view_id=f"17000000:{incarnation}",
        incarnation=incarnation,
        seq=seq,
        # runs 10 s apart, 1 ms per sample: the early runs cross midnight
        sampled_at=base_us + (incarnation * 10_000 + seq) * 1_000,
        count_transactions_in_queue=seq % 7,
        count_transactions_checked=seq * 3,
        count_conflicts_detected=seq // 11,
        count_transactions_rows_validating=seq % 97,
        count_transactions_remote_in_applier_queue=seq % 5,
        count_transactions_remote_applied=seq * 2,
        count_transactions_local_proposed=seq,
        count_transactions_local_rollback=seq // 13,
        transactions_committed_all_members=f"aaaa:1-{seq}" if seq % 10 == 0 else None,
        last_conflict_free_transaction=f"aaaa:{seq}" if seq % 10 == 0 else None,
        flow_control_mode=seq % 2,
    )


async def main(directory: Path, side_file: Path, incarnation: int, base_us: int) -> None:
    writer = HistoryWriter(
        directory, retention_days=3650, flush_interval_s=0.2, fsync_interval_s=0.02
    )
    await writer.start()
    fd = os.open(side_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    reported = 0
    seq = 0
    deadline = time.monotonic() + MAX_SECONDS
    while seq < MAX_ROWS and time.monotonic() < deadline:
        for _ in range(ROWS_PER_TICK):
            seq += 1
            writer.record(make_row(incarnation, seq, base_us))
        # rows are fsynced in recording order, so "durable count" == highest durable seq
        durable = writer.stats.rows_written
        if durable > reported:
            os.write(fd, f"{incarnation} {durable}\n".encode())
            os.fsync(fd)  # the side file's own fsync: the line is true once it is on disk
            reported = durable
        await asyncio.sleep(0.002)
    await writer.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
