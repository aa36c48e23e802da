"""The envelope's `ext.commit_path` section: where one member's commit time goes.

Wire form (version 1), a msgpack array, every position fixed::

    [1, at_us, [counter, ...]]      # exactly len(COUNTERS) counters

* `at_us`: when the sender read the figures, its own wall clock, µs since the
  epoch (UTC), 1..2^55.
* each counter is nil (the server does not show it: MySQL 8.0, or an odd
  value) or an integer 0..2^64-1, in the order of `COUNTERS`: MySQL's Gr_*
  status variables (WL#15506, 8.1.0+) and the two Gr_flow_control_throttle_*
  sums, as the server shows them: cumulative since Group Replication last
  started on that member, times in microseconds, sizes in bytes;
  `last_consensus_end_us` is Gr_last_consensus_end_timestamp as µs since the
  epoch.

The section is bounded by construction: a fixed count of fixed-size integers
(24 counters of at most 9 bytes each: under 230 bytes packed).

Compatibility: receivers ignore `ext` keys they do not know (DESIGN.md
section 3), so an older daemon accepts these envelopes. A version other than
1, or any other layout, is a `ProtocolError`: the receiver applies the
envelope's statistics anyway and counts the section as rejected.

Invariants: only `ProtocolError` leaves `decode_commit_path`; whatever
`encode_commit_path` returns, `decode_commit_path` accepts and returns equal;
the codec never reads the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Final, NoReturn

from protocol.errors import ProtocolError
from protocol.frozen import builder

COMMIT_PATH_VERSION: Final = 1
MAX_COUNTER: Final = (1 << 64) - 1
MAX_TIMESTAMP_US: Final = 1 << 55


@dataclass(frozen=True, slots=True)
class CommitPathCounters:
    """A member's cumulative commit-path counters; None where the server shows none.

    Each field names the MySQL status variable it carries.
    """

    consensus_proposals: int | None = None  # Gr_all_consensus_proposals_count
    consensus_time_us: int | None = None  # Gr_all_consensus_time_sum
    empty_proposals: int | None = None  # Gr_empty_consensus_proposals_count
    extended_rounds: int | None = None  # Gr_extended_consensus_count
    consensus_bytes_sent: int | None = None  # Gr_consensus_bytes_sent_sum
    consensus_bytes_received: int | None = None  # Gr_consensus_bytes_received_sum
    messages_sent: int | None = None  # Gr_total_messages_sent_count
    control_messages: int | None = None  # Gr_control_messages_sent_count
    control_bytes: int | None = None  # Gr_control_messages_sent_bytes_sum
    control_rtt_us: int | None = None  # Gr_control_messages_sent_roundtrip_time_sum
    data_messages: int | None = None  # Gr_data_messages_sent_count
    data_bytes: int | None = None  # Gr_data_messages_sent_bytes_sum
    data_rtt_us: int | None = None  # Gr_data_messages_sent_roundtrip_time_sum
    before_begin: int | None = None  # Gr_transactions_consistency_before_begin_count
    before_begin_us: int | None = None  # Gr_transactions_consistency_before_begin_time_sum
    after_termination: int | None = None  # ..._after_termination_count
    after_termination_us: int | None = None  # ..._after_termination_time_sum
    after_sync: int | None = None  # Gr_transactions_consistency_after_sync_count
    after_sync_us: int | None = None  # Gr_transactions_consistency_after_sync_time_sum
    gc_runs: int | None = None  # Gr_certification_garbage_collector_count
    gc_time_us: int | None = None  # Gr_certification_garbage_collector_time_sum
    throttled: int | None = None  # Gr_flow_control_throttle_count
    throttled_us: int | None = None  # Gr_flow_control_throttle_time_sum
    last_consensus_end_us: int | None = None  # Gr_last_consensus_end_timestamp (µs)

    def shown(self) -> bool:
        """True when the server showed at least one figure."""
        return any(getattr(self, f) is not None for f in COUNTERS)


#: The counter fields in wire order.
COUNTERS: Final = tuple(f.name for f in fields(CommitPathCounters))
_TIMESTAMP_AT: Final = COUNTERS.index("last_consensus_end_us")
_VALUES: Final = attrgetter(*COUNTERS)
_WELL_FORMED_TYPES: Final = frozenset((int, type(None)))


@dataclass(frozen=True, slots=True)
class CommitPathReport:
    """The whole section: when it was read and the counters."""

    at_us: int
    counters: CommitPathCounters


_build_counters = builder(CommitPathCounters)
_build_report = builder(CommitPathReport)


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"ext.commit_path: {where}: {problem}")


def _int(where: str, value: object, low: int, high: int) -> int:
    if type(value) is not int:  # bool is an int subclass; not here
        _fail(where, f"expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        _fail(where, f"expected an integer {low}-{high}, got {value}")
    return value


def decode_commit_path(value: object) -> CommitPathReport:
    """Validate an `ext.commit_path` value (already unpacked by the envelope decoder).

    Args:
        value: `envelope.ext["commit_path"]`: plain msgpack data.

    Returns:
        The report.

    Raises:
        ProtocolError: not the layout above (version, type, length or range).
    """
    at, raw = _checked(value)
    return _build_report(at, _build_counters(*raw))


def _checked(value: object) -> tuple[int, Any]:
    """`decode_commit_path`'s checks: (at_us, the counters) of a well-formed value."""
    if (type(value) is not list and type(value) is not tuple) or len(value) != 3:
        _fail("top level", "expected an array of 3 items")
    version, at_us, raw = value
    if type(version) is not int or version != COMMIT_PATH_VERSION:
        _fail("version", f"unsupported commit_path section version {version!r}")
    at = _int("at_us", at_us, 1, MAX_TIMESTAMP_US)
    if (type(raw) is not list and type(raw) is not tuple) or len(raw) != len(COUNTERS):
        _fail("counters", f"expected an array of {len(COUNTERS)} items")
    # The well-formed case in C, without building error texts: only int (bool is
    # not one) and nil items, the nonzero ones within range (0 always is).
    if _WELL_FORMED_TYPES.issuperset(map(type, raw)):
        known = [*filter(None, raw)]
        stamp = raw[_TIMESTAMP_AT]
        if (not known or (min(known) > 0 and max(known) <= MAX_COUNTER)) and (
            stamp is None or stamp <= MAX_TIMESTAMP_US
        ):
            return at, raw
    for i, (name, item) in enumerate(zip(COUNTERS, raw, strict=True)):
        high = MAX_TIMESTAMP_US if i == _TIMESTAMP_AT else MAX_COUNTER
        if item is not None:
            _int(name, item, 0, high)
    raise AssertionError("unreachable: a refused item names itself")  # pragma: no cover


def encode_commit_path(report: CommitPathReport) -> list[Any]:
    """The `ext.commit_path` value for `report` (plain data for the envelope's msgpack).

    Args:
        report: the sender's figures.

    Returns:
        The array described in the module docstring.

    Raises:
        ProtocolError: a figure `decode_commit_path` would refuse.
    """
    wire: list[Any] = [COMMIT_PATH_VERSION, report.at_us, list(_VALUES(report.counters))]
    _checked(wire)  # one set of rules for both directions
    return wire
