"""The envelope's `ext.commit_path_comm` section: the group's communication settings.

It rides beside `ext.commit_path` (same feature, same rows) as a separate
`ext` key because version 1 of that section is a fixed 3-item array that
older daemons refuse at any other length: appending to it would cost them
every commit-path figure, while an unknown `ext` key is skipped by them
unread (DESIGN.md section 3).

Wire form (version 1), a msgpack array, every position fixed::

    [1, write_concurrency, protocol_version, leaders_preferred, leaders_actual,
     single_leader_capable]

The values are those of MySQL's
performance_schema.replication_group_communication_information (8.0.23+;
the single-leader column 8.0.27+), each nil when the server does not show it:

* `write_concurrency`: integer 0..2^32-1 (XCom's event horizon, an uint32);
* `protocol_version`: text of at most `MAX_VERSION_CHARS` characters
  ("8.0.27");
* `leaders_preferred`, `leaders_actual`: arrays of at most `MAX_LEADERS`
  member UUIDs (36 characters each), in the server's order;
* `single_leader_capable`: 0 or 1.

Bounded by construction: at most 711 bytes packed.

Invariants: only `ProtocolError` leaves `decode_commit_path_comm`; whatever
`encode_commit_path_comm` returns, the decoder accepts and returns equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from protocol.errors import ProtocolError
from protocol.frozen import builder

COMMIT_PATH_COMM_VERSION: Final = 1
MAX_WRITE_CONCURRENCY: Final = (1 << 32) - 1
MAX_VERSION_CHARS: Final = 16
MAX_LEADERS: Final = 9  # a group has at most 9 members
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


@dataclass(frozen=True, slots=True)
class GroupCommunication:
    """replication_group_communication_information's row; None where not shown."""

    write_concurrency: int | None = None  # WRITE_CONCURRENCY
    protocol_version: str | None = None  # PROTOCOL_VERSION
    leaders_preferred: tuple[str, ...] | None = None  # WRITE_CONSENSUS_LEADERS_PREFERRED
    leaders_actual: tuple[str, ...] | None = None  # WRITE_CONSENSUS_LEADERS_ACTUAL
    single_leader_capable: bool | None = None  # WRITE_CONSENSUS_SINGLE_LEADER_CAPABLE

    def shown(self) -> bool:
        """True when the server showed at least one value."""
        return any(
            v is not None
            for v in (
                self.write_concurrency,
                self.protocol_version,
                self.leaders_preferred,
                self.leaders_actual,
                self.single_leader_capable,
            )
        )


_build = builder(GroupCommunication)


def _fail(where: str, problem: str) -> NoReturn:
    raise ProtocolError(f"ext.commit_path_comm: {where}: {problem}")


def _leaders(where: str, value: object) -> None:
    if value is None:
        return
    if (type(value) is not list and type(value) is not tuple) or len(value) > MAX_LEADERS:
        _fail(where, f"expected an array of at most {MAX_LEADERS} member UUIDs")
    for item in value:
        if type(item) is not str or not _UUID.fullmatch(item):
            _fail(where, f"expected a member UUID, got {item!r:.60}")


def _check(value: object) -> list[Any] | tuple[Any, ...]:
    """`decode_commit_path_comm`'s checks: the value itself when it is well formed."""
    if (type(value) is not list and type(value) is not tuple) or len(value) != 6:
        _fail("top level", "expected an array of 6 items")
    version, concurrency, protocol, preferred, actual, single = value
    if type(version) is not int or version != COMMIT_PATH_COMM_VERSION:
        _fail("version", f"unsupported commit_path_comm section version {version!r}")
    if concurrency is not None and (
        type(concurrency) is not int or not 0 <= concurrency <= MAX_WRITE_CONCURRENCY
    ):
        _fail("write_concurrency", f"expected an integer 0-{MAX_WRITE_CONCURRENCY}")
    if protocol is not None and (
        type(protocol) is not str or not 0 < len(protocol) <= MAX_VERSION_CHARS
    ):
        _fail("protocol_version", f"expected a text of 1-{MAX_VERSION_CHARS} characters")
    if single is not None and (type(single) is not int or single not in (0, 1)):
        _fail("single_leader_capable", "expected 0 or 1")
    _leaders("leaders_preferred", preferred)
    _leaders("leaders_actual", actual)
    return value


def decode_commit_path_comm(value: object) -> GroupCommunication:
    """Validate an `ext.commit_path_comm` value (already unpacked by the envelope decoder).

    Args:
        value: `envelope.ext["commit_path_comm"]`: plain msgpack data.

    Returns:
        The row as the sender's server showed it.

    Raises:
        ProtocolError: not the layout above (version, type, length or range).
    """
    _, concurrency, protocol, preferred, actual, single = _check(value)
    return _build(
        concurrency,
        protocol,
        None if preferred is None else tuple(preferred),
        None if actual is None else tuple(actual),
        None if single is None else bool(single),
    )


def encode_commit_path_comm(comm: GroupCommunication) -> list[Any]:
    """The `ext.commit_path_comm` value for `comm` (plain data for the envelope's msgpack).

    Args:
        comm: the sender's row.

    Returns:
        The array described in the module docstring.

    Raises:
        ProtocolError: a value `decode_commit_path_comm` would refuse.
    """
    single = comm.single_leader_capable
    wire: list[Any] = [
        COMMIT_PATH_COMM_VERSION,
        comm.write_concurrency,
        comm.protocol_version,
        None if comm.leaders_preferred is None else list(comm.leaders_preferred),
        None if comm.leaders_actual is None else list(comm.leaders_actual),
        None if single is None else int(single),
    ]
    _check(wire)  # one set of rules for both directions
    return wire
