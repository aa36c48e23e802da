"""The channel between the daemon and its SQL child process: versioned, bounded msgpack frames.

Strategy: a frame is a 4-byte big-endian body length and a msgpack map with
the format version (`v`) and a `kind`: "config" (daemon -> child, once, the
endpoint's settings), "snapshot" (daemon -> child, once per period, the live
tables) and "figures" (child -> daemon, the endpoint's counters). The codec
here owns no process: bytes in, values out; `read_frame` is the one helper
over an asyncio stream.

Invariants: a reader never holds more than its byte cap of one frame: a
longer frame is read past in chunks (the stream stays in step) and refused;
every refusal is a `ChannelError` whose `reason` is one of REFUSALS, so the
receiver counts it and goes on. Only the declared tables and columns of
`core.columns` travel, as lists in declaration order; a cell is a string,
an integer, a float or NULL, anything else is malformed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack

from grstats.core import columns
from grstats.core.snapshot import DAEMON_SQL_FIELDS, DaemonSnapshot, Row, SqlFigures, with_tables
from grstats.sql.options import SqlOptions

VERSION = 1
HEADER = struct.Struct(">I")
# why a frame was refused: over the byte cap, another format version, not a
# frame of this format, a value msgpack cannot carry (sender side)
REFUSALS = ("too_large", "version", "malformed", "unencodable")
_SKIP_CHUNK = 1 << 16


def _declared() -> dict[str, tuple[str, ...]]:
    """table name -> its column names, every declared table (read at call time)."""
    return {t.name: t.names for t in columns.TABLES}


_CELL = (str, int, float, type(None))


class ChannelError(Exception):
    """A frame refused; `reason` is one of REFUSALS."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def encode_frame(message: Mapping[str, Any], max_bytes: int) -> bytes:
    """One frame: header and msgpack body (the version key added).

    Raises:
        ChannelError: "unencodable" (a value msgpack cannot carry) or
            "too_large" (the body is past `max_bytes`).
    """
    try:
        body: bytes = msgpack.packb({"v": VERSION, **message}, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ChannelError("unencodable", str(exc)) from None
    if len(body) > max_bytes:
        raise ChannelError("too_large", f"{len(body)} bytes > {max_bytes}")
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """A frame's body as a map with this format's version and a `kind`.

    Raises:
        ChannelError: "malformed" or "version".
    """
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except (ValueError, msgpack.UnpackException) as exc:
        raise ChannelError("malformed", str(exc)) from None
    if not isinstance(message, dict):
        raise ChannelError("malformed", "not a map")
    if message.get("v") != VERSION:
        raise ChannelError("version", f"version {message.get('v')!r}, expected {VERSION}")
    if not isinstance(message.get("kind"), str):
        raise ChannelError("malformed", "no kind")
    return message


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> dict[str, Any] | None:
    """The next frame's message, or None at the end of the stream.

    Raises:
        ChannelError: the frame was refused (the stream is past it).
    """
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError:
        return None
    (size,) = HEADER.unpack(header)
    if size > max_bytes:
        remaining = size
        while remaining:
            chunk = await reader.read(min(remaining, _SKIP_CHUNK))
            if not chunk:
                return None
            remaining -= len(chunk)
        raise ChannelError("too_large", f"{size} bytes > {max_bytes}")
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None
    return decode_body(body)


# -- snapshots ------------------------------------------------------------------


def snapshot_message(snapshot: DaemonSnapshot) -> dict[str, Any]:
    """The live tables of `snapshot` as a "snapshot" message (declared columns, in order)."""
    tables = {
        name: [[row.get(c) for c in names] for row in snapshot.table(name)]
        for name, names in _declared().items()
    }
    return {
        "kind": "snapshot",
        "taken_at_us": snapshot.taken_at_us,
        "group_name": snapshot.group_name,
        "local_member_id": snapshot.local_member_id,
        "tables": tables,
    }


def snapshot_from(message: Mapping[str, Any]) -> DaemonSnapshot:
    """The DaemonSnapshot a "snapshot" message carries (its tables only).

    A table this version does not declare is left out; a row must have one
    cell per declared column.

    Raises:
        ChannelError: "malformed".
    """
    taken, group, local = (message.get(k) for k in ("taken_at_us", "group_name", "local_member_id"))
    tables = message.get("tables")
    if not (isinstance(taken, int) and isinstance(group, str) and isinstance(local, str)):
        raise ChannelError("malformed", "snapshot header")
    if not isinstance(tables, dict):
        raise ChannelError("malformed", "snapshot tables")
    out: dict[str, tuple[Row, ...]] = {}
    for name, names in _declared().items():
        rows = tables.get(name, [])
        if not isinstance(rows, list):
            raise ChannelError("malformed", f"table {name}")
        for row in rows:
            if not (isinstance(row, list) and len(row) == len(names)):
                raise ChannelError("malformed", f"a row of {name}")
            if not all(isinstance(v, _CELL) for v in row):
                raise ChannelError("malformed", f"a cell of {name}")
        out[name] = tuple(dict(zip(names, row, strict=True)) for row in rows)
    snapshot = DaemonSnapshot(taken_at_us=taken, group_name=group, local_member_id=local)
    return with_tables(snapshot, out)


# -- figures --------------------------------------------------------------------


def figures_message(
    figures: SqlFigures, *, port: int, refused: Mapping[str, int]
) -> dict[str, Any]:
    """The child's "figures" message: its endpoint's figures, its port, its refused frames.

    Every SqlFigures field the child fills travels (a counter added there is
    forwarded without an edit here); maps go as [key, count] pairs.
    """
    message: dict[str, Any] = {"kind": "figures", "port": port}
    for name, kind in _CHILD_FIELDS.items():
        value = getattr(figures, name)
        message[name] = [[k, v] for k, v in value.items()] if kind == "map" else value
    message["snapshots_refused"] = [[k, v] for k, v in refused.items()]
    return message


def figures_from(message: Mapping[str, Any]) -> tuple[SqlFigures, int, dict[str, int]]:
    """(figures, port, snapshots refused by the child by reason) of a "figures" message.

    Raises:
        ChannelError: "malformed".
    """
    port = message.get("port")
    if not _count(port):
        raise ChannelError("malformed", "figures port")
    values: dict[str, Any] = {}
    for name, kind in _CHILD_FIELDS.items():
        value = message.get(name)
        if kind == "map":
            value = _counts(value, name)
        elif not _KIND_CHECK.get(kind, _scalar)(value):
            raise ChannelError("malformed", f"figures {name}")
        values[name] = value
    refused = _counts(message.get("snapshots_refused"), "snapshots_refused")
    figures = SqlFigures(**values)
    return figures, int(port), {str(k): v for k, v in refused.items()}  # type: ignore[arg-type]


def _field_kind(annotation: object) -> str:
    text = str(annotation)
    return "map" if text.startswith("Mapping") else text


_CHILD_FIELDS = {
    f.name: _field_kind(f.type)
    for f in dataclasses.fields(SqlFigures)
    if f.name not in DAEMON_SQL_FIELDS
}


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float)


_KIND_CHECK: dict[str, Callable[[object], bool]] = {
    "int": _count,
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
}


def _counts(value: object, name: str) -> dict[object, int]:
    """[key, count] pairs (keys strings or integers) as a map."""
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str | int) and _count(p[1])
        for p in value
    ):
        raise ChannelError("malformed", f"figures {name}")
    return dict(value)


# -- the child's settings --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChildConfig:
    """What the SQL child process is told once, in the "config" message.

    Attributes:
        options: the endpoint's settings (the password's hash included: the
            channel is a pipe between the two processes, never argv or env).
        max_snapshot_bytes: the largest snapshot frame the child takes.
        report_interval: seconds between two "figures" messages.
        max_address_space: the child's RLIMIT_AS in bytes (0: none).
        max_cpu_seconds: the child's RLIMIT_CPU in CPU seconds (0: none).
        nice: the child's scheduling niceness (the daemon keeps its own).
        log_level, log_format: the daemon's logging, for the child's lines.
        listen_fds: the daemon's listening sockets the child inherited (fd
            numbers; none: the child binds `options`' address itself).
        idle_stop: seconds without a client connection after which the child
            stops accepting and ends (0: it never does).
    """

    options: SqlOptions
    max_snapshot_bytes: int
    report_interval: float
    max_address_space: int = 0
    max_cpu_seconds: int = 0
    nice: int = 0
    log_level: str = "info"
    log_format: str = "json"
    listen_fds: tuple[int, ...] = ()
    idle_stop: float = 0.0


def config_message(config: ChildConfig) -> dict[str, Any]:
    """The "config" message of `config`."""
    message = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    message["options"] = dataclasses.asdict(config.options)
    return {"kind": "config", **message}


def config_from(message: Mapping[str, Any]) -> ChildConfig:
    """The ChildConfig of a "config" message.

    Raises:
        ChannelError: "malformed".
    """
    try:
        options = SqlOptions(**message["options"])
        values = {f.name: message[f.name] for f in dataclasses.fields(ChildConfig)}
    except (KeyError, TypeError) as exc:
        raise ChannelError("malformed", f"config: {exc}") from None
    fds = values["listen_fds"]
    if not (isinstance(fds, list | tuple) and all(_count(fd) for fd in fds)):
        raise ChannelError("malformed", "config: listen_fds")
    values["options"] = options
    values["listen_fds"] = tuple(fds)
    return ChildConfig(**values)
