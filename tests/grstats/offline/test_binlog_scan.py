"""grstats.offline.binlog_scan without click: grouping, histogram, time parsing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from grstats.cli.binlogview import Progress
from grstats.offline.binlog_scan import LogHistogram, ScanError, parse_time, scan_file

FILES = Path(__file__).resolve().parents[3] / "tests" / "protocol" / "binlog_vectors" / "files"


def test_small_read_chunks_give_the_same_transactions_as_one_read() -> None:
    path = FILES / "mysql-bin.checksum-none"
    small = [(t.start, t.end, t.event) for t in scan_file(path, chunk_size=61)]
    large = [(t.start, t.end, t.event) for t in scan_file(path)]
    assert small == large
    assert len(large) == 40
    data = path.read_bytes()
    assert data[-19 + 4] == 3  # the log closes with a 19-byte Stop event (no checksum)
    assert large[-1][1] == len(data) - 19


def test_relay_log_with_two_format_descriptions_keeps_exact_spans() -> None:
    rows = list(scan_file(FILES / "rpl_unfiltered_hidden_gcol.000001"))
    assert [t.span for t in rows] == [203, 196, 283]
    assert all(t.length_matches for t in rows)


def test_five_six_transactions_have_no_timestamps_and_say_so() -> None:
    (first, *_) = scan_file(FILES / "binlog_transaction_with_GTID.000001")
    assert first.hop_delay is None
    assert "predates MySQL 8.0.1" in first.note
    assert first.length_matches is None


def test_empty_file_is_not_a_binary_log(tmp_path: Path) -> None:
    empty = tmp_path / "empty.000001"
    empty.write_bytes(b"")
    with pytest.raises(ScanError) as err:
        list(scan_file(empty))
    assert (err.value.offset, err.value.unreadable) == (0, False)


def test_histogram_is_exact_below_256_and_orders_negative_values() -> None:
    hist = LogHistogram()
    for value in (-5000, -3, 0, 7, 200, 255):
        hist.add(value)
    # nearest rank ceil(6 p / 100) of -5000, -3, 0, 7, 200, 255
    assert [hist.percentile(p) for p in (1, 17, 50, 51, 67, 100)] == [-5000, -3, 0, 7, 200, 255]


def test_histogram_percentile_is_within_one_percent_above_256() -> None:
    hist = LogHistogram()
    values = [300 + 9_973 * i for i in range(1000)]
    for value in values:
        hist.add(value)
    expected = sorted(values)[989]  # nearest rank of p99 over 1000 values
    got = hist.percentile(99)
    assert got is not None
    assert expected * 0.992 <= got <= expected
    assert hist.max == max(values)


def test_parse_time_accepts_iso_with_or_without_offset_and_micros() -> None:
    assert parse_time("1970-01-01T00:00:01Z") == 1_000_000
    assert parse_time("1970-01-01T05:30:01+05:30") == 1_000_000
    assert parse_time("1970-01-01 00:00:00.000250") == 250
    assert parse_time("1763900000000000") == 1_763_900_000_000_000
    with pytest.raises(ValueError):
        parse_time("yesterday")


class _Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_progress_is_written_only_to_a_terminal() -> None:
    quiet = _Terminal(tty=False)
    Progress(quiet, enabled=True)(Path("relay-bin.000001"), 50, 100)
    assert quiet.getvalue() == ""
    tty = _Terminal(tty=True)
    progress = Progress(tty, enabled=True)
    progress(Path("relay-bin.000001"), 100, 100)
    progress.close()
    assert "relay-bin.000001: 100%" in tty.getvalue()
