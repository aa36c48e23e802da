"""A member as the explain texts name it: host:port, else its (escaped) UUID."""

from __future__ import annotations

from collections.abc import Mapping

from grstats.core.visible import visible

__all__ = ["NO_LABELS", "who"]

NO_LABELS: Mapping[str, str] = {}


def who(member: object, labels: Mapping[str, str]) -> str:
    """The member's host:port, or its id when no server's view gives it one.

    Args:
        member: a MEMBER_ID cell (untrusted).
        labels: member_labels() of the group.

    Returns:
        Printable text.
    """
    if member is None:
        return "NULL"
    text = str(member)
    return visible(labels.get(text, text))


def number(value: object) -> float | None:
    """A numeric cell as a float, None for NULL, text or a bool."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
