"""replication_group_member_lag in MemberTables: local sample, remote ext.lag, offsets, rejects."""

from __future__ import annotations

import dataclasses
from typing import Any

from grstats.core import columns as col
from grstats.core.lag import ChannelLag, MemberLag, StageTrx, encode_member_lag
from grstats.core.registry import OFFSET_WINDOW
from grstats.core.tables import Accepted
from tests.fixtures.member_lag import lag_envelope
from tests.fixtures.member_tables import (
    GROUP,
    LOCAL,
    REMOTE,
    T0,
    THIRD,
    local_sample,
    make_tables,
    online_tables,
    row_of,
    topic,
)

SRC = GROUP  # GR's GTIDs carry the group name
CHANNEL = ChannelLag(
    receiver_on=True,
    applier_on=True,
    last_queued=StageTrx(f"{SRC}:12", T0 - 1_000_000, T0 - 1_000_000, T0, T0 + 200_000),
    applying=StageTrx(f"{SRC}:11", T0 - 2_000_000, T0 - 2_000_000, T0, None),
    workers=4,
    busy_workers=1,
)


def good_lag(at_us: int = T0 + 1_250_000) -> Any:
    return encode_member_lag(MemberLag(at_us, (CHANNEL,)))


def test_a_remote_members_ext_lag_becomes_its_row() -> None:
    tables = online_tables()
    assert isinstance(tables.receive(topic(), lag_envelope(good_lag()), T0 + 10_000), Accepted)
    row = row_of(tables.snapshot(T0 + 5_000_000), REMOTE, "replication_group_member_lag")
    # read at T0+1.25 s on the member; applying committed at T0-2 s
    assert row[col.REPLICATION_LAG] == "00:00:03.250000"
    assert row[col.QUEUE_LAG_SECONDS] == 1.2  # T0+0.2 - (T0-1)
    assert row[col.LAST_QUEUED_TRANSACTION] == f"{SRC}:12"


def test_the_local_members_rows_come_from_its_sample() -> None:
    tables = make_tables()
    sample = dataclasses.replace(local_sample(), lag=(CHANNEL,))  # sampled at T0
    tables.set_local(sample, incarnation=1, seq=1)
    row = row_of(tables.snapshot(T0 + 9_000_000), LOCAL, "replication_group_member_lag")
    assert row[col.REPLICATION_LAG] == "00:00:02.000000"  # T0 - (T0-2 s), not the snapshot time
    assert row[col.CLOCK_OFFSET_SECONDS] == 0.0


def test_a_member_without_ext_lag_has_no_lag_rows() -> None:
    tables = online_tables()
    tables.receive(topic(), lag_envelope(None), T0)
    assert tables.snapshot(T0).table("replication_group_member_lag") == ()


def test_a_malformed_lag_section_still_applies_the_stats_and_is_counted() -> None:
    tables = online_tables()
    bad = [1, T0, [["group_replication_applier", True]]]  # a channel of 2 items
    result = tables.receive(topic(), lag_envelope(bad, transactions_certified=42), T0)
    assert isinstance(result, Accepted)
    assert "expected 11 items" in result.errors["lag"]
    snap = tables.snapshot(T0)
    assert row_of(snap, REMOTE)["COUNT_TRANSACTIONS_CHECKED"] == 42
    assert snap.table("replication_group_member_lag") == ()
    assert snap.counters.malformed["lag"] == 1
    assert snap.counters.envelopes_accepted == 1
    assert sum(snap.counters.rejected.values()) == 0


def test_a_malformed_section_clears_the_lag_shown_before() -> None:
    tables = online_tables()
    tables.receive(topic(), lag_envelope(good_lag()), T0)
    tables.receive(topic(), lag_envelope([9, T0, []], seq=2), T0 + 1_000_000)
    assert tables.snapshot(T0 + 1_000_000).table("replication_group_member_lag") == ()


def test_clock_offset_is_the_largest_send_minus_receive_in_the_window() -> None:
    tables = online_tables()
    # the member's clock runs 0.5 s ahead; one-way delays 30, 10, 20 ms
    for seq, delay_us in enumerate((30_000, 10_000, 20_000), start=1):
        sent = T0 + seq * 1_000_000
        tables.receive(
            topic(), lag_envelope(good_lag(), seq=seq, sent_us=sent), sent - 500_000 + delay_us
        )
    row = row_of(tables.snapshot(T0 + 4_000_000), REMOTE, "replication_group_member_lag")
    assert row[col.CLOCK_OFFSET_SECONDS] == 0.49  # 0.5 s minus the smallest delay
    # lags 3.25 s and 1.2 s exceed the 0.49 s spread to our clock
    assert row[col.LAG_WITHIN_CLOCK_OFFSET] == 0


def test_the_offset_window_forgets_old_envelopes() -> None:
    tables = online_tables()
    tables.receive(topic(), lag_envelope(good_lag(), seq=1, sent_us=T0 + 9_000_000), T0)
    for seq in range(2, OFFSET_WINDOW + 2):
        sent = T0 + seq * 1_000_000
        tables.receive(topic(), lag_envelope(good_lag(), seq=seq, sent_us=sent), sent)
    row = row_of(tables.snapshot(T0 + 70_000_000), REMOTE, "replication_group_member_lag")
    assert row[col.CLOCK_OFFSET_SECONDS] == 0.0  # the 9 s outlier left the window


def test_retained_copies_do_not_estimate_the_clock() -> None:
    tables = online_tables()
    tables.receive(topic(), lag_envelope(good_lag()), T0 + 30_000_000, retained=True)
    row = row_of(tables.snapshot(T0 + 30_000_000), REMOTE, "replication_group_member_lag")
    assert row[col.CLOCK_OFFSET_SECONDS] is None
    assert row[col.LAG_WITHIN_CLOCK_OFFSET] is None
    assert row[col.REPLICATION_LAG] == "00:00:03.250000"


def test_a_lag_the_group_clock_spread_could_explain_is_flagged() -> None:
    tables = online_tables()
    # REMOTE's clock 0.1 s behind ours, THIRD's 4 s ahead: REMOTE vs THIRD differ by 4.1 s
    tables.receive(topic(), lag_envelope(good_lag()), T0 + 100_000)
    tables.receive(topic(THIRD), lag_envelope(None, member=THIRD), T0 - 4_000_000)
    row = row_of(tables.snapshot(T0), REMOTE, "replication_group_member_lag")
    assert row[col.CLOCK_OFFSET_SECONDS] == -0.1
    assert row[col.LAG_WITHIN_CLOCK_OFFSET] == 1  # 3.25 s <= 4.1 s


def test_collector_shows_lag_of_every_member() -> None:
    tables = make_tables(group=None, local_member_id=None)
    tables.receive(topic(), lag_envelope(good_lag()), T0)
    tables.receive(topic(THIRD), lag_envelope(good_lag(), member=THIRD), T0)
    assert {
        r[col.MEMBER_ID] for r in tables.snapshot(T0).table("replication_group_member_lag")
    } == {REMOTE, THIRD}
