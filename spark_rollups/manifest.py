"""The rollup manifest: which history partitions the tables were built from.

Strategy: `<out>/_rollup_manifest.json` maps each group and date to the
fingerprint of the history segments it was rolled up from (storage.py).  An
incremental run (no --since) rolls up the dates whose fingerprint differs
from the manifest -- new dates and dates whose segments changed -- plus the
day after each of them (its first step comes from the changed day's last
sample).  The manifest is replaced atomically after every table is written,
so a crash re-does the run's dates next time; re-running with nothing
changed does nothing.

Invariants:
- Missing, unreadable, of another format or another sampling period: no
  manifest, i.e. a full run.
- Group keys are unescaped names (history.py and Spark escape differently).
- A date leaves the manifest when it leaves the history (retention).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from urllib.parse import unquote

from spark_rollups.storage import PartitionFiles

__all__ = ["FORMAT", "MANIFEST_NAME", "Manifest", "Plan", "next_manifest", "parse", "plan_run"]

FORMAT = "grstats-rollup-manifest/1"
MANIFEST_NAME = "_rollup_manifest.json"  # a leading underscore: Spark readers skip it


@dataclass(frozen=True, slots=True)
class Manifest:
    """What the tables under one output root were built from."""

    period_seconds: float
    groups: dict[str, dict[str, str]]  # unescaped group -> date -> segment fingerprint

    def dumps(self) -> str:
        """The manifest as JSON text (sorted keys: stable across runs).

        Returns:
            The file content.
        """
        body = {"format": FORMAT, "period_seconds": self.period_seconds, "groups": self.groups}
        return json.dumps(body, sort_keys=True, indent=1) + "\n"


def parse(text: str | None, period_seconds: float) -> Manifest | None:
    """Read a manifest, or None when it cannot be trusted.

    Args:
        text: the file content (None: no file).
        period_seconds: this run's sampling period (coverage depends on it).

    Returns:
        The manifest; None when missing, corrupt, of another format or built
        with another period (all of which mean a full run).
    """
    if text is None:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        return None
    if body.get("period_seconds") != period_seconds:
        return None
    groups = body.get("groups")
    if not isinstance(groups, dict):
        return None
    clean: dict[str, dict[str, str]] = {}
    for group, dates in groups.items():
        if not isinstance(dates, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in dates.items()):
            return None
        clean[str(group)] = dict(dates)
    return Manifest(period_seconds, clean)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one run reads and writes."""

    dates: dict[str, list[str]]  # escaped group dir value -> dates to roll up
    baselines: dict[str, list[str]]  # escaped group dir value -> dates read for last samples


def _next_day(date: str) -> str:
    return (dt.date.fromisoformat(date) + dt.timedelta(days=1)).isoformat()


def plan_run(
    history: PartitionFiles,
    done: dict[str, set[str]],
    manifest: Manifest | None,
    *,
    since: str | None = None,
    until: str | None = None,
    group: str | None = None,
) -> Plan:
    """Choose the dates to roll up per group.

    Args:
        history: `storage.partition_fingerprints` of the history.
        done: `storage.list_partitions` of an output table (a date without
            output is redone even if the manifest lists it).
        manifest: the previous run's manifest; None = full run.
        since: first date to process (ISO); given, every date from it on is
            redone; None = incremental (changed dates only).
        until: last date to process (ISO); None = no limit.
        group: only this group (unescaped name); None = all.

    Returns:
        The plan; groups with nothing to do are left out.
    """
    dates: dict[str, list[str]] = {}
    baselines: dict[str, list[str]] = {}
    done_dates = {unquote(key): value for key, value in done.items()}
    for key, available in sorted(history.items()):
        name = unquote(key)
        if group is not None and name != group:
            continue
        in_range = {
            d for d in available if (since is None or d >= since) and (until is None or d <= until)
        }
        if since is None:
            seen = {} if manifest is None else manifest.groups.get(name, {})
            rolled = done_dates.get(name, set())
            changed = {d for d in in_range if seen.get(d) != available[d] or d not in rolled}
            changed |= {_next_day(d) for d in changed} & in_range
            in_range = changed
        if not in_range:
            continue
        chosen = sorted(in_range)
        dates[key] = chosen
        before = {(dt.date.fromisoformat(d) - dt.timedelta(days=1)).isoformat() for d in chosen}
        baselines[key] = sorted((before & set(available)) - in_range)
    return Plan(dates, baselines)


def next_manifest(
    previous: Manifest | None, history: PartitionFiles, plan: Plan, period_seconds: float
) -> Manifest:
    """The manifest after a successful run of `plan`.

    Args:
        previous: the manifest the run started from (None: none).
        history: the fingerprints taken before the run read the history.
        plan: what the run rolled up.
        period_seconds: the run's sampling period.

    Returns:
        Processed dates with their fingerprints, other dates as before; dates
        no longer in the history are dropped.
    """
    groups: dict[str, dict[str, str]] = {}
    for key, available in history.items():
        name = unquote(key)
        old = {} if previous is None else previous.groups.get(name, {})
        processed = set(plan.dates.get(key, ()))
        entry = {
            d: fingerprint if d in processed else old[d]
            for d, fingerprint in available.items()
            if d in processed or d in old
        }
        if entry:
            groups[name] = entry
    return Manifest(period_seconds, groups)
