"""Every counter of every `ext` section is on /metrics, from zero (issue 40).

The expected series are derived here from the declarations
(`core.sections.SECTIONS`) by the naming rule written out below, and checked
against a real exposition; `grstats_envelopes_commit_path_malformed_total`
(counted and in /healthz, once missing from /metrics) is named by hand.
"""

from __future__ import annotations

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from grstats.api.metrics import build_registry
from grstats.core.sections import SECTIONS
from grstats.core.tables import MemberTables
from tests.fixtures.member_tables import GROUP, LOCAL

T0 = 1_700_000_000_000_000


def _exposed() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    snapshot = MemberTables(group=GROUP, local_member_id=LOCAL).snapshot(T0)
    text = generate_latest(build_registry(lambda: snapshot)).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_every_section_counter_is_exported_from_zero() -> None:
    expected = set()
    for section in SECTIONS:
        if section.counter:
            expected.add((f"grstats_envelopes_{section.counter}_malformed_total", ()))
        if section.encode is not None:
            label = (("section", section.name),)
            expected.add(("grstats_ext_sections_unsendable_total", label))
        if section.left_out_counter:
            expected.add((f"grstats_{section.left_out_counter}_total", ()))
    exposed = _exposed()
    missing = expected - set(exposed)
    assert not missing
    assert all(exposed[key] == 0 for key in expected)


def test_the_commit_path_malformed_counter_is_exported() -> None:
    assert ("grstats_envelopes_commit_path_malformed_total", ()) in _exposed()
