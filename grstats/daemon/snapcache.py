"""When the daemon's snapshot is rebuilt: readers under a flood share one.

Strategy: a reader (the API, the SQL feed, sd_notify's status) gets a snapshot
at most `max_age_s` old. Under a flood of envelopes the tables change with
every message, and rebuilding every table of every member for each request
cost a busy collector a fifth of its CPU; so a change of the tables alone
rebuilds only when the caller asks for a `fresh` one (the tick, its own sample
included, when it feeds the SQL endpoint) or after `want_fresh` (the tick
otherwise: the next reader builds it, none is built for nobody), while a
change of the bus connection rebuilds at once (readers see the bus go away or
come back without waiting for the age bound). /healthz reads no snapshot at
all (`core.snapshot.DaemonStatus`), but what it says the next reader sees too:
counters or a health other than the current snapshot's `invalidate` it (the
next reader of the tables builds one; a flood polled on /healthz alone builds
none).
`builds` counts the snapshots built.
"""

from __future__ import annotations

from collections.abc import Callable

from grstats.core.snapshot import DaemonSnapshot


class SnapshotCache:
    """The current snapshot, rebuilt by `build` when the rule above says so.

    Args:
        build: makes a new snapshot from the daemon's state now.
        max_age_s: the oldest snapshot a reader may get.
    """

    def __init__(self, build: Callable[[], DaemonSnapshot], max_age_s: float) -> None:
        self._build = build
        self.max_age_s = max_age_s
        self._snapshot: DaemonSnapshot | None = None
        self._key: tuple[int, bool] = (-1, False)
        self._at = 0.0
        self._fresh_due = False
        self.builds = 0  # snapshots built: every table of every member each

    @property
    def current(self) -> DaemonSnapshot | None:
        """The last snapshot built (None before the first)."""
        return self._snapshot

    def invalidate(self) -> None:
        """The next reader gets a snapshot built then, whatever its age and key."""
        self._at = float("-inf")

    def want_fresh(self) -> None:
        """The next reader of changed tables gets a fresh snapshot, as if it asked `fresh`."""
        self._fresh_due = True

    def get(self, *, version: int, connected: bool, fresh: bool, now: float) -> DaemonSnapshot:
        """The snapshot for tables at `version` and the bus `connected`, at monotonic `now`."""
        key = (version, connected)
        if (
            self._snapshot is None
            or now - self._at > self.max_age_s
            or (self._key != key and (fresh or self._fresh_due or self._key[1] != connected))
        ):
            self._snapshot = self._build()
            self.builds += 1
            self._fresh_due = False
            self._key = key
            self._at = now
        return self._snapshot
