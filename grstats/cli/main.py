"""`grstats` entry point.

Strategy: each sub-command lives in its own module under `grstats.cli.commands` and
exposes a `click.Command` named `command`. The group imports a module only when
its command runs (or when --help lists it), so `grstats decode` never pays for
pyarrow or aiomqtt imports.

Logging is configured once per process: here for the client commands (errors
only: a reader reports a failure as one line itself, so the bus's reconnect
warnings would be noise), and by `grstats.daemon.process.run_process` for
`run` and `collect`, whose level and format come from their config file.
"""

from __future__ import annotations

import importlib

import click

# command name -> module under grstats.cli.commands (each defines `command`)
_COMMANDS: dict[str, str] = {
    "run": "run",
    "collect": "collect",
    "stats": "tables",
    "members": "tables",
    "status": "tables",
    "lag": "tables",
    "flow": "tables",
    "table": "tables",
    "applier": "applier",
    "gtids": "gtids",
    "channels": "channels",
    "commit-path": "commit_path",
    "watch": "watch",
    "decode": "decode",
    "binlog": "binlog",
    "simulate": "simulate",
    "demo": "demo",
    "sql": "sql",
    "init": "init",
    "check": "check",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in _COMMANDS if self._load(name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(cmd_name)

    @staticmethod
    def _load(name: str) -> click.Command | None:
        module_name = _COMMANDS.get(name)
        if module_name is None:
            return None
        try:
            module = importlib.import_module(f"grstats.cli.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"grstats.cli.commands.{module_name}":
                return None  # command not part of this build
            raise
        found = getattr(module, name.replace("-", "_") + "_command", None) or getattr(
            module, "command", None
        )
        return found if isinstance(found, click.Command) else None


# Commands that configure logging themselves, from their config file.
_DAEMON_COMMANDS = ("run", "collect")


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="grstats")
@click.pass_context
def main(ctx: click.Context) -> None:
    """grstats: MySQL Group Replication member statistics for every member.

    \b
    Examples:
      grstats run --config /etc/grstats/grstats.toml   # the member daemon
      grstats stats                                    # replication_group_member_stats
      grstats lag                                      # replication lag by stage, every member
      grstats applier --explain                        # why each member's applier is slow
      grstats gtids --explain                          # errant GTIDs and how to fix them
      grstats decode 0100000010001000...               # decode a captured message
      grstats binlog --summary relay-bin.000042        # hop delays from a relay log
    """
    if ctx.invoked_subcommand not in _DAEMON_COMMANDS:
        from grstats.logs import configure_logging  # noqa: PLC0415 - structlog only when run

        configure_logging(level="error")
