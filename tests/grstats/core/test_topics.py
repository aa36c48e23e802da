"""core.topics: a `--bus` reader subscribes with the daemon's own filters."""

from __future__ import annotations

from grstats.core.topics import collector_filter, member_filter, reader_filter

GROUP = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def test_a_reader_of_one_group_subscribes_like_a_member_daemon() -> None:
    assert reader_filter("grstats/v1", GROUP) == member_filter("grstats/v1", GROUP)
    assert reader_filter("grstats/v1", GROUP) == f"grstats/v1/{GROUP}/+/+"


def test_a_reader_of_every_group_subscribes_like_a_collector() -> None:
    assert reader_filter("grstats/v1", None) == collector_filter("grstats/v1")
    assert reader_filter("grstats/v1", None) == "grstats/v1/+/+/+"


def test_a_trailing_slash_of_the_prefix_is_not_a_level() -> None:
    assert reader_filter("site/grstats/", None) == "site/grstats/+/+/+"
