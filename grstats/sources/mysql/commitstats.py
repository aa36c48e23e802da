"""The server's commit-path figures (Group Replication's Gr_* status variables).

Strategy / invariants
---------------------
Pure: the SQL text and rows -> `CommitPathCounters`, no driver, no I/O.

- MySQL 8.1.0+ (so 8.4 LTS and 9.x) registers these with the GR plugin
  (WL#15506; plugin_status_variables.h, metrics_handler.h in
  mysql/mysql-server): consensus proposals and their summed time, empty and
  extended rounds, consensus bytes, control/data messages with bytes and
  round-trip time sums, the three consistency waits (count and time sum),
  certification GC runs and time sum, and the last consensus end timestamp.
  Every *_time_sum is in microseconds; every value is an uint64 shown as text.
- ONE query of performance_schema.global_status reads these and the
  Gr_flow_control_throttle_* rows of flowstats.py (an IN list, never LIKE:
  see flowstats.py for why). The rows serve both builders.
- A server without them (8.0, GR plugin not loaded) shows no rows: every
  figure None, no error. An odd cell (not a non-negative integer below 2^64)
  is None on its own; the other figures stay.
- performance_schema.replication_group_communication_information (the GR
  plugin's own table, 8.0.23+: plugin/group_replication/src/perfschema/
  table_communication_information.cc) is read with SELECT * and its columns
  taken by name, as its shape grew: 4 columns in 8.0.23-8.0.26,
  WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE from 8.0.27, a sixth (member failure
  suspicions, not read) later. No table (GR not loaded, before 8.0.23) or no
  row (the plugin not running: its rnd_next ends the scan) -> None, no error.
  The leaders are member UUIDs joined by ","; an odd cell is None on its own.
- The last consensus end timestamp is 'YYYY-MM-DD hh:mm:ss.ffffff' in UTC
  (as the flow-control one), "" before the first round: kept as µs since the
  epoch, None when empty or odd.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from grstats.core import columns as col
from grstats.sources.mysql import flowstats
from protocol import CommitPathCounters, GroupCommunication
from protocol.commit_path_comm import MAX_LEADERS, MAX_VERSION_CHARS, MAX_WRITE_CONCURRENCY

__all__ = [
    "SQL_COMMUNICATION",
    "SQL_GR_STATUS",
    "VARIABLES",
    "build_commit_path",
    "build_communication",
]

#: CommitPathCounters field -> MySQL's status variable (in the dataclass's order).
VARIABLE_OF: Final = {
    "consensus_proposals": "Gr_all_consensus_proposals_count",
    "consensus_time_us": "Gr_all_consensus_time_sum",
    "empty_proposals": "Gr_empty_consensus_proposals_count",
    "extended_rounds": "Gr_extended_consensus_count",
    "consensus_bytes_sent": "Gr_consensus_bytes_sent_sum",
    "consensus_bytes_received": "Gr_consensus_bytes_received_sum",
    "messages_sent": "Gr_total_messages_sent_count",
    "control_messages": "Gr_control_messages_sent_count",
    "control_bytes": "Gr_control_messages_sent_bytes_sum",
    "control_rtt_us": "Gr_control_messages_sent_roundtrip_time_sum",
    "data_messages": "Gr_data_messages_sent_count",
    "data_bytes": "Gr_data_messages_sent_bytes_sum",
    "data_rtt_us": "Gr_data_messages_sent_roundtrip_time_sum",
    "before_begin": "Gr_transactions_consistency_before_begin_count",
    "before_begin_us": "Gr_transactions_consistency_before_begin_time_sum",
    "after_termination": "Gr_transactions_consistency_after_termination_count",
    "after_termination_us": "Gr_transactions_consistency_after_termination_time_sum",
    "after_sync": "Gr_transactions_consistency_after_sync_count",
    "after_sync_us": "Gr_transactions_consistency_after_sync_time_sum",
    "gc_runs": "Gr_certification_garbage_collector_count",
    "gc_time_us": "Gr_certification_garbage_collector_time_sum",
    "throttled": flowstats.COUNT,
    "throttled_us": flowstats.TIME_SUM,
}
LAST_CONSENSUS_END: Final = "Gr_last_consensus_end_timestamp"
VARIABLES: Final = (*VARIABLE_OF.values(), LAST_CONSENSUS_END)

#: Every Gr_* row grstats reads, in one query (the flow-control figures too).
SQL_GR_STATUS: Final = (
    f"SELECT {col.VARIABLE_NAME}, {col.VARIABLE_VALUE} FROM performance_schema.global_status"
    f" WHERE {col.VARIABLE_NAME} IN ("
    + ", ".join(f"'{n}'" for n in dict.fromkeys((*VARIABLES, *flowstats.VARIABLES)))
    + ")"
)


def _timestamp_us(value: Any) -> int | None:
    text = flowstats.status_text(value).strip()
    if not flowstats.TIMESTAMP.fullmatch(text):
        return None
    shown = datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=UTC)
    us = (shown - datetime(1970, 1, 1, tzinfo=UTC)) // _ONE_US
    return us if us > 0 else None


_ONE_US = datetime(1970, 1, 1, 0, 0, 0, 1) - datetime(1970, 1, 1)


def build_commit_path(rows: Sequence[Mapping[str, Any]]) -> CommitPathCounters:
    """The commit-path figures from global_status rows; a figure not shown is None.

    Args:
        rows: VARIABLE_NAME / VARIABLE_VALUE rows (names matched case-insensitively,
            as MySQL compares them).

    Returns:
        The counters (`shown()` False when the server showed none of them).
    """
    by_name = flowstats.status_by_name(rows)
    count = flowstats.status_count
    figures = {f: count(by_name.get(name.lower())) for f, name in VARIABLE_OF.items()}
    last = _timestamp_us(by_name.get(LAST_CONSENSUS_END.lower()))
    return CommitPathCounters(**figures, last_consensus_end_us=last)


SQL_COMMUNICATION: Final = (
    "SELECT * FROM performance_schema.replication_group_communication_information"
)
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_VERSION: Final = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){1,2}")


def _leaders(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    text = flowstats.status_text(value).strip()
    if not text:
        return ()  # no leader found in the member list (a view change in flight)
    leaders = tuple(u.strip().lower() for u in text.split(","))
    if len(leaders) > MAX_LEADERS or not all(_UUID.fullmatch(u) for u in leaders):
        return None
    return leaders


def _protocol(value: Any) -> str | None:
    if value is None:
        return None
    text = flowstats.status_text(value).strip()
    return text if len(text) <= MAX_VERSION_CHARS and _VERSION.fullmatch(text) else None


def build_communication(rows: Sequence[Mapping[str, Any]]) -> GroupCommunication | None:
    """replication_group_communication_information's one row -> `GroupCommunication`.

    Args:
        rows: its rows (SELECT *: every column of the server's version, by name).

    Returns:
        The row's values, a column the server does not have or an odd cell None;
        None when there is no row.
    """
    if not rows:
        return None
    row = {str(k).upper(): v for k, v in rows[0].items()}
    concurrency = flowstats.status_count(row.get("WRITE_CONCURRENCY"))
    if concurrency is not None and concurrency > MAX_WRITE_CONCURRENCY:
        concurrency = None
    single = flowstats.status_count(row.get("WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE"))
    return GroupCommunication(
        write_concurrency=concurrency,
        protocol_version=_protocol(row.get("PROTOCOL_VERSION")),
        leaders_preferred=_leaders(row.get("WRITE_CONSENSUS_LEADERS_PREFERRED")),
        leaders_actual=_leaders(row.get("WRITE_CONSENSUS_LEADERS_ACTUAL")),
        single_leader_capable=None if single not in (0, 1) else bool(single),
    )
