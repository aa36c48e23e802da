"""`grstats channels --explain`: why a member is not ONLINE, or which channel fails and how.

Strategy: a pure function of a snapshot's tables (replication_group_members,
the six channel tables, grstats_channel_errors) and the member labels
(core.labels): one sentence per member that is not ONLINE or has a channel
thread with an open error episode, with the numbers -- which source (for the
recovery channel: its donor) as host:port, which error with MySQL's symbol
and text (core.mysql_errors), since when and how many tries -- and what to
check. The CLI and the live page show the same text. A member that is ONLINE
with no channel error gets no sentence: a healthy group says nothing.

The source's host:port is the channel's HOST and PORT
(replication_connection_configuration); when the member keeps its
configuration tables off the bus, the one MySQL writes in a connection error
('user@host:port') is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from grstats.core import columns as col
from grstats.core.lagrows import parse_timestamp
from grstats.core.snapshot import Row
from protocol.humanize import duration
from protocol.mysql_errors import ERRORS, GR_RECOVERY_LOG, describe

__all__ = ["channel_overview", "explain_channels"]

_SOURCE_IN_TEXT = re.compile(r"source '[^@']*@([^']+)'")
_TRANSACTION_IN_TEXT = re.compile(r"transaction '([^']+)'")
_CHANNEL_ROLE = {
    col.GROUP_REPLICATION_CHANNEL: "applier channel",
    col.RECOVERY_CHANNEL: "recovery channel",
}


def _of(rows: Sequence[Row], member: str, channel: str | None = None) -> list[Row]:
    return [
        r
        for r in rows
        if r.get(col.MEMBER_ID) == member
        and (channel is None or r.get(col.CHANNEL_NAME) == channel)
    ]


def _source(tables: Mapping[str, Sequence[Row]], member: str, channel: str, text: str) -> str:
    """The channel's source as host:port ('' when neither table nor text tells)."""
    for row in _of(tables.get(col.CONNECTION_CONFIGURATION.name, ()), member, channel):
        host, port = row.get(col.HOST), row.get(col.PORT)
        if isinstance(host, str) and host and host != "<NULL>":
            return f"{host}:{port}" if port else host
    found = _SOURCE_IN_TEXT.search(text)
    return found.group(1) if found else ""


def _ago(stamp: object, now_us: int) -> str:
    us = parse_timestamp(stamp)
    return "at an unknown time" if us is None else f"{duration(max(0, now_us - us) / 1e6)} ago"


def _error_sentence(tables: Mapping[str, Sequence[Row]], episode: Row, now_us: int) -> str:
    member = str(episode.get(col.MEMBER_ID))
    channel = str(episode.get(col.CHANNEL_NAME))
    thread = str(episode.get(col.CHANNEL_THREAD))
    number = int(episode.get(col.EPISODE_ERROR_NUMBER) or 0)
    text = str(episode.get(col.EPISODE_ERROR_MESSAGE) or "")
    tries = episode.get(col.ERROR_TRIES)
    role = _CHANNEL_ROLE.get(channel, "channel")
    since = _ago(episode.get(col.ERROR_FIRST_SEEN), now_us)
    last = _ago(episode.get(col.ERROR_LAST_SEEN), now_us)
    known = ERRORS.get(number)
    check = f"; check {known.check}" if known is not None else "; check the member's error log"
    if thread == "receiver":
        source = _source(tables, member, channel, text)
        whom = "its donor" if channel == col.RECOVERY_CHANNEL else "its source"
        where = f"{whom} {source}" if source else whom
        what = f"its {role} ({channel}) cannot connect to {where}"
        if channel == col.RECOVERY_CHANNEL:
            gr = ", ".join(f"{name} (MY-{n:06d})" for n, name, _ in GR_RECOVERY_LOG)
            check += f" (GR logs {gr})"
    else:
        gtid = _TRANSACTION_IN_TEXT.search(text)
        on = f" on transaction {gtid.group(1)}" if gtid else ""
        what = f"the {thread} of its {role} ({channel}) stopped{on}"
    return (
        f"{what}: {describe(number)}, first seen {since}, {tries} "
        f'{"try" if tries == 1 else "tries"}, the last {last} (MySQL: "{text}"){check}'
    )


def explain_channels(
    tables: Mapping[str, Sequence[Row]], labels: Mapping[str, str], now_us: int
) -> list[str]:
    """One sentence per member that is not ONLINE or has a channel error; [] for a healthy group.

    Args:
        tables: a snapshot's tables by name (the members, the six channel
            tables, grstats_channel_errors).
        labels: MEMBER_ID -> host:port (core.labels.member_labels).
        now_us: the snapshot's time, µs since the epoch.

    Returns:
        The sentences, members in replication_group_members order.
    """
    episodes = [r for r in tables.get(col.CHANNEL_ERRORS.name, ()) if r.get(col.ERROR_OPEN)]
    out: list[str] = []
    for member_row in tables.get(col.MEMBERS.name, ()):
        member = str(member_row.get(col.MEMBER_ID) or "")
        state = str(member_row.get(col.MEMBER_STATE) or "")
        mine = _of(episodes, member)
        if state == "ONLINE" and not mine:
            continue
        label = labels.get(member) or member
        if mine:
            reasons = "; and ".join(_error_sentence(tables, e, now_us) for e in mine)
            out.append(f"{label} ({state}): {reasons}.")
        else:
            out.append(
                f"{label} is {state} and none of its channels shows an error: check its "
                "error log and `grstats members` for why it left or is not reachable."
            )
    return out


def channel_overview(tables: Mapping[str, Sequence[Row]], now_us: int) -> list[Row]:
    """grstats_channels: one row per member and channel, its newest open error, age and tries.

    Args:
        tables: a snapshot's tables by name (the channel tables, grstats_channel_errors).
        now_us: the snapshot's time.

    Returns:
        Rows of `columns.CHANNELS_OVERVIEW`, by member then channel as the tables list them.
    """
    episodes = [r for r in tables.get(col.CHANNEL_ERRORS.name, ()) if r.get(col.ERROR_OPEN)]
    applier = {
        (r.get(col.MEMBER_ID), r.get(col.CHANNEL_NAME)): r.get(col.SERVICE_STATE)
        for r in tables.get(col.APPLIER_STATUS.name, ())
    }
    out: list[Row] = []
    for row in tables.get(col.CONNECTION_STATUS.name, ()):
        member, channel = str(row.get(col.MEMBER_ID)), str(row.get(col.CHANNEL_NAME))
        mine = sorted(
            _of(episodes, member, channel),
            key=lambda e: str(e.get(col.ERROR_LAST_SEEN)),
            reverse=True,
        )
        worst = mine[0] if mine else None
        last = None if worst is None else parse_timestamp(worst.get(col.ERROR_LAST_SEEN))
        out.append(
            {
                col.MEMBER_ID: member,
                col.CHANNEL_NAME: channel,
                col.IO_STATE: row.get(col.SERVICE_STATE),
                col.SQL_STATE: applier.get((member, channel)),
                col.LAST_ERROR_NUMBER: None
                if worst is None
                else worst.get(col.EPISODE_ERROR_NUMBER),
                col.ERROR_AGE_SECONDS: None if last is None else max(0, now_us - last) / 1e6,
                col.ERROR_TRIES: None if worst is None else worst.get(col.ERROR_TRIES),
            }
        )
    return out
