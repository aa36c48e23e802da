"""The daemon process's own metrics: process_*, python_*, build info, the API's bounds.

Strategy: prometheus_client's process, platform and GC collectors are
registered in a registry of our own (never the global one, so importing
grstats registers nothing and two servers in one process do not clash),
next to two small collectors: the build and the API's counters. The API's
counters come from `get_api_stats`, a frozen `ApiStats` copy per scrape.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterator
from importlib import metadata

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from grstats.api.health import API_REFUSE_REASONS, API_TIMEOUT_PHASES, ApiStats
from grstats.api.live import LivePage

__all__ = [
    "ApiCollector",
    "BoottimeProcessCollector",
    "BuildInfoCollector",
    "PageCollector",
    "process_registry",
    "register_process_collectors",
]


class BoottimeProcessCollector(ProcessCollector):
    """prometheus_client's process collector, also under systemd's `ProcSubset=pid`.

    The stock collector exports nothing when it cannot read the boot time from
    /proc/stat, which `ProcSubset=pid` (systemd/grstats.service) hides; the
    boot time is then the wall clock minus CLOCK_BOOTTIME, the same instant to
    within the clocks' adjustment.
    """

    def _boot_time(self) -> float:
        try:
            # untyped in prometheus_client; returns the float from /proc/stat
            return float(super()._boot_time())  # type: ignore[no-untyped-call]
        except OSError:
            return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


def _version() -> str:
    try:
        return metadata.version("grstats")
    except metadata.PackageNotFoundError:
        return "unknown"


class BuildInfoCollector(Collector):
    """`grstats_build_info{version, python} 1`, like every Prometheus exporter's build info."""

    def __init__(self) -> None:
        self._labels = [_version(), platform.python_version()]

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "grstats_build_info",
            "grstats version and the Python running it; 1.",
            labels=("version", "python"),
        )
        info.add_metric(self._labels, 1)
        yield info


class ApiCollector(Collector):
    """The HTTP API's connection counters; reads one `ApiStats` per scrape."""

    def __init__(self, get_stats: Callable[[], ApiStats]) -> None:
        self._get_stats = get_stats

    def collect(self) -> Iterator[Metric]:
        stats = self._get_stats()
        yield GaugeMetricFamily(
            "grstats_api_connections_open",
            "HTTP API connections being served now.",
            value=stats.open,
        )
        yield GaugeMetricFamily(
            "grstats_api_connections_max",
            "The HTTP API's connection cap; connections past it are refused with 503.",
            value=stats.max_connections,
        )
        yield CounterMetricFamily(
            "grstats_api_connections_accepted",
            "HTTP API connections accepted for serving (refused ones not included).",
            value=stats.accepted,
        )
        refused = CounterMetricFamily(
            "grstats_api_connections_refused",
            "HTTP API connections refused: over the cap (limit), request head too "
            "large (too_large), unparseable request line (bad_request).",
            labels=("reason",),
        )
        for reason in API_REFUSE_REASONS:
            refused.add_metric([reason], stats.refused.get(reason, 0))
        yield refused
        timed_out = CounterMetricFamily(
            "grstats_api_connections_timed_out",
            "HTTP API connections dropped for slowness: request head not received "
            "in time (read), answer not taken in time (write).",
            labels=("phase",),
        )
        for phase in API_TIMEOUT_PHASES:
            timed_out.add_metric([phase], stats.timed_out.get(phase, 0))
        yield timed_out


class PageCollector(Collector):
    """The live page's figures: its recent series' bytes and refusals, pages made."""

    def __init__(self, page: LivePage) -> None:
        self._page = page

    def collect(self) -> Iterator[Metric]:
        recent = self._page.recent
        yield CounterMetricFamily(
            "grstats_page_renders",
            "Live pages and /v1/live bodies made (each shared by every reader of its snapshot).",
            value=self._page.renders,
        )
        if recent is None:
            return
        yield GaugeMetricFamily(
            "grstats_page_series_bytes",
            "Bytes the live page's last 15 minutes of every member take, as counted "
            "against [api] page_series_bytes.",
            value=recent.bytes,
        )
        yield CounterMetricFamily(
            "grstats_page_series_refused",
            "Member points refused at [api] page_series_bytes (those members get no sparkline).",
            value=recent.refused,
        )


def register_process_collectors(
    registry: CollectorRegistry, get_api_stats: Callable[[], ApiStats] = ApiStats
) -> None:
    """Add process_*, python_*, grstats_build_info and grstats_api_* to `registry`.

    Args:
        registry: a registry of our own (never prometheus_client's global one).
        get_api_stats: the API server's counters now; the default exposes zeros
            (for an exposition without a server, as in tests).
    """
    BoottimeProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(BuildInfoCollector())
    registry.register(ApiCollector(get_api_stats))


def process_registry(get_api_stats: Callable[[], ApiStats] = ApiStats) -> CollectorRegistry:
    """A fresh registry of the process's own metrics (see `register_process_collectors`)."""
    registry = CollectorRegistry(auto_describe=False)
    register_process_collectors(registry, get_api_stats)
    return registry
