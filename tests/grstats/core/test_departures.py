"""The departure records and tombstones: the first record stands, both bounded."""

from __future__ import annotations

from grstats.core.departures import Departures
from grstats.core.snapshot import Departed


def test_the_first_departure_record_stands() -> None:
    d = Departures(max_entries=4)
    d.record(("g", "m1"), "UNREACHABLE", 100)
    d.record(("g", "m1"), "OFFLINE", 200)  # the Will's offline after a silent departure
    assert d.departed() == (Departed("g", "m1", "UNREACHABLE", 100),)


def test_departures_are_listed_in_key_order_and_the_oldest_go_past_the_bound() -> None:
    d = Departures(max_entries=2)
    for member in ("m3", "m1", "m2"):
        d.record(("g", member), "ERROR", 1)
    assert [x.member_id for x in d.departed()] == ["m1", "m2"]  # m3 came first: gone


def test_tombstones_are_bounded_oldest_first() -> None:
    d = Departures(max_entries=2)
    for member in ("m1", "m2", "m3"):
        d.tombstone(("g", member))
    assert [d.tombstoned(("g", m)) for m in ("m1", "m2", "m3")] == [False, True, True]


def test_a_member_back_is_neither_departed_nor_tombstoned() -> None:
    d = Departures(max_entries=4)
    d.tombstone(("g", "m1"))
    d.record(("g", "m1"), "OFFLINE", 5)
    d.back(("g", "m1"))
    assert d.departed() == ()
    assert not d.tombstoned(("g", "m1"))


def test_online_lifts_the_tombstone_but_keeps_the_record() -> None:
    d = Departures(max_entries=4)
    d.tombstone(("g", "m1"))
    d.record(("g", "m1"), "OFFLINE", 5)
    d.untombstone(("g", "m1"))
    assert not d.tombstoned(("g", "m1"))
    assert d.departed() == (Departed("g", "m1", "OFFLINE", 5),)
