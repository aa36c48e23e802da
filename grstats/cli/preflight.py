"""`grstats check`'s checks: each one line, OK / WARN / FAIL, against the real things.

Strategy: a check is a small function returning `Check` rows; none raises
for what it finds (a failure is a row). Each works on the validated config
and touches the real component: the MySQL server through
grstats.sources.mysql.preflight, the broker through grstats.bus.probe, the
history directory by writing, fsyncing and removing a file, the `[sql]`
and `[api]` ports by binding them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grstats.bus.probe import round_trip
from grstats.config import ConfigError, Settings, load_config, read_toml
from grstats.core import topics
from grstats.sources.mysql import MySQLSettings
from grstats.sources.mysql.preflight import OPTIONAL_TABLES, PreflightError, inspect_server
from protocol import ProtocolError, decode_envelope

__all__ = ["FREE_FAIL_BYTES", "FREE_WARN_BYTES", "Check", "run_checks"]

OK, WARN, FAIL = "OK", "WARN", "FAIL"
FREE_FAIL_BYTES = 16 << 20  # below this the history cannot hold a day of one member
FREE_WARN_BYTES = 1 << 30
CLOCK_WARN_S = 1.0


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report."""

    name: str
    status: str
    detail: str


def run_checks(path: str) -> list[Check]:
    """Every check for the config file at `path`, in report order.

    Args:
        path: the grstats.toml to check.

    Returns:
        The rows; the config row first (FAIL there: nothing else is checked).
    """
    try:
        settings = load_config(path, require_member=_has_member(path))
    except ConfigError as exc:
        return [Check("config", FAIL, str(exc))]
    out = [Check("config", OK, f"{settings.path}: valid")]
    if isinstance(settings.source_settings, MySQLSettings):
        out += asyncio.run(_mysql(settings, settings.source_settings))
    out += asyncio.run(_bus(settings))
    out += _history(settings.history.dir)
    out += _port("api port", settings.api.host, settings.api.port)
    if settings.sql.enabled:
        out += _port("sql port", settings.sql.host, settings.sql.port)
    return out


def _has_member(path: str) -> bool:
    """A member daemon's config (has [member]); else a collector's (no local source)."""
    try:
        return "member" in read_toml(path)[1]  # bounded: a device or FIFO is refused unread
    except ConfigError:
        return True  # load_config reports the file's problem


async def _mysql(settings: Settings, mysql: MySQLSettings) -> list[Check]:
    try:
        facts, tables = await inspect_server(mysql)
    except PreflightError as exc:
        return [Check("mysql", FAIL, str(exc))]
    out = [
        Check("mysql", OK, f"{mysql.dsn}: MySQL {facts.version}, @@server_uuid {facts.server_uuid}")
    ]
    member = settings.member
    if member.id and member.id != facts.server_uuid:
        out.append(
            Check(
                "member id", FAIL, f"member.id {member.id} is not @@server_uuid {facts.server_uuid}"
            )
        )
    if facts.group_name is None:
        out.append(Check("group replication", WARN, "the plugin is not installed on this server"))
    elif member.group and facts.group_name and member.group != facts.group_name:
        out.append(
            Check("member group", FAIL, f"member.group {member.group} is not {facts.group_name}")
        )
    for access in tables:
        name = f"grant {access.table}"
        if access.status == "denied":
            out.append(
                Check(name, FAIL, f"missing: GRANT SELECT ON performance_schema.{access.table}")
            )
        elif access.status == "missing":
            level = OK if access.table in OPTIONAL_TABLES else WARN
            out.append(Check(name, level, "not on this server version"))
        else:
            out.append(Check(name, OK, "SELECT allowed"))
    return out


async def _bus(settings: Settings) -> list[Check]:
    bus = settings.bus
    where = f"{bus.host}:{bus.port}"
    member, group = settings.member.id, settings.member.group
    if not member or not group:
        return [Check("bus", WARN, f"{where}: no [member] group and id: write access not tested")]
    options = dataclasses.replace(bus, client_id=f"grstats-check-{secrets.token_hex(4)}")
    own = f"{bus.prefix.rstrip('/')}/{group}/{member}"
    watch = topics.topic(bus.prefix, group, "+", "stats")
    result = await round_trip(options, own, watch, listen=min(3.0, 2.5 * settings.publish.period))
    if result.error:
        return [Check("bus", FAIL, f"{where}: {result.error}")]
    out = [Check("bus", OK, f"{where}: connected as {bus.username or '(anonymous)'}")]
    if not result.echoed:
        out.append(Check("bus acl", FAIL, f"our test message under {own}/ did not come back: "
                         "the ACL denies writing there or reading it"))  # fmt: skip
        return out
    out.append(Check("bus acl", OK, f"wrote and read back {own}/check/..."))
    return [*out, _clock(result.received, member, settings.limits.max_clock_skew)]


def _clock(received: list[tuple[str, bytes, int]], member: str, max_skew_s: float) -> Check:
    offsets: dict[str, float] = {}
    for topic, payload, at_us in received:
        parsed = topics.parse_topic(topic)
        if parsed is None or parsed[1] == member:
            continue
        with contextlib.suppress(ProtocolError):
            envelope = decode_envelope(payload)
            offsets[parsed[1]] = (envelope.sent_us - at_us) / 1e6
    if not offsets:
        return Check("clock", WARN, "no other member on the bus to compare clocks with")
    worst_member, worst = max(offsets.items(), key=lambda kv: abs(kv[1]))
    detail = f"largest offset {worst:+.3f} s ({worst_member}) over {len(offsets)} member(s)"
    if abs(worst) > max_skew_s:
        return Check("clock", FAIL, f"{detail}: past limits.max_clock_skew {max_skew_s:g} s")
    return Check("clock", WARN if abs(worst) > CLOCK_WARN_S else OK, detail)


def _history(directory: str) -> list[Check]:
    if not directory:
        return [Check("history", OK, "disabled ([history] dir empty)")]
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".grstats-check-", dir=path)
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        return [Check("history", FAIL, f"{directory}: not writable: {exc.strerror or exc}")]
    free = shutil.disk_usage(path).free
    detail = f"{directory}: writable, {free / (1 << 20):.0f} MiB free"
    if free < FREE_FAIL_BYTES:
        return [Check("history", FAIL, f"{detail} (needs at least {FREE_FAIL_BYTES >> 20} MiB)")]
    if free < FREE_WARN_BYTES:
        return [Check("history", WARN, f"{detail} (under {FREE_WARN_BYTES >> 30} GiB)")]
    return [Check("history", OK, detail)]


def _port(name: str, host: str, port: int) -> list[Check]:
    if port == 0:
        return [Check(name, OK, f"{host}:0 (any free port)")]
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:
        return [Check(name, FAIL, f"{host}:{port}: {exc.strerror or exc}")]
    return [Check(name, OK, f"{host}:{port} free")]
