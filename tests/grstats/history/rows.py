"""Sample rows and small helpers shared by the history tests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from grstats.core.records import HISTORY_COLUMNS, HistoryRow
from grstats.history.wal import WAL_MAGIC
from grstats.history.writer import HistoryWriter

US = 1_000_000
# 2026-11-20 00:00:00 UTC, computed by hand: 20777 days after the epoch
MIDNIGHT_US = 20_777 * 86_400 * US


def sample_row(
    seq: int, *, member: str = "m-1", at_us: int | None = None, group: str = "g"
) -> HistoryRow:
    return HistoryRow(
        group_name=group,
        member_id=member,
        member_host="db1",
        member_port=3306,
        member_state="ONLINE",
        member_role="PRIMARY",
        member_version="8.4.3",
        view_id="1700:3",
        incarnation=2**63 + 5,  # u64 above int64's range must survive
        seq=seq,
        sampled_at=MIDNIGHT_US + seq * US if at_us is None else at_us,
        count_transactions_in_queue=seq % 3,
        count_transactions_checked=10 * seq,
        count_conflicts_detected=seq // 2,
        count_transactions_rows_validating=40 + seq,
        count_transactions_remote_in_applier_queue=1,
        count_transactions_remote_applied=9 * seq,
        count_transactions_local_proposed=seq,
        count_transactions_local_rollback=0,
        transactions_committed_all_members="aaaa:1-9" if seq == 1 else None,
        last_conflict_free_transaction="aaaa:9" if seq == 1 else None,
        flow_control_mode=1,
    )


def as_dict(row: HistoryRow) -> dict[str, object]:
    out: dict[str, object] = {name: getattr(row, name) for name, _ in HISTORY_COLUMNS}
    out["sampled_at"] = dt.datetime.fromtimestamp(row.sampled_at / US, dt.UTC)
    return out


def new_writer(directory: Path, **kwargs: float | str) -> HistoryWriter:
    return HistoryWriter(directory, retention_days=36500, **kwargs)  # type: ignore[arg-type]


def wal_file(directory: Path, name: str, records: bytes) -> Path:
    wal = directory / "wal"
    wal.mkdir(parents=True, exist_ok=True)
    path = wal / f"wal-{name}.log"
    path.write_bytes(WAL_MAGIC + records)
    return path


def parts(directory: Path) -> list[Path]:
    return sorted(directory.glob("group=*/date=*/part-*.parquet"))


async def start_and_close(directory: Path) -> None:
    writer = new_writer(directory)
    await writer.start()
    await writer.close()


class Recorder:
    """A logger that keeps (event, context) of each warning and error line."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **context: Any) -> None:
        self.lines.append((event, context))

    error = warning
