"""Admission: is one bus message something to apply, and if not, why not.

Strategy: `admit()` is a pure function of the message, the receiver's
identity, the limits and the reception time. It never looks at what is already
known about a member (that is `core.registry`'s replay defence); it only checks
what a single message can prove wrong, cheapest check first, so a flood of
garbage costs as little as possible:

1. the topic has four levels, and its group and member are UUIDs;
2. our own messages are ignored before anything is decoded;
3. a status payload is at most `max_status_size` bytes and says online/offline;
4. a stats/gtids payload is at most `max_envelope_size` bytes, decodes
   (envelope, then MySQL's message), names the topic's member and group;
5. values are in range: `seq` in 1..2^63-1, `flow_control_mode` 0..127,
   `sent_us` not further ahead of our clock than `max_clock_skew_s`.

The envelope is decoded keeping only the `ext` sections this version reads
(the names of `core.sections.SECTIONS`); any other section is skipped unread
-- never built in memory, never stored -- and its name is reported in
`Admitted.dropped_ext` for the caller to count (a 64 KiB unknown section was
kept at ~72x its wire size before).

6. a section with a cadence (ext.gtids) is decoded only when it is due
   (`core.cadence`, asked through `gate`): an extra is dropped unread and
   named in `over_cadence` for the caller to count;
7. each kept `ext` section is decoded last, by its declaration
   (`core.sections`). A malformed one does not reject the envelope: the
   statistics are good on their own, so the envelope is admitted without that
   section and `errors[counter]` says why (the caller counts it as
   `envelopes_<counter>_malformed`; ext.commit_path and ext.commit_path_comm
   share one counter, the first error of the two standing).

Queue sizes (items 1 and 2, IN_QUEUE and REMOTE_IN_APPLIER_QUEUE) and
ROWS_VALIDATING are sizes. MySQL's table setters take them as unsigned 64-bit,
so a negative wire value would show as 2^64 - |x|; MySQL keeps them from going
negative at the sender instead (pipeline_stats.cc:
`get_transactions_waiting_apply_during_recovery` returns 0 rather than a
negative count; Group Replication's test suite has a case for exactly that
counter going negative during recovery and expects it never to show so). We
cannot fix the sender, so
admission clamps a negative size to 0 and reports the fields it clamped: the
message is otherwise good (its counters are valid) and is applied; the clamp
is counted by the caller. Counters are uint64 in MySQL carried as int64, so a
negative counter is a legal value >= 2^63 and is left alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from grstats.core.cadence import Due
from grstats.core.sections import declared
from grstats.core.topics import (
    GTIDS_KIND,
    STATS_KIND,
    STATUS_KIND,
    STATUS_OFFLINE,
    STATUS_ONLINE,
    is_uuid,
    parse_topic,
)
from protocol import (
    DEFAULT_MAX_ENVELOPE_SIZE,
    Envelope,
    PipelineStats,
    ProtocolError,
    decode_envelope_sections,
    decode_pipeline_stats,
)

MemberKey = tuple[str, str]  # (group, member id)

_MAX_SEQ = 2**63 - 1  # history stores seq as int64
_MAX_FLOW_CONTROL_MODE = 127  # history stores it as int8; MySQL uses 0 and 1
_SIZE_ITEMS = (
    "transactions_waiting_certification",
    "transactions_waiting_apply",
    "transactions_rows_validating",
)
_sizes = attrgetter(*_SIZE_ITEMS)
_NO_KEY: MemberKey = ("", "")
_NOTHING: Mapping[str, Any] = MappingProxyType({})  # a default argument, never written
#: A per-member decoder of one section (`Section.reader`): checks again only a new value.
Reader = Callable[[MemberKey, object], Any]
#: (member, envelope, section name, received_at_us) -> is that section due (`core.cadence`)
Gate = Callable[[MemberKey, Envelope, str, int], Due]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one message may be.

    Attributes:
        max_envelope_size: stats/gtids payloads larger than this are rejected unread.
        max_status_size: status payloads larger than this are rejected unread.
        max_clock_skew_s: how far a sender's `sent_us` may be ahead of our clock.
    """

    max_envelope_size: int = DEFAULT_MAX_ENVELOPE_SIZE
    max_status_size: int = 64
    max_clock_skew_s: float = 300.0


@dataclass(frozen=True, slots=True)
class Admitted:
    """A stats or gtids envelope that may be applied.

    Attributes:
        key: (group, member).
        kind: STATS_KIND or GTIDS_KIND.
        envelope: the decoded envelope.
        stats: its decoded message, negative sizes clamped to 0.
        clamped: the PipelineStats fields that were clamped.
        dropped_ext: the names of the unknown `ext` sections skipped unread.
        sections: section name -> its decoded value (absent: not sent, or malformed).
        errors: malformed counter (`Section.counter`) -> why its section was refused.
        over_cadence: sections dropped unread, sent sooner than their cadence allows.
    """

    key: MemberKey
    kind: str
    envelope: Envelope
    stats: PipelineStats
    clamped: tuple[str, ...] = ()
    dropped_ext: tuple[str, ...] = ()
    sections: Mapping[str, Any] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    over_cadence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Status:
    """A member's `online` / `offline` announcement."""

    key: MemberKey
    online: bool


@dataclass(frozen=True, slots=True)
class Rejected:
    """A message refused for `reason` (one of columns.REJECT_REASONS)."""

    reason: str
    key: MemberKey
    detail: str = ""

    @property
    def member_id(self) -> str:
        """The member the message claimed to come from ("" when unknown)."""
        return self.key[1]


@dataclass(frozen=True, slots=True)
class Ignored:
    """A message with nothing to apply (our own echo, a cleared retained topic, ...)."""

    why: str


Admission = Admitted | Status | Rejected | Ignored


def admit(
    topic: str,
    payload: bytes,
    received_at_us: int,
    *,
    group: str | None,
    local_member_id: str | None,
    limits: Limits,
    readers: Mapping[str, Reader] = _NOTHING,
    gate: Gate | None = None,
) -> Admission:
    """Check one bus message; see the module docstring for the order of the checks.

    Args:
        topic: `<prefix>/<group>/<member>/<kind>`.
        payload: the message bytes.
        received_at_us: our wall clock at reception, microseconds.
        group: our group; None for a collector (every group).
        local_member_id: our server UUID; None for a collector.
        limits: the bounds.
        readers: section name -> its per-member decoder (`Section.reader`);
            a section without one is decoded by its `Section.decode`.
        gate: asked before a section with a cadence is decoded (None: every
            one is); one not due is skipped unread (`Admitted.over_cadence`
            names the extras).

    Returns:
        Admitted, Status, Rejected(reason) or Ignored(why).
    """
    parsed = parse_topic(topic)
    if parsed is None:
        return Rejected("malformed", _NO_KEY, "topic")
    topic_group, topic_member, kind = parsed
    if not (is_uuid(topic_group) and is_uuid(topic_member)):
        return Rejected("invalid_id", _NO_KEY, f"topic {topic[:120]!r}")
    key: MemberKey = (topic_group, topic_member)
    if local_member_id is not None and topic_member == local_member_id:
        return Ignored("own")
    if kind == STATUS_KIND:
        return _status(key, payload, group, limits)
    if kind not in (STATS_KIND, GTIDS_KIND):
        return Ignored("kind")
    if not payload:
        return Ignored("cleared")  # a retained message being deleted
    if len(payload) > limits.max_envelope_size:
        return Rejected("oversized", key, f"{len(payload)} bytes")
    if group is not None and topic_group != group:
        return Rejected("other_group", key, "topic")
    try:
        envelope, dropped = decode_envelope_sections(
            payload, keep=declared().names, max_size=limits.max_envelope_size
        )
        stats = decode_pipeline_stats(envelope.stats)
    except ProtocolError as exc:
        return Rejected("malformed", key, str(exc))
    if envelope.member.id != topic_member:
        return Rejected("spoofed", key, envelope.member.id)
    if envelope.group != topic_group:
        return Rejected("other_group", key, envelope.group)
    if not 1 <= envelope.seq <= _MAX_SEQ:
        return Rejected("out_of_range", key, f"seq {envelope.seq}")
    if not 0 <= stats.flow_control_mode <= _MAX_FLOW_CONTROL_MODE:
        return Rejected("out_of_range", key, f"flow_control_mode {stats.flow_control_mode}")
    if envelope.sent_us - received_at_us > limits.max_clock_skew_s * 1_000_000:
        return Rejected("future", key, f"sent_us {envelope.sent_us}")
    clamped: tuple[str, ...] = ()
    if min(_sizes(stats)) < 0:  # rare: no generator per message in the common case
        clamped = tuple(f for f in _SIZE_ITEMS if getattr(stats, f) < 0)
        zeros: dict[str, Any] = dict.fromkeys(clamped, 0)
        stats = dataclasses.replace(stats, **zeros)
    if not envelope.ext:  # the shared empty mappings: nothing allocated per message
        return Admitted(key, kind, envelope, stats, clamped, dropped, _NOTHING, _NOTHING)
    ext = envelope.ext
    over: tuple[str, ...] = ()
    if gate is not None and not declared().gated_names.isdisjoint(ext):
        ext, over = _due(ext, key, envelope, received_at_us, gate)
    values, errors = _sections(ext, key, readers)
    return Admitted(key, kind, envelope, stats, clamped, dropped, values, errors, over)


def _due(
    ext: Mapping[str, Any], key: MemberKey, envelope: Envelope, at_us: int, gate: Gate
) -> tuple[Mapping[str, Any], tuple[str, ...]]:
    """`ext` without the sections that are not due (core.cadence), and the extras among them."""
    kept = dict(ext)
    over: list[str] = []
    for name in declared().gated_names.intersection(ext):
        due = gate(key, envelope, name, at_us)
        if due is not Due.YES:
            del kept[name]
            if due is Due.EARLY:
                over.append(name)
    return kept, tuple(sorted(over))


def _sections(
    ext: Mapping[str, Any], key: MemberKey, readers: Mapping[str, Reader]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each kept section decoded by its declaration; the first error per counter."""
    by_name = declared().by_name
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, raw in ext.items():
        section = by_name[name]  # decode_envelope_sections kept only declared names
        try:
            reader = readers.get(name)
            if reader is not None:
                values[name] = reader(key, raw)
            elif section.decode is not None:
                values[name] = section.decode(raw)
            else:
                values[name] = raw
        except ProtocolError as exc:
            if section.counter not in errors:
                errors[section.counter] = str(exc)
    return values, errors


def _status(key: MemberKey, payload: bytes, group: str | None, limits: Limits) -> Admission:
    if len(payload) > limits.max_status_size:
        return Rejected("oversized", key, f"status of {len(payload)} bytes")
    if group is not None and key[0] != group:
        return Ignored("other_group_status")
    text = payload.strip()
    if text == STATUS_OFFLINE:
        return Status(key, online=False)
    if text == STATUS_ONLINE:
        return Status(key, online=True)
    if not text:
        return Ignored("cleared")
    return Rejected("malformed", key, "status payload")
