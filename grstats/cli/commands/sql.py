"""`grstats sql`: the MySQL-protocol endpoint alone, over the Parquet history and rollups.

Without a daemon there are no live tables to read: performance_schema's
tables are present with their columns and no rows, so tools that list them
work; `grstats.history` and the rollup tables are served from [sql]
history_dir / rollups_dir (history_dir defaults to [history] dir). For the
live tables, enable [sql] in the daemon (`grstats run` / `grstats collect`).
"""

from __future__ import annotations

import asyncio
import signal
import sys

import click
import structlog

from grstats.cli.commands._common import daemon_options
from grstats.config import ConfigError, load_config
from grstats.logs import configure_logging

log = structlog.get_logger("grstats.sql")


async def _serve(options: object) -> int:
    from grstats.history.tail import tail_of  # noqa: PLC0415 - heavy libraries
    from grstats.sql import SqlOptions, SqlServer  # noqa: PLC0415

    assert isinstance(options, SqlOptions)
    server = SqlServer(options, tail=tail_of(options.history_dir))
    try:
        await server.start()
    except OSError:
        print(f"grstats: sql: {server.failure}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log.info("sql.started", port=server.port, history_dir=options.history_dir)
    await stop.wait()
    await server.close()
    return 0


@click.command("sql")
@daemon_options("The grstats.toml to read [sql] and [history] from.")
def command(config_path: str, log_format: str | None, log_level: str | None) -> None:
    """Serve the history and rollups over the MySQL protocol ([sql] listen must be set).

    \b
    Example:
      grstats sql --config /etc/grstats/grstats.toml
      mariadb -h 127.0.0.1 -P 3307 -u grstats -p -e 'SELECT COUNT(*) FROM grstats.history'
    """
    try:
        settings = load_config(config_path, require_member=False)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(2) from None
    if not settings.sql.enabled:
        print(f"{settings.path}: sql.listen: required for grstats sql", file=sys.stderr)
        raise SystemExit(2)
    configure_logging(log_level or settings.log.level, log_format or settings.log.format)
    raise SystemExit(asyncio.run(_serve(settings.sql.options())))
