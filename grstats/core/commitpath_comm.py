"""ext.commit_path_comm: a member's replication_group_communication_information.

Strategy: the section stands for days (it changes with the group's leaders
and protocol), and its leaders' UUIDs were a third of the commit path's
receive cost, so `CommunicationReader` checks a member's value again only
when it differs from the member's previous one. `communication_cells` puts
what it decoded to in the member's grstats_member_commit_path row
(`core.commitpath`): the leaders' UUIDs joined by ",", as MySQL shows them;
NULL when not shown.
"""

from __future__ import annotations

from grstats.core import columns as col
from protocol import GroupCommunication, decode_commit_path_comm

__all__ = ["MAX_READER_MEMBERS", "CommunicationReader", "communication_cells"]

Cell = str | int | float | None

MAX_READER_MEMBERS = 1024  # members whose last ext.commit_path_comm is kept (< 1 KiB each)


def communication_cells(row: dict[str, Cell], comm: GroupCommunication) -> None:
    """Set the communication columns of a grstats_member_commit_path `row` from `comm`."""
    preferred, actual, single = (
        comm.leaders_preferred,
        comm.leaders_actual,
        comm.single_leader_capable,
    )
    row[col.COMMIT_PATH_WRITE_CONCURRENCY] = comm.write_concurrency
    row[col.COMMIT_PATH_PROTOCOL_VERSION] = comm.protocol_version
    row[col.COMMIT_PATH_LEADERS_PREFERRED] = None if preferred is None else ",".join(preferred)
    row[col.COMMIT_PATH_LEADERS_ACTUAL] = None if actual is None else ",".join(actual)
    row[col.COMMIT_PATH_SINGLE_LEADER] = None if single is None else int(single)


class CommunicationReader:
    """`protocol.decode_commit_path_comm` per member, done again only for a new value.

    The member's last wire value is kept with what it decoded to; a value equal
    to it item by item and type by type (1, 1.0 and True are equal in Python,
    not on the wire, and only the first is valid) decodes to the same row, so
    it is not checked again. Bounded: `MAX_READER_MEMBERS` members, the one
    kept longest is forgotten first (a member forgotten is only checked again).
    """

    def __init__(self, max_members: int = MAX_READER_MEMBERS) -> None:
        self.max_members = max_members
        self._last: dict[tuple[str, str], tuple[object, GroupCommunication]] = {}

    def read(self, key: tuple[str, str], value: object) -> GroupCommunication:
        """`decode_commit_path_comm(value)`, the section of member `key` (group, id).

        Raises:
            ProtocolError: as `decode_commit_path_comm` (a refused value is not kept).
        """
        last = self._last.get(key)
        if last is not None and _same(last[0], value):
            return last[1]
        decoded = decode_commit_path_comm(value)
        if last is None and len(self._last) >= self.max_members:
            del self._last[next(iter(self._last))]
        self._last[key] = (value, decoded)
        return decoded


def _same(old: object, new: object) -> bool:
    """Equal, and of the same type at the top and in every top-level item.

    Deeper items are UUID texts, which only a text equals.
    """
    if type(old) is not type(new) or old != new:
        return False
    assert isinstance(old, list | tuple) and isinstance(new, list | tuple)  # equal to a valid one
    return [*map(type, old)] == [*map(type, new)]  # in C: types compare by identity
