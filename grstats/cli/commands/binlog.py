"""`grstats binlog`: commit timestamps and hop delays out of binary and relay logs.

Strategy: one click group with two commands, `scan` (the default: `grstats
binlog FILE...` means `grstats binlog scan FILE...`) and `decode` (one event
from hex or a file). The group rewrites its arguments when the first one is
not a command name, which is all click needs for a default command. The
logic lives in `grstats.offline.binlog_scan` and `protocol.binlog`; this module only
parses options and prints.

Exit status: 0 done; 1 malformed input (MySQL's reason and the byte offset on
stderr); 2 the input could not be read or the arguments are wrong.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import click

from grstats.cli.binlogview import (
    CSV_COLUMNS,
    Progress,
    decoded_fields,
    decoded_table,
    summary_json,
    summary_table,
    table_lines,
    transaction_row,
)
from grstats.cli.rawinput import InputError, raw_input_options, read_input
from grstats.offline.binlog_scan import (
    ScanError,
    Summary,
    parse_time,
    scan_files,
)
from protocol import (
    ANONYMOUS_GTID_LOG_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LOG_EVENT,
    GTID_TAGGED_LOG_EVENT,
    PREVIOUS_GTIDS_LOG_EVENT,
    DecodedEvent,
    ProtocolError,
    decode_body,
    decode_event,
)

# one event; a Gtid_log_event is ~100 bytes, but a whole row event pasted by mistake
# may be large: refused past this, never read without end
MAX_EVENT_BYTES = 64 << 20
_BODY_TYPES = {
    "gtid": GTID_LOG_EVENT,
    "anonymous_gtid": ANONYMOUS_GTID_LOG_EVENT,
    "gtid_tagged": GTID_TAGGED_LOG_EVENT,
    "format_description": FORMAT_DESCRIPTION_EVENT,
    "previous_gtids": PREVIOUS_GTIDS_LOG_EVENT,
}


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


@binlog_group.command(
    "decode",
    epilog="""\b
Examples:
  grstats binlog decode 70d76a5f21010000004f0000...       # whole event, CRC32 auto-detected
  grstats binlog decode --checksum none --file event.bin
  grstats binlog decode --body-of gtid_tagged - < body.hex
  grstats binlog decode --format json 70d76a5f...""",
)
@raw_input_options("Read raw bytes from this file.")
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
        data = read_input(hex_text, file, MAX_EVENT_BYTES)
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
    fields = decoded_fields(decoded)
    if output_format == "json":
        click.echo(json.dumps(fields, indent=2))
    else:
        click.echo(decoded_table(fields))


# --- scan --------------------------------------------------------------------------


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
    progress = Progress(sys.stderr, enabled=summary or not sys.stdout.isatty())
    transactions = scan_files(
        files, checksum=checksum, since=since_us, until=until_us, progress=progress
    )
    try:
        if summary:
            folded = Summary()
            for trx in transactions:
                folded.add(trx)
            progress.close()
            click.echo(summary_json(folded) if output_format == "json" else summary_table(folded))
        elif output_format == "json":
            for trx in transactions:
                click.echo(json.dumps(transaction_row(trx)))
        elif output_format == "csv":
            writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, lineterminator="\n")
            writer.writeheader()
            for trx in transactions:
                writer.writerow(
                    {k: "" if v is None else v for k, v in transaction_row(trx).items()}
                )
        else:
            for line in table_lines(transactions):
                click.echo(line)
    except ScanError as exc:
        progress.close()
        click.echo(f"grstats binlog: {exc}", err=True)
        sys.exit(2 if exc.unreadable else 1)
    progress.close()


command = binlog_group
