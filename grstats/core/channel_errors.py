"""Channel error episodes: each member's channel thread errors, from first to last seen.

Strategy: MySQL keeps only the last error of each channel thread (receiver,
coordinator, each worker): its number, text and LAST_ERROR_TIMESTAMP. An
episode is one error number on one (member, channel, thread), from the first
LAST_ERROR_TIMESTAMP seen with it to the latest; each new timestamp is one
more failed try (a receiver that retries its connection writes a new one at
every attempt). The episode closes when the thread shows error 0 (or its row
goes), and a different number opens a new one. `observe` is idempotent: the
same rows seen twice (two snapshots of one tick) change nothing, so the
builder of `grstats_channel_errors` may call it on every snapshot.

Invariants: at most `MAX_KEYS` (member, channel, thread) are kept, the
refused ones counted (`refused`); time comes only from the rows'
timestamps, never from a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from grstats.core import columns as col
from grstats.core.lagrows import format_timestamp, parse_timestamp
from grstats.core.snapshot import Row

__all__ = ["MAX_KEYS", "ChannelErrorWatch", "Episode", "thread_of"]

MAX_KEYS = 4096  # 9 members x a few channels x a few threads, many times over
Key = tuple[str, str, str]  # member, channel, thread


def thread_of(table: str, row: Mapping[str, object]) -> str:
    """'receiver', 'coordinator' or 'worker <id>' for a row of one of the status tables."""
    if table == col.CONNECTION_STATUS.name:
        return "receiver"
    if table == col.APPLIER_STATUS_BY_COORDINATOR.name:
        return "coordinator"
    return f"worker {row.get(col.WORKER_ID)}"


@dataclass(slots=True)
class Episode:
    """One error on one channel thread of one member."""

    number: int
    message: str
    first_us: int
    last_us: int
    tries: int
    open: bool = True
    changes: int = 1  # new errors seen on this thread (episodes and tries), a counter


_STATUS_TABLES = (
    col.CONNECTION_STATUS.name,
    col.APPLIER_STATUS_BY_COORDINATOR.name,
    col.APPLIER_STATUS_BY_WORKER.name,
)


class ChannelErrorWatch:
    """The episodes of every member's channel threads, fed the status tables' rows."""

    def __init__(self) -> None:
        self.episodes: dict[Key, Episode] = {}
        self.refused = 0

    def observe(self, tables: Mapping[str, Iterable[Row]]) -> None:
        """Take the status tables' rows of one snapshot (table name -> rows)."""
        seen: set[Key] = set()
        for table in _STATUS_TABLES:
            for row in tables.get(table, ()):
                member, channel = str(row.get(col.MEMBER_ID)), str(row.get(col.CHANNEL_NAME))
                key = (member, channel, thread_of(table, row))
                seen.add(key)
                self._row(key, row)
        for key, episode in self.episodes.items():
            if episode.open and key not in seen:
                episode.open = False  # the row went (the recovery channel removed)

    def _row(self, key: Key, row: Row) -> None:
        number = row.get(col.LAST_ERROR_NUMBER)
        episode = self.episodes.get(key)
        if not isinstance(number, int) or number == 0:
            if episode is not None:
                episode.open = False
            return
        stamp = parse_timestamp(row.get(col.LAST_ERROR_TIMESTAMP))
        if stamp is None:
            return  # an error MySQL gave no time: nothing to date the episode by
        message = str(row.get(col.LAST_ERROR_MESSAGE) or "")
        if episode is None and len(self.episodes) >= MAX_KEYS:
            self.refused += 1
            return
        if episode is None or not episode.open or episode.number != number:
            changes = 1 if episode is None else episode.changes + 1
            self.episodes[key] = Episode(number, message, stamp, stamp, 1, True, changes)
        elif stamp != episode.last_us:
            episode.tries += 1
            episode.changes += 1
            episode.last_us = max(stamp, episode.last_us)
            episode.first_us = min(stamp, episode.first_us)
            episode.message = message

    def open_episode(self, member: str, channel: str, thread: str) -> Episode | None:
        """The open episode of one thread, or None."""
        episode = self.episodes.get((member, channel, thread))
        return episode if episode is not None and episode.open else None

    def rows(self) -> tuple[Row, ...]:
        """grstats_channel_errors: one row per thread that has shown an error, by key."""
        return tuple(
            {
                col.MEMBER_ID: member,
                col.CHANNEL_NAME: channel,
                col.CHANNEL_THREAD: thread,
                col.EPISODE_ERROR_NUMBER: e.number,
                col.EPISODE_ERROR_MESSAGE: e.message,
                col.ERROR_FIRST_SEEN: format_timestamp(e.first_us),
                col.ERROR_LAST_SEEN: format_timestamp(e.last_us),
                col.ERROR_TRIES: e.tries,
                col.ERROR_OPEN: int(e.open),
                col.ERROR_CHANGES: e.changes,
            }
            for (member, channel, thread), e in sorted(self.episodes.items())
        )
