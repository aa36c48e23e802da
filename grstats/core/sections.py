"""Every `ext` section of the envelope, declared once: what rides on the bus.

Strategy: as `core/columns.py` declares every table, this module declares every
section a member sends beside its stats (DESIGN.md section 3): its wire name,
its codec (protocol's), the value it takes from a local sample, its cadence,
how a receiver keeps it per member, its counters and its block of history
columns. Everything else loops over `SECTIONS` (read through `declared()`):

- admission decodes each kept section (`core.admission`), any other is
  skipped unread; the registry folds each into what it keeps of the member
  (`keep`), the local member's view is folded by the same rule
  (`core.tables`);
- the receive counts, the daemon counters, /metrics and /healthz name every
  section's counters from here (`malformed`, `unsendable`, `over_cadence`);
- the publisher builds the `ext` map from `outgoing` and `encode`
  (`daemon.sections`);
- `history_figures` builds every section's history block for one member from
  what is kept of it, local and remote alike (`core.history_rows`).

Invariants:
- `decode` and `encode` raise only `protocol.ProtocolError`; a malformed
  section never rejects its envelope (the stats are good on their own): the
  section is None and counted under its `counter` (two sections may share one);
- `keep(old, new, stats)` is pure: what is kept of the member after an
  envelope carrying `new` (None: absent, malformed or over its cadence);
  nothing is kept of nothing (`keep(None, None, stats)` is None), so a member
  that sends no section costs no fold;
- a section with a cadence (GTID_INTERVAL) is accepted from a member at most
  in a burst of `core.cadence.BURST`, then once per `min_gap_s` (half its
  interval); extras are dropped before they are decoded and counted
  (`over_cadence`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from grstats.core.applier import (
    bounded,
    decode_member_applier,
    encode_member_applier,
)
from grstats.core.channels import (
    CHANNEL_HISTORY_NAMES,
    channel_state,
    channels_left_out,
    encode_bounded_channels,
    error_history,
)
from grstats.core.commitpath_comm import CommunicationReader
from grstats.core.commitpath_section import (
    commit_path_history_of,
    commit_path_out,
    decode_commit_path_checked,
    keep_commit_path,
)
from grstats.core.gtid_reader import GtidStateReader
from grstats.core.lag import MemberLag, decode_member_lag, encode_member_lag
from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    COMMIT_PATH_HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from grstats.core.rows import applier_history, lag_history
from grstats.core.sample import LocalSample
from protocol import (
    MirroredTables,
    PipelineStats,
    decode_channels,
    decode_gtid_state,
    encode_commit_path,
    encode_commit_path_comm,
    encode_gtid_state,
)

__all__ = [
    "SECTIONS",
    "Cadence",
    "Declared",
    "HistoryContext",
    "Section",
    "declared",
    "fold",
    "history_figures",
    "keep_last",
    "keep_last_good",
]

MemberKey = tuple[str, str]  # (group, member id)


class Cadence(enum.Enum):
    """How often a member sends a section."""

    PERIOD = "period"  # with every stats envelope
    GTID_INTERVAL = "gtid_interval"  # with the GTID sets, every gtid_interval
    ON_CHANGE = "on_change"  # with every envelope, encoded again only when it changed
    # when its `change_key` differs from the last one sent, and with the GTID sets (at
    # least every gtid_interval); a receiver keeps the last one until the next
    CHANGED_OR_GTID_INTERVAL = "changed_or_gtid_interval"


@dataclass(frozen=True, slots=True)
class HistoryContext:
    """What a section's history block needs beside the section: the member's clock.

    Attributes:
        offset_s: the member's clock minus ours (0.0 for the local member; None unknown).
    """

    offset_s: float | None


def keep_last(_old: Any, new: Any, _stats: PipelineStats) -> Any:
    """The last envelope's value; one without it clears it (stale is worse than none)."""
    return new


def keep_last_sent(old: Any, new: Any, _stats: PipelineStats) -> Any:
    """The last value sent: an envelope without it means "unchanged" (CHANGED_OR_GTID_INTERVAL)."""
    return old if new is None else new


def keep_last_good(old: Any, new: Any, stats: PipelineStats) -> Any:
    """The last good value with the stats it rode with, kept until a newer one."""
    return old if new is None else (new, stats)


@dataclass(frozen=True, slots=True)
class Section:
    """One `ext` section, declared once.

    Attributes:
        name: its key in the envelope's `ext` map.
        outgoing: its value in a local sample (None: not sent).
        encode: the wire value of `outgoing`'s value (raises ProtocolError:
            unsendable); None: sent as it is.
        decode: a received wire value, checked (raises ProtocolError: malformed);
            None: read as it is (its shape checked by the envelope's generic walk).
        cadence: how often it is sent (`Cadence`).
        keep: `(kept, new, stats) -> kept` -- how the registry keeps it per member.
        reset_on_restart: a member's new incarnation forgets what was kept.
        counter: the malformed counter it counts under ("": never malformed);
            sections may share one.
        malformed_help: the /metrics help of that counter.
        self_checked: its codec checks it whole (protocol.SELF_CHECKED_SECTIONS).
        reader: makes a per-member decoder that checks again only a new value
            (None: `decode` every time).
        left_out: (items, items left out of the wire) of a local value (the latter
            summed into `left_out_counter`).
        left_out_item: what those items are, in the log line of the first cut.
        left_out_counter: the daemon counter (and metric, `grstats_` + it) of those.
        left_out_help: that metric's help.
        history_columns: its block of history columns (core.records.HISTORY_COLUMNS).
        history: `(kept, context) -> {column: value}` for that block (None: none).
        change_key: for CHANGED_OR_GTID_INTERVAL, what must differ from the last
            value sent for a value to go out between two GTID intervals.
    """

    name: str
    outgoing: Callable[[LocalSample], Any]
    encode: Callable[[Any], object] | None = None
    decode: Callable[[object], Any] | None = None
    cadence: Cadence = Cadence.PERIOD
    keep: Callable[[Any, Any, PipelineStats], Any] = keep_last
    reset_on_restart: bool = False
    counter: str = ""
    malformed_help: str = ""
    self_checked: bool = True
    reader: Callable[[], Callable[[MemberKey, object], Any]] | None = None
    left_out: Callable[[Any], tuple[int, int]] | None = None
    left_out_item: str = "items"
    left_out_counter: str = ""
    left_out_help: str = ""
    history_columns: tuple[str, ...] = ()
    history: Callable[[Any, HistoryContext], Mapping[str, Any]] | None = None
    change_key: Callable[[Any], object] | None = None

    def min_gap_s(self, period_s: float, gtid_interval_s: float) -> float | None:
        """The time a member's bucket takes to refill one copy (None: no bound; core.cadence).

        Half the cadence, so that a broker's delay bunching two copies is no extra.
        """
        if self.cadence is Cadence.GTID_INTERVAL:
            return max(period_s, gtid_interval_s) / 2
        return None


def _lag_out(sample: LocalSample) -> MemberLag | None:
    return MemberLag(sample.sampled_at_us, sample.lag) if sample.lag else None


_NULL: Final[Mapping[str, Any]] = {}  # no block: the row's defaults, NULL


def _applier_left_out(applier: Any) -> tuple[int, int]:
    return len(applier.workers), bounded(applier)[1]


def _applier_history(kept: Any, _context: HistoryContext) -> Mapping[str, Any]:
    return _NULL if kept is None else applier_history(kept)


def _lag_history(kept: Any, context: HistoryContext) -> Mapping[str, Any]:
    return _NULL if kept is None else lag_history(kept, context.offset_s)


def _communication_reader() -> Callable[[MemberKey, object], Any]:
    return CommunicationReader().read


def _gtid_state_reader() -> Callable[[MemberKey, object], Any]:
    return GtidStateReader().read


def _channels_out(sample: LocalSample) -> MirroredTables:
    # an empty value when the server shows no channel: a receiver then drops the rows
    # it kept (a member whose GR stopped), at the section's cadence
    if sample.channels is not None:
        return sample.channels
    return MirroredTables(sample.sampled_at_us, ())


def _channels_history(kept: Any, _context: HistoryContext) -> Mapping[str, Any]:
    return error_history(kept)


#: Every section, in the order the envelope's `ext` map is built.
SECTIONS: tuple[Section, ...] = (
    # a plain text (the generic walk checks it); read by the members table
    Section(
        "communication_stack",
        outgoing=lambda s: s.member.communication_stack,
        self_checked=False,
    ),
    Section(
        "lag",
        outgoing=_lag_out,
        encode=encode_member_lag,
        decode=decode_member_lag,
        counter="lag",
        malformed_help="Accepted envelopes whose ext.lag section was refused "
        "(stats applied, lag not).",
        history_columns=LAG_HISTORY_COLUMNS,
        history=_lag_history,
    ),
    Section(
        "applier",
        outgoing=lambda s: s.applier,
        encode=encode_member_applier,
        decode=decode_member_applier,
        counter="applier",
        malformed_help="Accepted envelopes whose ext.applier section was refused "
        "(stats applied, applier not).",
        left_out=_applier_left_out,
        left_out_item="workers",
        left_out_counter="applier_workers_dropped",
        left_out_help="Local applier workers left out of published ext.applier sections "
        "(past the wire's bound of 256 workers), summed over envelopes.",
        history_columns=APPLIER_HISTORY_COLUMNS,
        history=_applier_history,
    ),
    # @@gtid_executed / @@gtid_purged ride with the stats' GTID sets only; the last
    # good one is kept (with the stats it came with) until a newer one arrives
    Section(
        "gtids",
        outgoing=lambda s: s.gtid_state,
        encode=encode_gtid_state,
        decode=decode_gtid_state,
        cadence=Cadence.GTID_INTERVAL,
        keep=keep_last_good,
        reader=_gtid_state_reader,
        counter="gtids",
        malformed_help="Accepted envelopes whose ext.gtids section was refused "
        "(stats applied, GTID state not).",
    ),
    Section(
        "commit_path",
        outgoing=commit_path_out,
        encode=encode_commit_path,
        decode=decode_commit_path_checked,
        keep=keep_commit_path,
        reset_on_restart=True,
        counter="commit_path",
        malformed_help="Accepted envelopes whose ext.commit_path or ext.commit_path_comm "
        "section was refused (stats applied, that section not).",
        history_columns=COMMIT_PATH_HISTORY_COLUMNS,
        history=commit_path_history_of,
    ),
    # replication_group_communication_information stands for days: encoded again, and
    # checked again by a receiver, only when it changed
    # the six WL#3656 channel tables (issue 41): when a thread's state, error or the
    # configuration changes (within a period), else with the GTID sets; the sender
    # bounds them (core.channels.bounded) and the publisher leaves the configuration
    # tables out with [publish] channel_configuration = false
    Section(
        "channels",
        outgoing=_channels_out,
        encode=encode_bounded_channels,
        decode=decode_channels,
        cadence=Cadence.CHANGED_OR_GTID_INTERVAL,
        keep=keep_last_sent,
        counter="channels",
        malformed_help="Accepted envelopes whose ext.channels section was refused "
        "(stats applied, channel tables not).",
        left_out=channels_left_out,
        left_out_item="values",
        left_out_counter="channels_values_left_out",
        left_out_help="Channel table values (texts over the wire's bound, rows past its size) "
        "left out of published ext.channels sections, summed.",
        history_columns=CHANNEL_HISTORY_NAMES,
        history=_channels_history,
        change_key=channel_state,
    ),
    Section(
        "commit_path_comm",
        outgoing=lambda s: s.communication,
        encode=encode_commit_path_comm,
        cadence=Cadence.ON_CHANGE,
        counter="commit_path",
        reader=_communication_reader,
    ),
)


@dataclass(frozen=True, slots=True)
class Declared:
    """What the declarations imply, computed once per `SECTIONS` (see `declared`).

    Attributes:
        sections: the declarations.
        names: every section's name (the `ext` keys a receiver reads).
        self_checked: the sections whose codec checks them whole.
        counters: the malformed counters, each once, in declaration order.
        help: each malformed counter's /metrics help.
        encoded: the sections with an encoder (each may be unsendable).
        left_out_counters: the counters of items left out of the wire.
        gated: the sections accepted at most at their cadence (core.cadence).
        gated_names: their names.
        with_gtids: the sections a GTID-bearing envelope always carries (the gated
            ones and CHANGED_OR_GTID_INTERVAL's): a receiver takes them from the
            retained `gtids` copy too (a daemon that connects later).
        history: the sections with a history block.
        by_name: each declaration by its name.
    """

    sections: tuple[Section, ...]
    names: frozenset[str] = field(init=False)
    self_checked: frozenset[str] = field(init=False)
    counters: tuple[str, ...] = field(init=False)
    help: Mapping[str, str] = field(init=False)
    encoded: tuple[str, ...] = field(init=False)
    left_out_counters: tuple[str, ...] = field(init=False)
    gated: tuple[Section, ...] = field(init=False)
    gated_names: frozenset[str] = field(init=False)
    with_gtids: tuple[Section, ...] = field(init=False)
    history: tuple[Section, ...] = field(init=False)
    by_name: Mapping[str, Section] = field(init=False)

    def __post_init__(self) -> None:
        s = self.sections
        counters = tuple(dict.fromkeys(x.counter for x in s if x.counter))
        helps = {c: next(x.malformed_help for x in s if x.counter == c) for c in counters}
        for name, value in (
            ("names", frozenset(x.name for x in s)),
            ("self_checked", frozenset(x.name for x in s if x.self_checked)),
            ("counters", counters),
            ("help", helps),
            ("encoded", tuple(x.name for x in s if x.encode is not None)),
            ("left_out_counters", tuple(x.left_out_counter for x in s if x.left_out_counter)),
            ("gated", tuple(x for x in s if x.cadence is Cadence.GTID_INTERVAL)),
            ("gated_names", frozenset(x.name for x in s if x.cadence is Cadence.GTID_INTERVAL)),
            (
                "with_gtids",
                tuple(
                    x
                    for x in s
                    if x.cadence in (Cadence.GTID_INTERVAL, Cadence.CHANGED_OR_GTID_INTERVAL)
                ),
            ),
            ("history", tuple(x for x in s if x.history is not None)),
            ("by_name", {x.name: x for x in s}),
        ):
            object.__setattr__(self, name, value)


_declared: Declared | None = None


def declared() -> Declared:
    """What `SECTIONS` implies (recomputed only when `SECTIONS` is another tuple)."""
    global _declared  # noqa: PLW0603 -- a cache of a module constant, swapped whole
    current = _declared
    if current is None or current.sections is not SECTIONS:
        current = _declared = Declared(SECTIONS)
    return current


def fold(
    kept: dict[str, Any],
    sections: tuple[Section, ...],
    values: Mapping[str, Any],
    stats: PipelineStats,
) -> None:
    """Fold one envelope's section values into what is kept of its member, in place.

    Args:
        kept: section name -> what is kept (a section kept as None is left out).
        sections: the declarations to fold (all, or those riding with the GTID sets).
        values: section name -> its value in this envelope (absent: not carried).
        stats: the envelope's stats (what a section kept with them rode with).
    """
    for section in sections:
        name = section.name
        old = kept.get(name)
        new = values.get(name)
        if old is None and new is None:
            continue  # nothing is kept of nothing
        now = section.keep(old, new, stats)
        if now is None:
            del kept[name]
        else:
            kept[name] = now


def history_figures(kept: Mapping[str, Any], context: HistoryContext) -> dict[str, Any]:
    """Every section's history block for one member, from what is kept of it.

    Args:
        kept: section name -> what is kept of the member (`Section.keep`).
        context: the member's clock offset.

    Returns:
        History column -> value; a section's block is left out (NULL) when its
        hook returns nothing.
    """
    figures: dict[str, Any] = {}
    for section in declared().history:
        assert section.history is not None  # declared().history holds only those
        figures.update(section.history(kept.get(section.name), context))
    return figures
