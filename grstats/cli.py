"""`grstats` entry point.

Strategy: each sub-command lives in its own module under `grstats.commands` and
exposes a `click.Command` named `command`. The group imports a module only when
its command runs (or when --help lists it), so `grstats decode` never pays for
pyarrow or aiomqtt imports.
"""

from __future__ import annotations

import importlib

import click

# command name -> module under grstats.commands (each defines `command`)
_COMMANDS: dict[str, str] = {
    "run": "run",
    "collect": "collect",
    "stats": "tables",
    "members": "tables",
    "status": "tables",
    "watch": "watch",
    "decode": "decode",
    "binlog": "binlog",
    "simulate": "simulate",
    "demo": "demo",
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
            module = importlib.import_module(f"grstats.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"grstats.commands.{module_name}":
                return None  # command not part of this build
            raise
        found = getattr(module, name.replace("-", "_") + "_command", None) or getattr(
            module, "command", None
        )
        return found if isinstance(found, click.Command) else None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="grstats")
def main() -> None:
    """grstats: MySQL Group Replication member statistics for every member.

    \b
    Examples:
      grstats run --config /etc/grstats/grstats.toml   # the member daemon
      grstats stats                                    # replication_group_member_stats
      grstats decode 0100000010001000...               # decode a captured message
      grstats binlog --summary relay-bin.000042        # hop delays from a relay log
    """
