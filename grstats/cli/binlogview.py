"""How `grstats binlog` shows what it found: decoded events, transaction rows, summaries, progress.

The command module (`grstats.cli.commands.binlog`) parses options and calls
these; the scanning itself is `grstats.offline.binlog_scan`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from grstats.core.ratelimit import RateLimit
from grstats.offline.binlog_scan import DelayStats, Summary, Transaction, timestamp_text
from protocol import (
    EVENT_TYPE_NAMES,
    DecodedEvent,
    FormatDescription,
    GtidEvent,
    GtidSet,
)

GTID_KEYS = (
    "last_committed",
    "sequence_number",
    "original_commit_timestamp",
    "immediate_commit_timestamp",
    "transaction_length",
    "original_server_version",
    "immediate_server_version",
    "commit_group_ticket",
)
CSV_COLUMNS = (
    "file",
    "gtid",
    "last_committed",
    "sequence_number",
    "original_commit_timestamp",
    "immediate_commit_timestamp",
    "hop_delay_us",
    "transaction_length",
    "start",
    "end",
    "span",
    "server_id",
    "note",
)


def decoded_fields(decoded: DecodedEvent) -> dict[str, Any]:
    out: dict[str, Any] = {}
    header = decoded.header
    if header is not None:
        out.update(
            event_type=header.event_type,
            event_type_name=header.event_type_name,
            timestamp=header.timestamp,
            server_id=header.server_id,
            event_size=header.event_size,
            next_position=header.next_position,
            flags=header.flags,
        )
    if decoded.checksum_ok is not None:
        out["checksum_ok"] = decoded.checksum_ok
    body = decoded.body
    if isinstance(body, GtidEvent):
        if header is None:
            out["event_type"] = body.event_type
            out["event_type_name"] = EVENT_TYPE_NAMES[body.event_type]
        out.update(gtid=body.gtid, sid=body.sid, gno=body.gno)
        if body.tag:
            out["tag"] = body.tag
        out["gtid_flags"] = body.gtid_flags
        for key in GTID_KEYS:
            value = getattr(body, key)
            if value is not None:
                out[key] = value
    elif isinstance(body, FormatDescription):
        out.update(
            binlog_version=body.binlog_version,
            server_version=body.server_version,
            create_timestamp=body.create_timestamp,
            header_length=body.header_length,
        )
        if body.checksum_alg is not None:
            out["checksum_alg"] = body.checksum_alg
    elif isinstance(body, GtidSet):
        out["gtid_set"] = str(body)
    return out


def decoded_table(fields: dict[str, Any]) -> str:
    width = max(len(key) for key in fields) if fields else 0
    lines = []
    for key, value in fields.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if key.endswith("_commit_timestamp") and isinstance(value, int):
            text = (
                f"{value} ({timestamp_text(value) or 'out of range'})" if value else "0 (unknown)"
            )
        elif key == "timestamp":
            text = f"{value} ({timestamp_text(value * 1_000_000)})"
        lines.append(f"{key:<{width}}  {text}")
    return "\n".join(lines)


class Progress:
    """Progress on stderr, only when stderr is a terminal; at most 4 updates a second."""

    def __init__(self, stream: TextIO, *, enabled: bool) -> None:
        self._stream = stream
        self._enabled = enabled and stream.isatty()
        self._redraw = RateLimit(0.25)

    def __call__(self, path: Path, done: int, size: int) -> None:
        if not self._enabled:
            return
        if self._redraw.admit(time.monotonic()) is None and done < size:
            return
        share = f"{100 * done // size}%" if size else ""
        self._stream.write(f"\r\x1b[K{path.name}: {share} ({done >> 20} / {size >> 20} MiB)")
        self._stream.flush()

    def close(self) -> None:
        if self._enabled:
            self._stream.write("\r\x1b[K")
            self._stream.flush()


def _delay_text(trx: Transaction) -> str:
    delay = trx.hop_delay
    if delay is not None:
        return f"{delay / 1000:.3f} ms"
    return "unknown" if trx.event.immediate_commit_timestamp is not None else "-"


def transaction_row(trx: Transaction) -> dict[str, Any]:
    ev = trx.event
    return {
        "file": str(trx.file),
        "gtid": ev.gtid,
        "last_committed": ev.last_committed,
        "sequence_number": ev.sequence_number,
        "original_commit_timestamp": ev.original_commit_timestamp,
        "immediate_commit_timestamp": ev.immediate_commit_timestamp,
        "hop_delay_us": trx.hop_delay,
        "transaction_length": ev.transaction_length,
        "start": trx.start,
        "end": trx.end,
        "span": trx.span,
        "server_id": trx.server_id,
        "note": trx.note,
    }


def table_lines(transactions: Iterator[Transaction]) -> Iterator[str]:
    yield (
        f"{'GTID':<48} {'LAST_COMMITTED':>14} {'SEQUENCE':>10} {'ORIGINAL_COMMIT':<27} "
        f"{'IMMEDIATE_COMMIT':<27} {'HOP_DELAY':>14} {'LENGTH':>10} {'SPAN':<23} NOTE"
    )
    for trx in transactions:
        ev = trx.event
        original = (
            "0 (unknown)"
            if ev.original_commit_timestamp == 0
            else timestamp_text(ev.original_commit_timestamp)
        )
        yield (
            f"{ev.gtid:<48} {_opt(ev.last_committed):>14} {_opt(ev.sequence_number):>10} "
            f"{original or '-':<27} {timestamp_text(ev.immediate_commit_timestamp) or '-':<27} "
            f"{_delay_text(trx):>14} {_opt(ev.transaction_length):>10} "
            f"{f'{trx.start}-{trx.end}':<23} {trx.note}"
        ).rstrip()


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)


def summary_json(summary: Summary) -> str:
    def rows(which: str) -> list[dict[str, Any]]:
        return [
            {
                "key": s.key,
                "transactions": s.transactions,
                "with_delay": s.with_delay,
                "p50_us": s.p50,
                "p95_us": s.p95,
                "p99_us": s.p99,
                "max_us": s.max,
            }
            for s in summary.rows(which)
        ]

    document = {
        "transactions": summary.transactions,
        "original_unknown": summary.original_unknown,
        "no_timestamps": summary.no_timestamps,
        "by_source": rows("source"),
        "by_minute": rows("minute"),
    }
    return json.dumps(document, indent=2)


def _ms(value: int | None) -> str:
    return "-" if value is None else f"{value / 1000:.3f}"


def summary_table(summary: Summary) -> str:
    lines = [
        f"transactions: {summary.transactions}  "
        f"original unknown (pre-8.0.1 source): {summary.original_unknown}  "
        f"no timestamps (pre-8.0.1 writer): {summary.no_timestamps}",
        "",
    ]
    for which, title in (("source", "SOURCE"), ("minute", "MINUTE (UTC)")):
        stats: list[DelayStats] = summary.rows(which)
        lines.append(
            f"{title:<48} {'TRX':>8} {'DELAYED':>8} {'P50_MS':>10} {'P95_MS':>10} "
            f"{'P99_MS':>10} {'MAX_MS':>10}"
        )
        for s in stats:
            lines.append(
                f"{s.key:<48} {s.transactions:>8} {s.with_delay:>8} {_ms(s.p50):>10} "
                f"{_ms(s.p95):>10} {_ms(s.p99):>10} {_ms(s.max):>10}"
            )
        lines.append("")
    return "\n".join(lines).rstrip()
