"""`grstats binlog`: commit timestamps and hop delays out of binary and relay logs.

Strategy: one click group with two commands, `scan` (the default: `grstats
binlog FILE...` means `grstats binlog scan FILE...`) and `decode` (one event
from hex or a file). The group rewrites its arguments when the first one is
not a command name, which is all click needs for a default command. The
logic lives in `grstats.cli.binlog_scan` and `protocol.binlog`; this module only
parses options and prints.

Exit status: 0 done; 1 malformed input (MySQL's reason and the byte offset on
stderr); 2 the input could not be read or the arguments are wrong.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import click

from grstats.cli.binlog_scan import (
    DelayStats,
    ScanError,
    Summary,
    Transaction,
    parse_time,
    scan_files,
    timestamp_text,
)
from grstats.cli.rawinput import InputError, read_input
from protocol import (
    ANONYMOUS_GTID_LOG_EVENT,
    EVENT_TYPE_NAMES,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LOG_EVENT,
    GTID_TAGGED_LOG_EVENT,
    PREVIOUS_GTIDS_LOG_EVENT,
    DecodedEvent,
    FormatDescription,
    GtidEvent,
    GtidSet,
    ProtocolError,
    decode_body,
    decode_event,
)

_BODY_TYPES = {
    "gtid": GTID_LOG_EVENT,
    "anonymous_gtid": ANONYMOUS_GTID_LOG_EVENT,
    "gtid_tagged": GTID_TAGGED_LOG_EVENT,
    "format_description": FORMAT_DESCRIPTION_EVENT,
    "previous_gtids": PREVIOUS_GTIDS_LOG_EVENT,
}
_GTID_KEYS = (
    "last_committed",
    "sequence_number",
    "original_commit_timestamp",
    "immediate_commit_timestamp",
    "transaction_length",
    "original_server_version",
    "immediate_server_version",
    "commit_group_ticket",
)
_CSV_COLUMNS = (
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


class _DefaultScanGroup(click.Group):
    """A group whose arguments default to the `scan` command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["scan", *args]
        return super().parse_args(ctx, args)


@click.group(
    "binlog",
    cls=_DefaultScanGroup,
    epilog="""\b
Examples:
  grstats binlog relay-bin.000042 relay-bin.000043      # one row per transaction
  grstats binlog --summary --format json relay-bin.0000*
  grstats binlog --since 2026-11-23T10:00 --until 2026-11-23T11:00 binlog.000007
  grstats binlog decode 2f5a... --format json          # one event, hex
  grstats binlog decode --body-of gtid 0197c7af...      # a GTID event body alone

\b
`grstats binlog FILE...` is `grstats binlog scan FILE...`; a file named
like a command needs the explicit form or a path (./decode).""",
)
def binlog_group() -> None:
    """Commit timestamps and hop delays from MySQL binary and relay logs."""


def _body_type(text: str) -> int:
    key = text.lower().replace("-", "_")
    if key in _BODY_TYPES:
        return _BODY_TYPES[key]
    if key.isdigit():
        return int(key)
    raise InputError(
        f"--body-of: unknown event type {text!r} (one of {', '.join(_BODY_TYPES)} or a number)"
    )


def _decoded_fields(decoded: DecodedEvent) -> dict[str, Any]:
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
        for key in _GTID_KEYS:
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


def _decoded_table(fields: dict[str, Any]) -> str:
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


@binlog_group.command(
    "decode",
    epilog="""\b
Examples:
  grstats binlog decode 70d76a5f21010000004f0000...       # whole event, CRC32 auto-detected
  grstats binlog decode --checksum none --file event.bin
  grstats binlog decode --body-of gtid_tagged - < body.hex
  grstats binlog decode --format json 70d76a5f...""",
)
@click.argument("hex_text", metavar="[HEX | -]", nargs=-1)
@click.option(
    "--file",
    "-f",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Read raw bytes from this file.",
)
@click.option(
    "--checksum",
    type=click.Choice(["auto", "crc32", "none"]),
    default="auto",
    show_default=True,
    help="Whether the event ends in a CRC32 (auto: a trailing CRC32 that matches).",
)
@click.option(
    "--body-of",
    "body_of",
    metavar="TYPE",
    help=(
        "The bytes are a body only, of this event type (gtid, anonymous_gtid, "
        "gtid_tagged, format_description, previous_gtids or a number)."
    ),
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
)
def decode_command(
    hex_text: tuple[str, ...],
    file: Path | None,
    checksum: str,
    body_of: str | None,
    output_format: str,
) -> None:
    """Decode one binlog event: a whole event (common header first), or a body with --body-of."""
    try:
        data = read_input(hex_text, file)
        event_type = _body_type(body_of) if body_of is not None else None
    except InputError as exc:
        click.echo(f"grstats binlog decode: {exc}", err=True)
        sys.exit(2)
    try:
        if event_type is None:
            decoded = decode_event(data, checksum)
        else:
            decoded = DecodedEvent(None, None, decode_body(event_type, data))
    except ProtocolError as exc:
        click.echo(
            f"grstats binlog decode: malformed event ({len(data)} bytes): "
            f"{exc.reason} at offset {exc.offset}",
            err=True,
        )
        sys.exit(1)
    fields = _decoded_fields(decoded)
    if output_format == "json":
        click.echo(json.dumps(fields, indent=2))
    else:
        click.echo(_decoded_table(fields))


# --- scan --------------------------------------------------------------------------


class _Progress:
    """Progress on stderr, only when stderr is a terminal; at most 4 updates a second."""

    def __init__(self, stream: TextIO, *, enabled: bool) -> None:
        self._stream = stream
        self._enabled = enabled and stream.isatty()
        self._last = 0.0

    def __call__(self, path: Path, done: int, size: int) -> None:
        if not self._enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.25 and done < size:
            return
        self._last = now
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


def _row(trx: Transaction) -> dict[str, Any]:
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


def _table_lines(transactions: Iterator[Transaction]) -> Iterator[str]:
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


def _summary_json(summary: Summary) -> str:
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


def _summary_table(summary: Summary) -> str:
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


def _time_option(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise click.BadParameter(
            f"expected ISO 8601 time or µs since the epoch, got {value!r}", param_hint=name
        ) from None


@binlog_group.command(
    "scan",
    epilog="""\b
Examples:
  grstats binlog scan binlog.000001 binlog.000002
  grstats binlog relay-bin.000007 --format csv > hops.csv
  grstats binlog --summary relay-bin.0000*
  grstats binlog --summary --since 2026-11-23T10:00Z relay-bin.000007

\b
Hop delay = immediate - original commit timestamp (8.0.1+ writers). It is
"unknown" when the original is 0 (the source predates 8.0.1) and "-" when
the log has no commit timestamps at all (a 5.6/5.7 writer).
Times: ISO 8601 (UTC unless an offset is given) or µs since the epoch;
--since is inclusive, --until exclusive, on the immediate commit time.""",
)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="json: one object per line.",
)
@click.option(
    "--summary",
    is_flag=True,
    help="Hop-delay p50/p95/p99/max per originating server and per minute instead of rows.",
)
@click.option("--since", default=None, help="Only transactions committed at or after this time.")
@click.option("--until", default=None, help="Only transactions committed before this time.")
@click.option(
    "--checksum",
    type=click.Choice(["auto", "crc32", "none"]),
    default="auto",
    show_default=True,
    help="auto: as each format description event says.",
)
def scan_command(  # noqa: PLR0917 -- click passes every option positionally by name
    files: tuple[Path, ...],
    output_format: str,
    summary: bool,
    since: str | None,
    until: str | None,
    checksum: str,
) -> None:
    """One row per transaction of binary or relay logs FILE... (read in the order given)."""
    since_us = _time_option(since, "--since")
    until_us = _time_option(until, "--until")
    # Rows going to the same terminal would be overwritten by the progress line.
    progress = _Progress(sys.stderr, enabled=summary or not sys.stdout.isatty())
    transactions = scan_files(
        files, checksum=checksum, since=since_us, until=until_us, progress=progress
    )
    try:
        if summary:
            folded = Summary()
            for trx in transactions:
                folded.add(trx)
            progress.close()
            click.echo(_summary_json(folded) if output_format == "json" else _summary_table(folded))
        elif output_format == "json":
            for trx in transactions:
                click.echo(json.dumps(_row(trx)))
        elif output_format == "csv":
            writer = csv.DictWriter(sys.stdout, fieldnames=_CSV_COLUMNS, lineterminator="\n")
            writer.writeheader()
            for trx in transactions:
                writer.writerow({k: "" if v is None else v for k, v in _row(trx).items()})
        else:
            for line in _table_lines(transactions):
                click.echo(line)
    except ScanError as exc:
        progress.close()
        click.echo(f"grstats binlog: {exc}", err=True)
        sys.exit(2 if exc.unreadable else 1)
    progress.close()


command = binlog_group
