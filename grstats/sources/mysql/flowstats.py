"""The server's own flow-control figures (Gr_flow_control_throttle_*): the mysql source's part.

Strategy / invariants
---------------------
Pure: the SQL text and rows -> `ServerFlowControl`, no driver, no I/O.

- MySQL 8.0.39+/8.4/9.x with the group_replication_flow_control_stats
  component registers four global status variables; they are read in one
  query of performance_schema.global_status. The names are listed with IN,
  not matched with LIKE 'Gr\\_flow...': under sql_mode NO_BACKSLASH_ESCAPES the
  backslash is no LIKE escape, and an unescaped '_' matches any character.
- What the server counts (plugin flow-control metrics service,
  group_replication_flow_control_metrics_service.h): only the member whose
  own transactions were held counts, and the figures restart with Group
  Replication. THROTTLE_COUNT is transactions held; THROTTLE_TIME_SUM is the
  sum over held transactions of their hold time, in MICROSECONDS (the
  service's get_throttle_time_sum, "time in microseconds of transactions
  throttled"): two sessions held for one second add 2_000_000, so it is not
  the wall time the member was throttled. THROTTLE_ACTIVE_COUNT is
  transactions held right now (a gauge). The last throttle timestamp is
  'YYYY-MM-DD HH:MM:SS.ffffff' in UTC (microseconds_to_datetime_str with
  my_tz_UTC), empty before the first hold; it is shown verbatim.
- A server without the component shows none of them: None (the table shows
  NULL), never an error. A server showing the counters with an odd value
  (not a non-negative integer) is treated the same: one odd cell must not
  invent a figure. A timestamp that is not of MySQL's shape is shown as ""
  (it would reach a terminal).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from grstats.core import columns as col
from grstats.core.sample import ServerFlowControl

__all__ = ["SQL_FLOW_STATS", "VARIABLES", "build_server_flow_control"]

COUNT: Final = "Gr_flow_control_throttle_count"
TIME_SUM: Final = "Gr_flow_control_throttle_time_sum"
ACTIVE_COUNT: Final = "Gr_flow_control_throttle_active_count"
LAST_THROTTLE: Final = "Gr_flow_control_throttle_last_throttle_timestamp"
VARIABLES: Final = (COUNT, TIME_SUM, ACTIVE_COUNT, LAST_THROTTLE)

SQL_FLOW_STATS: Final = (
    f"SELECT {col.VARIABLE_NAME}, {col.VARIABLE_VALUE} FROM performance_schema.global_status"
    f" WHERE {col.VARIABLE_NAME} IN (" + ", ".join(f"'{name}'" for name in VARIABLES) + ")"
)

_MAX = (1 << 64) - 1  # SHOW_LONGLONG of an uint64_t
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?")


def status_text(value: Any) -> str:
    """A global_status VARIABLE_VALUE as text (bytes decoded, NULL as "")."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def status_count(value: Any) -> int | None:
    """A global_status counter (an uint64_t as MySQL prints it); None when it is not one."""
    text = status_text(value).strip()
    if not text.isascii() or not text.isdigit():
        return None
    number = int(text)
    return number if number <= _MAX else None


def status_by_name(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """global_status rows as lower-cased VARIABLE_NAME -> VARIABLE_VALUE."""
    return {status_text(r.get(col.VARIABLE_NAME)).lower(): r.get(col.VARIABLE_VALUE) for r in rows}


def build_server_flow_control(rows: Sequence[Mapping[str, Any]]) -> ServerFlowControl | None:
    """The four figures from global_status rows; None when the server lacks them.

    Args:
        rows: VARIABLE_NAME / VARIABLE_VALUE rows (names matched case-insensitively,
            as MySQL compares them).

    Returns:
        The figures, or None when any of the three counters is missing or odd.
    """
    by_name = status_by_name(rows)
    count = status_count(by_name.get(COUNT.lower()))
    time_sum = status_count(by_name.get(TIME_SUM.lower()))
    active = status_count(by_name.get(ACTIVE_COUNT.lower()))
    if count is None or time_sum is None or active is None:
        return None
    last = status_text(by_name.get(LAST_THROTTLE.lower())).strip()
    return ServerFlowControl(
        count=count,
        time_sum=time_sum,
        active_count=active,
        last_throttle=last if TIMESTAMP.fullmatch(last) else "",
    )
