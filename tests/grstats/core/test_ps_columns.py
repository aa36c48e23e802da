"""Which P_S column each Pipeline_stats field feeds comes from the column registry.

Expected values by hand from PROTOCOL.md section 4 (which P_S column of
replication_group_member_stats each message item feeds): the send timestamp,
the GTIDs-present flag and the flow-control mode are fields P_S does not show.
"""

from __future__ import annotations

import dataclasses

import protocol
from grstats.core import columns
from protocol import PipelineStats


def test_every_message_field_in_order_with_its_ps_column_or_none() -> None:
    fields = [f.name for f in dataclasses.fields(PipelineStats)]
    assert list(columns.PS_COLUMN_OF_FIELD) == fields
    assert columns.PS_COLUMN_OF_FIELD["transactions_waiting_certification"] == (
        "COUNT_TRANSACTIONS_IN_QUEUE"
    )
    assert columns.PS_COLUMN_OF_FIELD["transactions_local_rollback"] == (
        "COUNT_TRANSACTIONS_LOCAL_ROLLBACK"
    )
    shown_nowhere = [f for f, c in columns.PS_COLUMN_OF_FIELD.items() if c is None]
    assert shown_nowhere == ["transaction_gtids_present", "flow_control_mode", "sent_timestamp"]


def test_the_ps_columns_are_the_member_stats_columns_fed_by_a_field() -> None:
    fed = {c.name for c in columns.MEMBER_STATS.columns if c.item is not None}
    assert {c for c in columns.PS_COLUMN_OF_FIELD.values() if c} == fed


def test_the_protocol_keeps_no_copy_of_the_mapping() -> None:
    assert not hasattr(protocol, "PS_COLUMNS")
