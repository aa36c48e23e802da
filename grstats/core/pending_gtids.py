"""gtids envelopes waiting for their member's first stats message, bounded in bytes and time.

Strategy: the `gtids` topic carries a member's last flag-'1' envelope,
retained, so a late receiver can show every member's GTID columns at once;
one that arrives before the member's first stats message waits here. Only
what is applied later is kept (incarnation, seq, the two GTID sets), never
the envelope with its `ext`.

Invariants (the rule stated once):
- an entry expires `expire_after_us` after it arrived (the registry passes
  its `forget_after`: a live member's stats come every period, one silent
  that long would be forgotten anyway);
- the entries hold at most `max_bytes`: each is charged its GTID text plus
  `ENTRY_BYTES`; a newcomer past the bound is refused and counted, and an
  older copy for the same member is replaced, never added to;
- at most `max_entries` entries (the oldest goes first past it);
- `full()` -- health degraded -- from 90 % of the bound, or after a refusal
  until an entry leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

from grstats.core.admission import MemberKey
from protocol import PipelineStats

ENTRY_BYTES = 256  # charged per entry beyond its GTID text (key, ints, object overhead)


@dataclass(frozen=True, slots=True)
class PendingGtids:
    """What a waiting gtids envelope will apply."""

    incarnation: int
    seq: int
    committed: bytes  # transactions_committed_all_members
    last_conflict_free: bytes  # transaction_last_conflict_free
    received_us: int
    size: int  # bytes charged against the bound


class PendingGtidsTable:
    """The waiting gtids envelopes of remote members.

    Args:
        max_bytes: bound on the bytes charged to all entries.
        max_entries: bound on the number of entries.
        expire_after_us: how long an entry waits at most.
    """

    def __init__(self, *, max_bytes: int, max_entries: int, expire_after_us: int) -> None:
        self.max_bytes = max_bytes
        self._max_entries = max_entries
        self._expire_after_us = expire_after_us
        self._entries: dict[MemberKey, PendingGtids] = {}
        self.bytes = 0  # charged bytes held
        self.refused = 0  # newcomers refused at the byte bound
        self.expired = 0  # entries dropped after expire_after_us
        self._refusing = False  # the last entry offered was refused

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: MemberKey) -> PendingGtids | None:
        """The entry waiting for `key`, or None."""
        return self._entries.get(key)

    def hold(
        self, key: MemberKey, incarnation: int, seq: int, stats: PipelineStats, now_us: int
    ) -> bool:
        """Keep what `stats` will apply for `key`; False (counted) when the bound refuses it."""
        committed = stats.transactions_committed_all_members
        conflict_free = stats.transaction_last_conflict_free
        size = len(committed) + len(conflict_free) + ENTRY_BYTES
        self.pop(key)  # a newer copy replaces the older one
        self._refusing = self.bytes + size > self.max_bytes
        if self._refusing:
            self.refused += 1
            return False
        self._entries[key] = PendingGtids(incarnation, seq, committed, conflict_free, now_us, size)
        self.bytes += size
        while len(self._entries) > self._max_entries:
            self.pop(next(iter(self._entries)))
        return True

    def pop(self, key: MemberKey) -> PendingGtids | None:
        """Remove and return the entry of `key` (None when there is none)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size
            self._refusing = False  # room was made
        return entry

    def expire(self, now_us: int) -> None:
        """Drop the entries older than `expire_after_us` (counted)."""
        limit = self._expire_after_us
        stale = [k for k, e in self._entries.items() if now_us - e.received_us > limit]
        for key in stale:
            self.pop(key)
        self.expired += len(stale)

    def full(self) -> bool:
        """Whether newcomers are (about to be) refused: see the module docstring."""
        return self._refusing or 10 * self.bytes >= 9 * self.max_bytes
