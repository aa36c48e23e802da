"""The bus topics, named in one place: `<prefix>/<group>/<member>/<kind>`.

Strategy: the daemon builds topics with `topic()`, subscribes with
`member_filter()` / `collector_filter()` (a `--bus` reader with
`reader_filter()`), and every receiver (daemon,
collector, `--bus` readers) splits them with `parse_topic()`. The prefix may
itself hold '/', so topics are split from the right.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

STATS_KIND: Final = "stats"
STATUS_KIND: Final = "status"
GTIDS_KIND: Final = "gtids"

STATUS_ONLINE: Final = b"online"
STATUS_OFFLINE: Final = b"offline"

# server_uuid / group_replication_group_name: 8-4-4-4-12 hex digits.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def topic(prefix: str, group: str, member: str, kind: str) -> str:
    """The topic of one member's `kind` messages."""
    return f"{prefix}/{group}/{member}/{kind}"


def member_filter(prefix: str, group: str) -> str:
    """The subscription of a member daemon: every member of its group, every kind."""
    return f"{prefix}/{group}/+/+"


def collector_filter(prefix: str) -> str:
    """The subscription of a collector: every group on the bus."""
    return f"{prefix}/+/+/+"


def reader_filter(prefix: str, group: str | None) -> str:
    """The subscription of a `--bus` reader: one group's members, or every group (None).

    A trailing '/' of the prefix (as typed on a command line) is not a level.
    """
    prefix = prefix.rstrip("/")
    return collector_filter(prefix) if group is None else member_filter(prefix, group)


def parse_topic(name: str) -> tuple[str, str, str] | None:
    """Split `<prefix>/<group>/<member>/<kind>` from the right; the prefix may hold '/'.

    Args:
        name: an MQTT topic name.

    Returns:
        (group, member, kind), or None when the topic has fewer than four levels.
    """
    parts = name.rsplit("/", 3)
    if len(parts) != 4 or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2], parts[3]


def is_uuid(text: str) -> bool:
    """Whether `text` is a UUID as MySQL prints server_uuid and group names."""
    return len(text) == 36 and _is_uuid36(text)


# Every message's topic carries a group and a member id: a memo of the answers
# spares two regex matches per message. Bound: 4096 texts of 36 characters.
@lru_cache(maxsize=4096)
def _is_uuid36(text: str) -> bool:
    return _UUID.fullmatch(text) is not None
