"""@@gtid_executed and @@gtid_purged: the mysql source's part of `ext.gtids`.

Strategy / invariants
---------------------
Pure: the SQL text and one row -> `protocol.GtidState`, no driver, no I/O.

- Both are global system variables of every GTID-capable server (5.6+); the
  server prints a set with one UUID per line (``uuid:1-5,\\nuuid2:1-3``) and,
  from 8.4 on, tags (``uuid:1-5:tag:1-2``). The text is parsed with
  `protocol.GtidSet.parse` (MySQL's own grammar), so what is sent on the bus
  is the canonical print form.
- A value the parser refuses (it cannot come from a real server) gives None:
  the sample goes without its GTID state, counted by the caller, never a
  guessed set.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

from protocol import GtidSet, GtidState, ProtocolError

__all__ = ["GTID_VARIABLES", "build_gtid_state"]

# selected with the source's other variables, in one round trip (source.py)
GTID_VARIABLES: Final = "@@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged"


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("ascii", "replace")
    return "" if value is None else str(value)


@lru_cache(maxsize=4)
def _parse(text: str) -> GtidSet:
    # read every period; @@gtid_purged rarely changes, an idle server's
    # @@gtid_executed neither: an unchanged text is not parsed again
    return GtidSet.parse(text)


def build_gtid_state(row: Sequence[Any] | None, now_us: int) -> GtidState | None:
    """The state from the query's one row (executed, purged); None when unreadable."""
    if row is None or len(row) < 2:
        return None
    try:
        executed = _parse(_text(row[0]))
        purged = _parse(_text(row[1]))
    except ProtocolError:
        return None
    return GtidState(now_us, executed, purged)
