"""The `ext` section declarations (core/sections.py) and what is tied to them.

The places that once listed the sections by hand (protocol's self-checked
sections, the history schema, /healthz's counters) must agree with the
declarations; each expectation here is written by hand or read from the
other side, never from the code that loops over the declarations.
"""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core import sections
from grstats.core.records import HISTORY_COLUMNS
from grstats.core.sections import SECTIONS, Cadence, HistoryContext, declared
from grstats.core.snapshot import DaemonCounters
from protocol.envelope_read import SELF_CHECKED_SECTIONS
from tests.fixtures.member_tables import local_sample

# the sections a member sends, as DESIGN.md section 3 and PROTOCOL.md name them
WRITTEN_BY_HAND = {
    "communication_stack",
    "lag",
    "applier",
    "gtids",
    "commit_path",
    "commit_path_comm",
}


def test_every_section_the_design_names_is_declared_once() -> None:
    names = [s.name for s in SECTIONS]
    assert len(names) == len(set(names))
    assert set(names) == WRITTEN_BY_HAND


def test_the_protocols_self_checked_sections_are_the_declared_ones() -> None:
    assert declared().self_checked == SELF_CHECKED_SECTIONS


def test_only_the_gtid_state_has_the_gtid_interval_cadence() -> None:
    assert [s.name for s in SECTIONS if s.cadence is Cadence.GTID_INTERVAL] == ["gtids"]
    assert declared().by_name["gtids"].min_gap_s(1.0, 30.0) == 15.0
    assert declared().by_name["lag"].min_gap_s(1.0, 30.0) is None


def test_each_history_block_is_in_the_history_schema_in_order() -> None:
    schema = [name for name, _ in HISTORY_COLUMNS]
    for section in declared().history:
        block = list(section.history_columns)
        assert block, section.name
        start = schema.index(block[0])
        assert schema[start : start + len(block)] == block, section.name


def test_each_history_hook_fills_exactly_its_block() -> None:
    sample = local_sample()
    for section in declared().history:
        assert section.history is not None
        kept = section.keep(None, section.outgoing(sample), sample.stats)
        got = section.history(kept, HistoryContext(0.0))
        assert set(got) in (set(), set(section.history_columns)), section.name


def test_healthz_names_every_malformed_counter() -> None:
    counters = DaemonCounters(malformed={"lag": 1, "applier": 2, "gtids": 3, "commit_path": 4})
    flat = counters.as_dict()
    assert flat["envelopes_lag_malformed"] == 1
    assert flat["envelopes_applier_malformed"] == 2
    assert flat["envelopes_gtids_malformed"] == 3
    assert flat["envelopes_commit_path_malformed"] == 4
    assert counters.malformed["commit_path"] == 4


def test_another_tuple_of_sections_is_seen_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    first = declared()
    assert declared() is first  # computed once per tuple
    extra = dataclasses.replace(SECTIONS[1], name="probe")
    monkeypatch.setattr(sections, "SECTIONS", (*SECTIONS, extra))
    assert "probe" in declared().names
    monkeypatch.undo()
    assert "probe" not in declared().names
