"""The `ext` sections' counters on /metrics, every one from its declaration.

Strategy: `core.sections` declares each section's counters (malformed,
unsendable, left out, over its cadence); this module turns a snapshot's
`DaemonCounters` into their families by looping over the declarations, so a
new section's counters are exported with no edit here, and each series is
present from zero (a counter that appears only once it counts hides its
first increase from `rate()`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, Metric

from grstats.core.sections import declared
from grstats.core.snapshot import DaemonCounters

__all__ = ["counter_by", "section_families"]


def counter_by(
    name: str, help_text: str, label: str, counts: Mapping[str, int] | Mapping[int, int]
) -> Metric:
    """One counter family with a series per `label` value (sorted), from `counts`."""
    family = CounterMetricFamily(name, help_text, labels=(label,))
    for key, count in sorted(counts.items()):
        family.add_metric([str(key)], count)
    return family


def section_families(counters: DaemonCounters) -> Iterator[Metric]:
    """Every section's counter families, named from the declarations.

    Args:
        counters: the snapshot's counters.

    Yields:
        `grstats_envelopes_<counter>_malformed` per malformed counter,
        `grstats_<counter>` per left-out counter, and the by-section families of
        unsendable, unknown (dropped) and over-cadence sections.
    """
    decl = declared()
    for counter in decl.counters:
        yield CounterMetricFamily(
            f"grstats_envelopes_{counter}_malformed",
            decl.help[counter],
            value=counters.malformed.get(counter, 0),
        )
    for section in decl.sections:
        if section.left_out_counter:
            yield CounterMetricFamily(
                f"grstats_{section.left_out_counter}",
                section.left_out_help,
                value=counters.left_out.get(section.left_out_counter, 0),
            )
    # by section, every declared one from zero: (metric, help, sections, counts)
    by_section = (
        (
            "grstats_ext_sections_unsendable",
            "Local samples published without their ext section because the wire refused "
            "one of its figures, by section.",
            decl.encoded,
            counters.sections_unsendable,
        ),
        (
            "grstats_ext_sections_over_cadence",
            "Sections of received envelopes dropped unread because their member sent them "
            "sooner than their cadence allows (ext.gtids: once per gtid_interval), by section.",
            tuple(sorted(decl.gated_names)),
            counters.over_cadence,
        ),
    )
    for name, help_text, sections, counts in by_section:
        yield counter_by(name, help_text, "section", {**dict.fromkeys(sections, 0), **counts})
    yield counter_by(
        "grstats_ext_sections_dropped",
        "Unknown ext sections of received envelopes skipped unread at admission "
        "(never stored), by section name.",
        "section",
        counters.ext_dropped,
    )
