"""Process entry of `grstats run` and `grstats collect`: config, logging, source, daemon."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import structlog

from grstats.config import ConfigError, Settings, load_config
from grstats.daemon.health import HistorySink
from grstats.daemon.lifecycle import Daemon, StartupError
from grstats.logs import configure_logging
from grstats.sources.base import Source

log = structlog.get_logger("grstats.daemon")


def _make_source(settings: Settings) -> Source:
    if settings.source_kind == "mysql":
        from grstats.sources.mysql import (  # noqa: PLC0415 - asyncmy only when used
            MySQLSettings,
            MySQLSource,
        )

        assert isinstance(settings.source_settings, MySQLSettings)
        return MySQLSource(settings.source_settings)
    from grstats.sources.simulated import (  # noqa: PLC0415 - numpy only when used
        GroupModel,
        SimulatedSource,
        SimulationSettings,
    )

    assert isinstance(settings.source_settings, SimulationSettings)
    return SimulatedSource(GroupModel(settings.source_settings), settings.member.id)


def _make_history(settings: Settings, *, collector: bool) -> HistorySink | None:
    h = settings.history
    if not h.dir:
        return None
    from grstats.history.writer import HistoryWriter  # noqa: PLC0415 - pyarrow only when used

    return HistoryWriter(
        Path(h.dir),
        scope="all" if collector else h.scope,
        retention_days=h.retention_days,
        flush_interval_s=h.flush_interval,
        flush_bytes=h.flush_bytes,
        fsync_interval_s=h.fsync_interval,
        max_buffer_rows=h.max_buffer_rows,
        retry_max_s=h.retry_max,
        log_interval_s=h.log_interval,
        instance=history_instance(settings, collector=collector),
        # a member daemon writes Parquet in short-lived children and never holds pyarrow;
        # a collector's rows make Parquet a steady job, done in its own writer thread
        offload=not collector,
    )


def history_instance(settings: Settings, *, collector: bool) -> str:
    """What tells this process's history writer apart from others of its host.

    The writer id in file names is derived from the host name and this: a
    member daemon is its member; a collector is "collector", or with a
    `[bus] client_id` "collector-<client_id>", so several collectors on one
    host (each with its own MQTT client id) share one tree without clashing,
    and a restarted collector keeps its id and replays its own WAL.
    """
    if not collector:
        return settings.member.id
    client_id = settings.bus.client_id
    return f"collector-{client_id}" if client_id else "collector"


async def _async_main(daemon: Daemon) -> int:
    daemon.install_signal_handlers()
    return await daemon.run()


def run_process(
    config_path: str,
    *,
    collector: bool,
    log_format: str | None = None,
    log_level: str | None = None,
) -> int:
    """Load the configuration, configure logging once, run the daemon to completion.

    Args:
        config_path: the TOML file.
        collector: run the collector instead of a member daemon.
        log_format: overrides [log] format.
        log_level: overrides [log] level.

    Returns:
        The exit status: 0 after a clean stop, 2 for a configuration error,
        1 when the daemon cannot start (address in use, unusable history dir).
    """
    try:
        settings = load_config(config_path, require_member=not collector)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    configure_logging(log_level or settings.log.level, log_format or settings.log.format)
    try:
        source = None if collector else _make_source(settings)
        history = _make_history(settings, collector=collector)
        daemon = Daemon(settings, source, history)
        return asyncio.run(_async_main(daemon))
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except StartupError as exc:
        log.error("daemon.start_failed", error=str(exc))
        print(f"grstats: {exc}", file=sys.stderr)
        return 1
