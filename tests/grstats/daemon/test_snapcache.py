"""When the daemon's snapshot is rebuilt (grstats.daemon.snapcache), on a hand-driven clock.

Expected values follow the documented rule: a reader gets a snapshot at most
`max_age_s` old; a change of the tables alone rebuilds only for a `fresh`
request; a change of the bus connection rebuilds at once.
"""

from __future__ import annotations

from grstats.core.snapshot import DaemonSnapshot
from grstats.daemon.snapcache import SnapshotCache


def _cache() -> tuple[SnapshotCache, list[DaemonSnapshot]]:
    built: list[DaemonSnapshot] = []

    def build() -> DaemonSnapshot:
        built.append(DaemonSnapshot(taken_at_us=len(built), group_name="g", local_member_id=""))
        return built[-1]

    return SnapshotCache(build, max_age_s=0.25), built


def test_changed_tables_are_rebuilt_only_for_a_fresh_request_or_past_the_age_bound() -> None:
    cache, built = _cache()
    first = cache.get(version=1, connected=True, fresh=False, now=10.0)
    assert cache.get(version=2, connected=True, fresh=False, now=10.2) is first
    assert cache.get(version=3, connected=True, fresh=True, now=10.2) is built[1]
    assert cache.get(version=3, connected=True, fresh=False, now=10.5) is built[2]  # 0.3 s old
    assert len(built) == 3


def test_a_bus_that_goes_away_or_comes_back_is_seen_at_once() -> None:
    cache, built = _cache()
    cache.get(version=1, connected=True, fresh=False, now=10.0)
    lost = cache.get(version=1, connected=False, fresh=False, now=10.01)
    assert lost is built[1]
    assert cache.get(version=1, connected=True, fresh=False, now=10.02) is built[2]
    assert cache.get(version=1, connected=True, fresh=False, now=10.03) is built[2]


def test_after_want_fresh_the_next_reader_of_changed_tables_builds_once() -> None:
    # the tick without an SQL endpoint: no snapshot is built for nobody, the next reader's is fresh
    cache, built = _cache()
    first = cache.get(version=1, connected=True, fresh=False, now=10.0)
    cache.want_fresh()
    assert cache.get(version=1, connected=True, fresh=False, now=10.1) is first  # unchanged
    second = cache.get(version=2, connected=True, fresh=False, now=10.1)
    assert second is built[1]
    assert cache.get(version=3, connected=True, fresh=False, now=10.2) is second  # once only
    assert cache.builds == 2


def test_an_invalidated_snapshot_is_rebuilt_for_the_next_reader_whatever_its_age() -> None:
    # /healthz saw another health than the snapshot's: the next scrape must say it too
    cache, built = _cache()
    first = cache.get(version=1, connected=True, fresh=False, now=10.0)
    assert cache.current is first
    cache.invalidate()
    assert cache.get(version=1, connected=True, fresh=False, now=10.01) is built[1]
    assert cache.get(version=1, connected=True, fresh=False, now=10.02) is built[1]
