"""The source sections, [simulated] and [mysql]: parsed into the source's own settings.

Strategy: the settings types belong to their source modules
(`SimulationSettings`, `MySQLSettings`), which are imported only for the
source actually configured; their dataclass defaults are the defaults. Those
types raise ValueError("<field>: <reason>") (their documented contract);
`_key_error` turns that into a ConfigError naming the TOML key -- the one
place the field name is taken from a message.

The keys of [simulated] are derived from `SimulationSettings`' fields; a
section present but unused (the collector, or the other source kind) is only
checked for unknown keys.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

from grstats.config._reader import ConfigError, Spec, number, read_fields, read_secret, text
from grstats.config._reader import Section as _Section
from grstats.config._reader import show as _show

if TYPE_CHECKING:  # the source modules are imported only for the configured source
    from grstats.config._settings import MemberSettings
    from grstats.sources.mysql import MySQLSettings
    from grstats.sources.simulated.settings import SimulationSettings

__all__ = [
    "MYSQL_KEYS",
    "check_keys_only",
    "parse_mysql",
    "parse_simulated",
    "simulated_keys",
]

# [mysql]: the checks of MySQLSettings' fields (its defaults are the defaults);
# `password` comes from password_env / password_file.
_MYSQL_SPECS: dict[str, Spec] = {
    "dsn": text(),
    "poll_timeout": number(0.0, 86400.0),
    "connect_timeout": number(0.0, 86400.0),
    "offline_after": number(0.0, 86400.0),
    "retry_initial": number(0.0, 86400.0),
    "retry_max": number(0.0, 86400.0),
}
MYSQL_KEYS = (*_MYSQL_SPECS, "password_env", "password_file")

# SimulationSettings fields that are not [simulated] keys (they come from
# [member] and [flow_control]) or are named differently in the file.
_SIMULATED_NOT_KEYS = ("group", "hosts", "flow_control")
_SIMULATED_RENAMED = {"epoch_s": "epoch", "stop_at_s": "stop_at"}


def simulated_keys() -> tuple[str, ...]:
    """The [simulated] keys: SimulationSettings' fields, as the file names them."""
    from grstats.sources.simulated.settings import SimulationSettings  # noqa: PLC0415

    return tuple(
        _SIMULATED_RENAMED.get(f.name, f.name)
        for f in dataclasses.fields(SimulationSettings)
        if f.name not in _SIMULATED_NOT_KEYS
    )


def _key_error(
    section: _Section, exc: ValueError, keys: tuple[str, ...], fallback: str
) -> ConfigError:
    """A source settings' ValueError("<field>: <reason>") as a ConfigError on that key."""
    message = str(exc)
    key, sep, rest = message.partition(": ")
    key = _SIMULATED_RENAMED.get(key, key)
    if sep and key in keys:
        return section.fail(key, rest)
    return section.fail(fallback, message)


def check_keys_only(section: _Section, allowed: tuple[str, ...]) -> None:
    """Refuse keys not in `allowed` (a source section present but not used)."""
    for key in section.data:
        if key not in allowed:
            raise section.fail(key, "unknown key")


def parse_mysql(section: _Section) -> MySQLSettings:
    """[mysql] -> MySQLSettings (imports the MySQL source: asyncmy only when used)."""
    from grstats.sources.mysql import MySQLSettings  # noqa: PLC0415 - asyncmy only when used

    kwargs = read_fields(section, MySQLSettings, _MYSQL_SPECS)
    kwargs["password"] = read_secret(section, "password_env", "password_file") or ""
    section.check_unknown()
    try:
        return MySQLSettings(**kwargs)
    except ValueError as exc:
        raise _key_error(section, exc, MYSQL_KEYS, "dsn") from None


def _timestamp(section: _Section, key: str, value: Any) -> float:
    """Absolute time: Unix seconds (number) or a TOML offset date-time."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise section.fail(key, "a date-time needs an offset (e.g. 2026-01-01T10:00:00Z)")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise section.fail(key, f"expected Unix seconds or an offset date-time, got {_show(value)}")
    return float(value)


def _parse_script(section: _Section) -> tuple[Any, ...]:
    from grstats.sources.simulated.settings import (  # noqa: PLC0415 - numpy only when used
        ACTIONS,
        ScriptEvent,
    )

    raw = section.raw("script")
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise section.fail("script", "expected an array of tables ([[simulated.script]])")
    events = []
    for index, entry in enumerate(raw):
        item = _Section(section.file, f"simulated.script[{index}]", entry)
        if "at" not in entry:
            raise item.fail("at", "required")
        at_s = _timestamp(item, "at", item.raw("at"))
        member = item.string("member", "").lower()
        if not member:
            raise item.fail("member", "required")
        action = item.string(
            "action",
            "",
            choices=ACTIONS,
        )
        events.append(
            ScriptEvent(
                at_s=at_s,
                member=member,
                action=action,
                count=item.integer("count", 1, 1, 1_000_000_000),
                duration_s=item.number("duration", 0.0, 0.0, 86400.0 * 365),
                state=item.string("state", "ONLINE"),
                level=item.string("level", "").upper(),
                donor=item.string("donor", "").lower(),
            )
        )
        item.check_unknown()
    return tuple(events)


MAX_SIMULATED_MEMBERS = 64  # the registry's default max_members_per_group


def _parse_simulated(section: _Section, member: MemberSettings) -> SimulationSettings:
    from grstats.sources.simulated.settings import SimulationSettings  # noqa: PLC0415 - numpy only when used

    members_raw = section.raw("members")
    if members_raw is None:
        members: tuple[str, ...] = (member.id,) if member.id else ()
    elif isinstance(members_raw, list) and all(isinstance(m, str) for m in members_raw):
        members = tuple(m.lower() for m in members_raw)
    else:
        raise section.fail(
            "members", f"expected an array of UUID strings, got {_show(members_raw)}"
        )
    if len(members) > MAX_SIMULATED_MEMBERS:  # the model steps every one each tick
        raise section.fail(
            "members",
            f"{len(members)} members: at most {MAX_SIMULATED_MEMBERS} (Group Replication allows 9)",
        )
    if member.id and member.id not in members:
        raise section.fail("members", f"must include member.id ({member.id})")
    hot_raw = section.raw("hot_hours")
    if hot_raw is not None and (
        not isinstance(hot_raw, list)
        or not all(isinstance(h, int) and not isinstance(h, bool) for h in hot_raw)
    ):
        raise section.fail(
            "hot_hours", f"expected an array of UTC hours 0-23, got {_show(hot_raw)}"
        )
    kwargs: dict[str, Any] = {
        "group": member.group or "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
        "members": members,
        "seed": section.integer("seed", 1, 0, (1 << 63) - 1),
        "mode": section.string(
            "mode", "multi-primary", choices=("multi-primary", "single-primary")
        ),
        "write_rate": section.number("write_rate", 20.0, 0.0, 1e6),
        "conflict_probability": section.number("conflict_probability", 0.01, 0.0, 1.0),
        "hot_factor": section.number("hot_factor", 3.0, 0.001, 1000.0),
        "weekend_factor": section.number("weekend_factor", 0.6, 0.001, 1000.0),
        "version": section.string("version", "8.4.3"),
        "scripted": section.boolean("scripted", False),
        "script": _parse_script(section),
        "hosts": {member.id: (member.host, member.port)} if member.id else {},
    }
    if hot_raw is not None:
        kwargs["hot_hours"] = tuple(hot_raw)
    slow = section.optional_string("slow_member")
    if slow is not None:
        kwargs["slow_member"] = slow.lower()
    slow_link = section.optional_string("slow_link_member")
    if slow_link is not None:
        kwargs["slow_link_member"] = slow_link.lower()
    for key in ("link_latency_ms", "slow_link_ms"):
        if section.raw(key) is not None:
            kwargs[key] = section.number(key, 0.5, 0.0, 60_000.0)
    for key in ("slow_capacity", "applier_capacity"):
        if section.raw(key) is not None:
            kwargs[key] = section.number(key, 1.0, 1e-9, 1e12)
    if section.raw("stop_at") is not None:
        kwargs["stop_at_s"] = _timestamp(section, "stop_at", section.raw("stop_at"))
    if section.raw("epoch") is not None:
        kwargs["epoch_s"] = int(_timestamp(section, "epoch", section.raw("epoch")))
    section.check_unknown()
    if not members:
        raise section.fail("members", "at least one member is required")
    try:
        return SimulationSettings(**kwargs)
    except ValueError as exc:
        raise _key_error(section, exc, simulated_keys(), "members") from None


parse_simulated = _parse_simulated
