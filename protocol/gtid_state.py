"""The envelope's `ext.gtids` section: one member's @@gtid_executed and @@gtid_purged.

Wire form (version 1), a msgpack array, every position fixed::

    [1, at_us, executed, purged]

* `at_us`: when the sender read the two variables, its own wall clock, µs
  since the epoch (UTC).
* `executed` / `purged`: GTID-set text (`protocol.gtid`: tagged GTIDs of 8.4
  included), as `GtidSet.__str__` prints it -- MySQL's own print form, one
  UUID per line. "" is the empty set.

Bound: the two texts together are at most `MAX_GTID_STATE_TEXT` bytes (24
KiB: about 390 UUID lines of one interval each, a long-lived server's set;
the envelope's default cap is 64 KiB and its stats carry the group's
committed set as well). A sender whose sets are larger sends the envelope
without the section and counts it (`sections_unsendable{section="gtids"}`);
receivers then keep the member's last good state until it ages out.

The section rides only on envelopes that carry the GTID sets of the stats
(flag '1', every `gtid_interval`), so it costs nothing between them.

Compatibility: receivers ignore `ext` keys they do not know (DESIGN.md
section 3), so an older daemon accepts these envelopes. A version other than
1, a text over the bound or one MySQL would not parse is refused
(`ProtocolError`); the receiver applies the statistics anyway.

Invariants: only `ProtocolError` leaves `decode_gtid_state`; whatever
`encode_gtid_state` returns, `decode_gtid_state` accepts and returns equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NoReturn

from protocol.errors import ProtocolError
from protocol.gtid import GtidSet

GTID_STATE_VERSION: Final = 1
MAX_GTID_STATE_TEXT: Final = 24 * 1024
_MAX_TIMESTAMP_US: Final = 1 << 55


@dataclass(frozen=True, slots=True)
class GtidState:
    """One member's GTID state as its server printed it.

    Attributes:
        at_us: when it was read (the sender's clock, µs).
        executed: @@gtid_executed.
        purged: @@gtid_purged.
    """

    at_us: int
    executed: GtidSet
    purged: GtidSet


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"ext.gtids: {where}: {problem}")


def _text(where: str, value: object) -> str:
    if type(value) is not str:
        _fail(where, f"expected a string, got {type(value).__name__}")
    return value


def decode_gtid_state(value: object) -> GtidState:
    """Validate an `ext.gtids` value (already unpacked by the envelope decoder).

    Args:
        value: `envelope.ext["gtids"]`: plain msgpack data.

    Returns:
        The state.

    Raises:
        ProtocolError: not the layout above, over the bound, or a set MySQL
            would refuse.
    """
    if (type(value) is not list and type(value) is not tuple) or len(value) != 4:
        _fail("top level", "expected an array of 4 items")
    version, at_us, executed, purged = value
    if type(version) is not int or version != GTID_STATE_VERSION:
        _fail("version", f"unsupported gtids section version {version!r}")
    if type(at_us) is not int or not 0 < at_us <= _MAX_TIMESTAMP_US:
        _fail("at_us", f"expected an integer 1-{_MAX_TIMESTAMP_US}")
    executed_text = _text("executed", executed)
    purged_text = _text("purged", purged)
    if len(executed_text) + len(purged_text) > MAX_GTID_STATE_TEXT:
        _fail("sets", f"longer than {MAX_GTID_STATE_TEXT} characters together")
    try:
        sets = GtidSet.parse(executed_text), GtidSet.parse(purged_text)
    except ProtocolError as exc:
        _fail("sets", str(exc))
    return GtidState(at_us, *sets)


def encode_gtid_state(state: GtidState) -> list[Any]:
    """The `ext.gtids` value for `state` (plain data for the envelope's msgpack).

    Raises:
        ProtocolError: the texts exceed `MAX_GTID_STATE_TEXT` or `at_us` is out
            of range (the encoder refuses to send what receivers would refuse).
    """
    executed, purged = str(state.executed), str(state.purged)
    if len(executed) + len(purged) > MAX_GTID_STATE_TEXT:
        _fail("sets", f"longer than {MAX_GTID_STATE_TEXT} characters together")
    if not 0 < state.at_us <= _MAX_TIMESTAMP_US:
        _fail("at_us", f"expected an integer 1-{_MAX_TIMESTAMP_US}")
    return [GTID_STATE_VERSION, state.at_us, executed, purged]
