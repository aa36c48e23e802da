"""`grstats stats|members|status|lag|flow`: the tables, as the mysql client shows them.

Strategy: each command reads one table, either from the local daemon's HTTP
API (default) or straight from the broker's retained topics (`--bus`), and
prints it with `grstats.cli.render`. The options and the choice of reader are
shared with `grstats watch` through `grstats.cli.readers`.

Invariants: a failure the user can cause prints one line on stderr and exits
non-zero (1: could not read; 2: bad arguments or config) — never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import click

from grstats.cli import render
from grstats.cli.readers import TableReader, read_options
from grstats.core.snapshot import (
    APPLIER_METRICS_COLUMNS,
    APPLIER_METRICS_TABLE,
    APPLIER_WORKERS_COLUMNS,
    APPLIER_WORKERS_TABLE,
    FLOW_CONTROL_COLUMNS,
    FLOW_CONTROL_TABLE,
    MEMBER_LAG_COLUMNS,
    MEMBER_LAG_TABLE,
    MEMBER_STATS_COLUMNS,
    MEMBER_STATS_TABLE,
    MEMBER_STATUS_COLUMNS,
    MEMBER_STATUS_TABLE,
    MEMBERS_COLUMNS,
    MEMBERS_TABLE,
)

__all__ = [
    "COLUMNS",
    "flow_command",
    "lag_command",
    "members_command",
    "stats_command",
    "status_command",
]

COLUMNS: Mapping[str, Sequence[str]] = {
    MEMBER_STATS_TABLE: MEMBER_STATS_COLUMNS,
    MEMBERS_TABLE: MEMBERS_COLUMNS,
    MEMBER_STATUS_TABLE: MEMBER_STATUS_COLUMNS,
    MEMBER_LAG_TABLE: MEMBER_LAG_COLUMNS,
    FLOW_CONTROL_TABLE: FLOW_CONTROL_COLUMNS,
    APPLIER_METRICS_TABLE: APPLIER_METRICS_COLUMNS,
    APPLIER_WORKERS_TABLE: APPLIER_WORKERS_COLUMNS,
}


def _make_command(name: str, table: str, summary: str, example: str) -> click.Command:
    @click.command(
        name=name,
        help=f"{summary}\n\n\b\nExamples:\n{example}",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @read_options
    @click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json", "csv"]),
        default="table",
        show_default=True,
        help="Output format.",
    )
    @click.option(
        "--vertical",
        "-E",
        "vertical",
        is_flag=True,
        help="One column per line, like the mysql client's \\G.",
    )
    def command(*, reader: TableReader, fmt: str, vertical: bool) -> None:
        rows = reader.read([table])[table]
        if vertical and fmt == "table":
            fmt = "vertical"
        click.echo(render.render(fmt, rows, COLUMNS[table]), nl=False)

    return command


stats_command = _make_command(
    "stats",
    MEMBER_STATS_TABLE,
    "Show replication_group_member_stats for every member of the group.",
    "  grstats stats                           # from the local daemon\n"
    "  grstats stats --vertical                # like the mysql client's \\G\n"
    "  grstats stats --format csv > stats.csv\n"
    "  grstats stats --bus mqtt.example:1883   # straight from the broker, no daemon",
)
members_command = _make_command(
    "members",
    MEMBERS_TABLE,
    "Show replication_group_members (state, role, version) for every member.",
    "  grstats members\n"
    "  grstats members --api http://10.0.0.5:8437 --format json\n"
    "  grstats members --bus 127.0.0.1:1883 --group aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
)
status_command = _make_command(
    "status",
    MEMBER_STATUS_TABLE,
    "Show grstats_member_status: last seen, seq, incarnation, accepted/rejected per member.",
    "  grstats status\n"
    "  grstats status --vertical\n"
    "  grstats status --config /etc/grstats/grstats.toml",
)
lag_command = _make_command(
    "lag",
    MEMBER_LAG_TABLE,
    "Show replication_group_member_lag: per member and channel, the last queued, "
    "processed and applied transactions with their timestamps (UTC), the one being "
    "applied, and the lags: REPLICATION_LAG as MySQL Shell's cluster.status() "
    "computes it, queue and apply lag, apply time, and each member's clock offset.",
    "  grstats lag --vertical                  # one member and channel per block\n"
    "  grstats lag --format json | jq '.[] | {MEMBER_ID, REPLICATION_LAG}'\n"
    "  grstats lag --bus 127.0.0.1:1883        # straight from the broker, no daemon",
)
flow_command = _make_command(
    "flow",
    FLOW_CONTROL_TABLE,
    "Show grstats_flow_control: this daemon's replay of MySQL's QUOTA flow control "
    "over every member's stats — which member holds the group back (BOTTLENECK, "
    "EXCESS_OVER_THRESHOLD, since when), the quota the group computes (0 = unlimited), "
    "throttled seconds, and each member's applier catch-up ETA and failover readiness; "
    "the local server's own Gr_flow_control_throttle_* figures where it has them.",
    "  grstats flow                            # who is slowing the group down\n"
    "  grstats flow --format json | jq '.[] | select(.BOTTLENECK != \"\")'\n"
    "  grstats flow --bus 127.0.0.1:1883        # straight from the broker (one period)",
)
