"""`grstats decode`: show what a captured Pipeline_stats_member_message carries.

Strategy: read the raw bytes (hex argument, hex on stdin, or a binary file),
decode them with `protocol.decode_pipeline_stats` -- the same decoder the
daemon uses -- and print the header, every field, the performance_schema
column it feeds and, for negative counters, how P_S shows them.

Exit status: 0 decoded; 1 the bytes are a malformed message (MySQL's reason
and the byte offset go to stderr); 2 the input itself could not be read (bad
hex, unreadable file, conflicting arguments).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import click

from grstats.cli import render
from grstats.cli.rawinput import InputError, raw_input_options, read_input
from grstats.core.columns import PS_COLUMN_OF_FIELD
from protocol import (
    FLOW_CONTROL_DISABLED,
    FLOW_CONTROL_QUOTA,
    FixedHeader,
    PipelineStats,
    ProtocolError,
    as_ps_unsigned,
    decode_fixed_header,
    decode_pipeline_stats,
)

_STRING_FIELDS = ("transactions_committed_all_members", "transaction_last_conflict_free")
_CARGO_NAMES = {6: "pipeline stats"}
# a stats message with GTID sets of hundreds of thousands of intervals is a few MB
MAX_MESSAGE_BYTES = 16 << 20


def _string_value(raw: bytes) -> str:
    """GTID text as text when it is UTF-8, else as hex."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "hex:" + raw.hex()


def _timestamp_text(micros: int) -> str:
    try:
        moment = dt.datetime.fromtimestamp(micros / 1_000_000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _display_value(name: str, value: Any) -> str:
    if name in _STRING_FIELDS:
        return _string_value(value) if value else "(empty)"
    if name == "transaction_gtids_present":
        return "true ('1')" if value else "false"
    if name == "flow_control_mode":
        label = {FLOW_CONTROL_DISABLED: "DISABLED", FLOW_CONTROL_QUOTA: "QUOTA"}.get(value)
        return f"{value} ({label})" if label else f"{value} (unknown; not QUOTA)"
    if name == "sent_timestamp":
        if value is None:
            return "absent"
        when = _timestamp_text(value)
        return f"{value} ({when})" if when else str(value)
    if isinstance(value, int) and value < 0 and PS_COLUMN_OF_FIELD.get(name):
        return f"{value} (P_S shows {as_ps_unsigned(value)})"
    return str(value)


def _table(header: FixedHeader, stats: PipelineStats, size: int) -> str:
    rows: list[tuple[str, str, str]] = [
        ("header.version", "", str(header.version)),
        ("header.fixed_header_len", "", str(header.fixed_header_len)),
        ("header.message_len", "", str(header.message_len)),
        (
            "header.cargo_type",
            "",
            f"{header.cargo_type} ({_CARGO_NAMES.get(header.cargo_type, 'not stats')})",
        ),
        ("length", "", f"{size} bytes"),
    ]
    for name in PS_COLUMN_OF_FIELD:
        rows.append(
            (name, PS_COLUMN_OF_FIELD[name] or "", _display_value(name, getattr(stats, name)))
        )
    field_width = max(len(row[0]) for row in rows)
    column_width = max(len(row[1]) for row in rows)
    indent = " " * (field_width + column_width + 4)
    lines = [f"{'FIELD':<{field_width}}  {'P_S COLUMN':<{column_width}}  VALUE"]
    for field, column, value in rows:
        # captured bytes are untrusted: nothing in them may act on the terminal
        first, *rest = (render.visible(line) for line in value.split("\n"))
        lines.append(f"{field:<{field_width}}  {column:<{column_width}}  {first}")
        lines.extend(indent + line for line in rest)
    return "\n".join(lines)


def _json(header: FixedHeader, stats: PipelineStats, size: int) -> str:
    fields: dict[str, Any] = {}
    for name in PS_COLUMN_OF_FIELD:
        value = getattr(stats, name)
        if name in _STRING_FIELDS:
            # The golden vectors' convention: text when UTF-8, else a `_hex` key.
            try:
                fields[name] = value.decode("utf-8")
            except UnicodeDecodeError:
                fields[name + "_hex"] = value.hex()
        else:
            fields[name] = value
    performance_schema = {
        column: (
            as_ps_unsigned(getattr(stats, name))
            if name not in _STRING_FIELDS
            else _string_value(getattr(stats, name))
        )
        for name, column in PS_COLUMN_OF_FIELD.items()
        if column
    }
    document = {
        "header": {
            "version": header.version,
            "fixed_header_len": header.fixed_header_len,
            "message_len": header.message_len,
            "cargo_type": header.cargo_type,
        },
        "length": size,
        "fields": fields,
        "performance_schema": performance_schema,
    }
    return json.dumps(document, indent=2)


@click.command(
    "decode",
    epilog="""\b
Examples:
  grstats decode 01000000100010000000000000000600...
  grstats decode --format json - < capture.hex
  xxd -p capture.bin | grstats decode -
  grstats decode --file capture.bin

\b
Exit status: 0 decoded, 1 malformed message (reason and offset on stderr),
2 unreadable input.""",
)
@raw_input_options("Read the raw (binary) message from this file.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
def command(hex_text: tuple[str, ...], file: Path | None, output_format: str) -> None:
    """Decode one MySQL Group Replication stats message (cargo type 6).

    HEX is the raw plugin message in hex (spaces and colons are ignored); '-'
    reads the hex from stdin; --file reads the raw bytes. The decoder is
    MySQL's bounds-checked one: a message MySQL would drop is reported with
    MySQL's reason and the byte offset where decoding stopped.
    """
    try:
        data = read_input(hex_text, file, MAX_MESSAGE_BYTES)
    except InputError as exc:
        click.echo(f"grstats decode: {exc}", err=True)
        sys.exit(2)
    try:
        stats = decode_pipeline_stats(data)
        header = decode_fixed_header(data)
    except ProtocolError as exc:
        click.echo(
            f"grstats decode: malformed message ({len(data)} bytes): "
            f"{exc.reason} at offset {exc.offset}",
            err=True,
        )
        sys.exit(1)
    if output_format == "json":
        click.echo(_json(header, stats, len(data)))
    else:
        click.echo(_table(header, stats, len(data)))
