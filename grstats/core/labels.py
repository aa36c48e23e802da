"""Members as a person reads them: `host:port`, never a bare UUID.

Strategy: one labelling for every place a person reads a member -- the CLI's
narrow tables and `--explain`, the live page -- from the group's
replication_group_members rows. Where two members share a host:port (a lab
on one host) the UUID's first 8 digits tell them apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grstats.core import columns as col

__all__ = ["label_order", "member_labels"]


def member_labels(members: Sequence[Mapping[str, object]]) -> dict[str, str]:
    """MEMBER_ID -> `host:port`, with the UUID's first 8 digits where a host:port repeats.

    Args:
        members: replication_group_members rows.

    Returns:
        The label of every member that has a host.
    """
    plain: dict[str, str] = {}
    for row in members:
        member, host, port = (
            row.get(col.MEMBER_ID),
            row.get(col.MEMBER_HOST),
            row.get(col.MEMBER_PORT),
        )
        if isinstance(member, str) and host:
            plain[member] = f"{host}:{port}" if port is not None else str(host)
    seen: dict[str, int] = {}
    for label in plain.values():
        seen[label] = seen.get(label, 0) + 1
    return {m: label if seen[label] == 1 else f"{label}/{m[:8]}" for m, label in plain.items()}


def label_order(member: str, labels: Mapping[str, str]) -> tuple[int, str, str]:
    """The sort key that lists members in host:port order (unlabelled ones last, by UUID).

    Args:
        member: a MEMBER_ID.
        labels: member_labels() of the group.

    Returns:
        A key for sorted(): every reader lists a group's members in this one order.
    """
    label = labels.get(member)
    return (0, label, member) if label is not None else (1, "", member)
