"""core.sample: which member states take part in the group (MySQL's MEMBER_STATE values)."""

from __future__ import annotations

from grstats.core.sample import MEMBER_STATES, in_group


def test_online_and_recovering_are_in_the_group_the_rest_are_not() -> None:
    # replication_group_members.MEMBER_ROLE is set only for these two (MySQL
    # 8.0 manual, "replication_group_members Table"); they publish and count
    # for flow control
    assert [s for s in MEMBER_STATES if in_group(s)] == ["ONLINE", "RECOVERING"]
    assert not in_group("") and not in_group("online")
