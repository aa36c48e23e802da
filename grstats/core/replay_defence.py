"""Replay defence: is an envelope of a known member news, by incarnation and seq?

Strategy: a pure verdict on one envelope against what the registry holds of
its member (its last accepted envelope, when that reached us, and its retired
incarnations); the registry counts what is refused.

Invariants:
- within one incarnation `seq` must grow. A retained copy of what we already
  have (re-delivered on every re-subscribe) is ignored, any other old seq is
  stale. A seq may not jump further ahead than the time since the last
  accepted message allows (two messages per period plus `SEQ_JUMP_SLACK`),
  so one forged message with seq 2^63-1 cannot lock a member out;
- a different incarnation is a restart (the registry resets the member and
  retires the old incarnation; the last `KNOWN_INCARNATIONS` are kept). A
  retired incarnation is stale -- unless the incarnation that replaced it
  has been silent for the unreachable window while the retired one speaks
  again: then the newer one was a forgery (or a brief double start) and the
  member goes back to the one that is alive. So a forged incarnation hides a
  member for at most the unreachable window.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from grstats.core.admission import Ignored
from protocol import Envelope

__all__ = ["KNOWN_INCARNATIONS", "SEQ_JUMP_SLACK", "ReplayDefence", "Stale", "retired_incarnations"]

KNOWN_INCARNATIONS = 8  # retired incarnations remembered per member
SEQ_JUMP_SLACK = 64  # seqs a member may run ahead beyond two per period since last seen


@dataclass(frozen=True, slots=True)
class Stale:
    """The envelope is old news (counted as rejected "stale"); `detail` says why."""

    detail: str


def retired_incarnations() -> deque[tuple[int, int]]:
    """An empty record of retired (incarnation, last seq), bounded to `KNOWN_INCARNATIONS`."""
    return deque(maxlen=KNOWN_INCARNATIONS)


class ReplayDefence:
    """The seq and incarnation rules, with the registry's timing.

    Args:
        period_us: the publish period (at least 1), the unit of the seq jump bound.
        unreachable_us: the silence after which a replacing incarnation may be
            taken back by the retired one.
    """

    def __init__(self, period_us: int, unreachable_us: int) -> None:
        self._period_us = max(1, period_us)
        self._unreachable_us = unreachable_us

    def judge(
        self,
        last: Envelope,
        last_received_us: int,
        retired: deque[tuple[int, int]],
        envelope: Envelope,
        received_at_us: int,
        *,
        retained: bool,
    ) -> Stale | Ignored | None:
        """The verdict on `envelope` of a member whose last accepted one is `last`.

        Args:
            last: the member's last accepted envelope.
            last_received_us: when `last` reached us.
            retired: the member's retired (incarnation, last seq); a retired
                incarnation taken back is removed from it.
            envelope: the envelope judged.
            received_at_us: when it reached us.
            retained: True when the broker delivered it from its retained store.

        Returns:
            None (news: apply it), Stale(detail) or Ignored("retained_seen").
        """
        if envelope.incarnation == last.incarnation:
            if envelope.seq <= last.seq:
                if retained:  # the broker's copy of what we already have (re-subscribe)
                    return Ignored("retained_seen")
                return Stale(f"seq {envelope.seq} <= {last.seq}")
            elapsed = max(0, received_at_us - last_received_us)
            allowed = 2 * elapsed // self._period_us + SEQ_JUMP_SLACK
            if envelope.seq - last.seq > allowed:
                return Stale(f"seq jumps {envelope.seq - last.seq} > {allowed}")
            return None
        retired_seq = next((s for inc, s in retired if inc == envelope.incarnation), None)
        if retired_seq is None:
            return None  # a new incarnation: a restart
        current_silent = received_at_us - last_received_us > self._unreachable_us
        if not current_silent or envelope.seq <= retired_seq:
            return Stale("retired incarnation")
        # The incarnation that replaced this one went silent while this one lives on.
        retired.remove((envelope.incarnation, retired_seq))
        return None
