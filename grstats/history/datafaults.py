"""What a history writer could not keep as it was given: counted, logged, shown.

Strategy: nothing is lost or hidden (STYLE 15).  A value the history schema
cannot store is stored as NULL and counted by column; a row whose identity
cannot be stored is dropped and counted; a file that cannot be read is kept
in the quarantine and counted; damaged WAL records are counted.  Each of
these moves a counter for /metrics, notes a data fault that keeps /healthz
degraded for a while, and is logged rate-limited.  `DataFaults` is that
bookkeeping for the WAL side (`journal`), the segmenting (`segmenter`) and
the offload child alike, so the counts read the same wherever the work ran.
"""

from __future__ import annotations

from pathlib import Path

from grstats.core.records import HistoryRow
from grstats.history.quarantine import quarantine_file
from grstats.history.rowcheck import storable_row
from grstats.history.stats import Counters, RateLimitedLog

__all__ = ["DataFaults"]


class DataFaults:
    """The data-fault bookkeeping of one writer (any thread).

    Args:
        directory: the history root (its quarantine is inside).
        counters: the writer's counters.
        limiter: rate-limited logging of repeating events.
    """

    def __init__(self, directory: Path, counters: Counters, limiter: RateLimitedLog) -> None:
        self.directory = directory
        self._counters = counters
        self._limiter = limiter

    def storable(self, rows: list[HistoryRow]) -> list[HistoryRow]:
        """Rows with unstorable values as NULL (counted by column); unidentifiable ones dropped.

        Args:
            rows: samples (anything else is an unidentifiable row).

        Returns:
            The rows that can be stored, in order.
        """
        out: list[HistoryRow] = []
        invalid = 0
        nulled: dict[str, int] = {}
        for row in rows:
            stored, bad = storable_row(row) if isinstance(row, HistoryRow) else (None, ("<row>",))
            member = str(getattr(row, "member_id", ""))
            if stored is None:
                invalid += 1
                self._limiter.emit("warning", "history.row_rejected", column=bad[0], member=member)
                continue
            for column in bad:
                nulled[column] = nulled.get(column, 0) + 1
            if bad:
                self._limiter.emit("warning", "history.values_nulled", columns=bad, member=member)
            out.append(stored)
        if invalid or nulled:
            with self._counters.lock:
                c = self._counters
                c.invalid += invalid
                for column, count in nulled.items():
                    c.values_nulled[column] = c.values_nulled.get(column, 0) + count
                if nulled:
                    c.fault(
                        "nulled",
                        f"{sum(c.values_nulled.values())} value(s) stored as NULL "
                        f"(unstorable: {', '.join(sorted(c.values_nulled))})",
                    )
                if invalid:
                    c.fault("invalid", f"{c.invalid} row(s) dropped: identity not storable")
        return out

    def quarantine(self, path: Path, reason: str, *, copy: bool = False) -> None:
        """Move (or copy) an unreadable file into the quarantine; count it, degrade health.

        Args:
            path: the file, inside the history root.
            reason: why it cannot be read.
            copy: keep the original (a damaged WAL file that is still segmented).

        Raises:
            OSError: the file could not be moved (it stays where it was).
        """
        kept = quarantine_file(self.directory, path, reason, copy=copy)
        if kept is None:
            return  # this copy is already kept
        with self._counters.lock:
            self._counters.files_quarantined += 1
            self._counters.quarantined_last = kept.name
            self._counters.fault(
                "quarantined",
                f"{self._counters.files_quarantined} unreadable file(s) kept in "
                f"{kept.parent}, last {kept.name}",
            )

    def keep_damaged(self, path: Path) -> None:
        """Copy a WAL file with damaged records into the quarantine (it is still segmented).

        Raises:
            OSError: the copy failed.
        """
        self.quarantine(path, "damaged records in a write-ahead log file", copy=True)

    def corrupt(self, records: int) -> None:
        """Count damaged WAL records (one per damaged stretch) as lost rows.

        Args:
            records: how many were met in one file (0: nothing to count).
        """
        if records:
            with self._counters.lock:
                self._counters.corrupt += records
                self._counters.fault(
                    "corrupt",
                    f"{self._counters.corrupt} damaged write-ahead log record(s) lost",
                )
