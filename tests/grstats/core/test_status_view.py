"""MemberTables.status_view: what /healthz shows, counted without building a row.

Expected member counts are counted by hand from MySQL's rule for
replication_group_members (the local member, every member heard from, and the
members only the local server's view shows; only the local member while it is
in no group).
"""

from __future__ import annotations

import dataclasses

from grstats.core.sample import ServerViewMember
from grstats.core.snapshot import MEMBERS_TABLE
from protocol import PipelineStats
from tests.fixtures.member_tables import (
    LOCAL,
    REMOTE,
    T0,
    THIRD,
    envelope,
    local_sample,
    make_tables,
    topic,
)

SERVER_ONLY = "44444444-4444-4444-4444-444444444444"


def _seen_by_server(member_id: str) -> ServerViewMember:
    member = dataclasses.replace(local_sample().member, member_id=member_id, host="10.0.0.4")
    return ServerViewMember(member, PipelineStats())


def test_members_are_the_local_one_those_heard_and_those_only_the_server_shows() -> None:
    tables = make_tables()
    view = tuple(_seen_by_server(m) for m in (LOCAL, REMOTE, SERVER_ONLY))
    sample = dataclasses.replace(local_sample(), server_view=view)
    tables.set_local(sample, incarnation=1, seq=1)
    for member in (REMOTE, THIRD):
        tables.receive(topic(member), envelope(member=member), T0)
    status = tables.status_view(T0)
    assert status.members == 4  # LOCAL, REMOTE, THIRD heard; SERVER_ONLY from the view
    assert status.gauges["members_known"] == 4.0
    assert status.counters.envelopes_accepted == 2
    # the same count the members table has (built only here)
    assert len(tables.snapshot(T0).table(MEMBERS_TABLE)) == 4


def test_a_member_in_no_group_counts_only_itself() -> None:
    tables = make_tables()
    tables.receive(topic(REMOTE), envelope(member=REMOTE), T0)
    tables.set_local(local_sample("OFFLINE"), incarnation=1, seq=1)
    assert tables.status_view(T0).members == 1


def test_a_collector_counts_every_member_of_every_group() -> None:
    tables = make_tables(group=None, local_member_id=None)
    tables.receive(topic(REMOTE), envelope(member=REMOTE), T0)
    tables.receive(topic(THIRD), envelope(member=THIRD), T0)
    assert tables.status_view(T0).members == 2
