"""The daemon's health as typed data: what it checks, and why it is degraded.

Strategy: the daemon makes the health once per snapshot (`grstats.daemon.health`
and the tables' own checks in `core.tables`); `/healthz`, `/metrics`
(`grstats_health_status{reason}`) and sd_notify's STATUS= line only read it.
A `HealthReason` pairs a stable `code` (a label value, an alert's key) with a
`detail` for people; one code may carry several details (one per history
fault, one per member the oracle disagrees on).

Invariants: `Health.checked` lists every code the daemon watches in this run,
active or not, so /metrics keeps a stable series set; every active reason's
code is in `checked`. "ok" means no reason.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUS_DISCONNECTED",
    "BUS_ECHO",
    "GTIDS_UNSENDABLE",
    "HISTORY_DATA",
    "HISTORY_DEGRADED",
    "PENDING_GTIDS_FULL",
    "SECTIONS_OVER_CADENCE",
    "SERVER_ORACLE",
    "SOURCE_DOWN",
    "SQL_DOWN",
    "SQL_LIMITS",
    "SQL_STALE",
    "SQL_TAIL_SKIPPED",
    "UNCHECKED",
    "Health",
    "HealthReason",
]

# The codes (docs/how-it-works.md): /healthz "reasons", grstats_health_status{reason}.
BUS_DISCONNECTED = "bus_disconnected"  # not connected to the broker
BUS_ECHO = "bus_echo"  # our own envelopes do not come back (broker ACL?)
GTIDS_UNSENDABLE = "gtids_unsendable"  # local GTID state over the ext.gtids bound
PENDING_GTIDS_FULL = "pending_gtids_full"  # pending GTID sets at their byte bound
SECTIONS_OVER_CADENCE = "sections_over_cadence"  # a member sends ext.gtids too often
SOURCE_DOWN = "source_down"  # the source does not reach its server
HISTORY_DEGRADED = "history_degraded"  # the history writer does not write
HISTORY_DATA = "history_data"  # it writes, but not everything it was given
SERVER_ORACLE = "server_oracle"  # the server's view of a member disagrees with its daemon
SQL_DOWN = "sql_down"  # the SQL endpoint is not serving
SQL_STALE = "sql_stale"  # live tables the endpoint's process cannot be sent
SQL_LIMITS = "sql_limits"  # the endpoint's process could not set its limits
SQL_TAIL_SKIPPED = "sql_tail_skipped"  # unflushed history rows left out of the SQL view


@dataclass(frozen=True, slots=True)
class HealthReason:
    """One reason the daemon is degraded.

    Attributes:
        code: a stable identifier (one of the codes above).
        detail: what happened, for people ("bus: disconnected (timed out)").
    """

    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class Health:
    """What the daemon checked and why it is degraded; empty `reasons` is "ok"."""

    checked: tuple[str, ...] = ()
    reasons: tuple[HealthReason, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing is degraded."""
        return not self.reasons

    def check(self, code: str, *details: str) -> Health:
        """This health with `code` checked and degraded once per detail (none: ok).

        Args:
            code: the code checked.
            *details: why it is degraded, each a reason of its own.

        Returns:
            A new Health.
        """
        checked = self.checked if code in self.checked else (*self.checked, code)
        return Health(checked, (*self.reasons, *(HealthReason(code, d) for d in details)))

    def merge(self, other: Health) -> Health:
        """Both checks' codes and reasons, this one's first."""
        return Health(
            tuple(dict.fromkeys((*self.checked, *other.checked))), (*self.reasons, *other.reasons)
        )

    def codes(self) -> tuple[str, ...]:
        """The active codes, each once, in the order they were found."""
        return tuple(dict.fromkeys(r.code for r in self.reasons))

    def details(self) -> tuple[str, ...]:
        """The active reasons' details, in the order they were found."""
        return tuple(r.detail for r in self.reasons)

    def status(self) -> dict[str, int]:
        """Every checked code -> 1 while it degrades the daemon, else 0."""
        active = set(self.codes())
        codes = dict.fromkeys((*self.checked, *self.codes()))
        return {code: 1 if code in active else 0 for code in codes}


UNCHECKED = Health()  # nothing checked, nothing degraded (a snapshot's default)
