"""bench_daemon's I/O floor and what the MySQL server pays, beside mysqld_exporter's default scrape.

The floor (`_bench_roles.role_floor`) is one process doing only what any
daemon doing grstats' job cannot avoid. What it replays is taken from a
running production daemon, not written here: its COM_QUERY texts as its fake
server received them (the first poll's, the every-poll batch, the cadence
reads), its WAL bytes per second (its history directory's growth) and its
envelopes (the broker's retained copies, read by the floor itself).

The server's side comes from each fake server's own figures
(`_bench_mimic.ServerLoad`): round trips, statements, rows and polls counted
by the server, bytes from the kernel's TCP_INFO of its sockets.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _bench_procs import SCRIPT, Procs, member_uuid

# cadence.REREAD_S: the mysql source's slowly-changing reads (communication info, ...)
CADENCE_S = 30.0
GTID_INTERVAL_S = 30.0  # [publish] gtid_interval's default
MYSQL_PASSWORD = "pw"  # tests/fixtures/fake_mysql.py's account
# what every poll reads (tests/fixtures/mysql_source.py: the fake counts its polls by it)
STATS_TABLE = "replication_group_member_stats"


def server_load(ready: Path) -> dict[str, Any]:
    """The figures a mimic process last wrote for its (one) server."""
    loads: list[dict[str, Any]] = json.loads(ready.with_suffix(".stats.json").read_text())
    return loads[0]


@dataclass
class FloorPlan:
    """What the floor replays, taken from one running daemon."""

    first: str  # the first poll's COM_QUERY (the session's time zone set first)
    every: str  # the every-poll batch
    cadence: list[str]  # the reads made at the daemon's cadence
    wal_bytes: int  # WAL bytes appended per second

    def as_json(self, mysql_port: int, wal: Path) -> str:
        return json.dumps(
            {
                "first": self.first,
                "every": self.every,
                "cadence": self.cadence,
                "cadence_s": CADENCE_S,
                "password": MYSQL_PASSWORD,
                "mysql_port": mysql_port,
                "wal": str(wal),
                "wal_bytes": self.wal_bytes,
                "gtid_interval_s": GTID_INTERVAL_S,
            }
        )


def _wal_size(history: Path) -> int:
    return sum(p.stat().st_size for p in (history / "wal").glob("wal-*.log"))


def _every_poll(texts: list[list[Any]]) -> str | None:
    """The every-poll batch among a server's counted texts: the most frequent one reading
    the stats table, seen at least twice (None before). Not the most frequent text of all:
    a daemon that reconnected at its first polls (a poll_timeout on a loaded box) had sent
    asyncmy's `SET AUTOCOMMIT = 1` as often, and the floor then replayed that statement
    alone, not the batch (26x fewer bytes read)."""
    polls = [(t, n) for t, n in texts if STATS_TABLE in t and not t.startswith("SET ")]
    best = max(polls, key=lambda tn: tn[1], default=None)
    return best[0] if best is not None and best[1] >= 2 else None


def capture(ready: Path, history: Path, timeout: float = 60.0) -> FloorPlan:
    """The floor's plan from the daemon polling `ready`'s server and writing `history`.

    Waits for three polls, two of them on one connection (a loaded box's first
    polls may each time out and reconnect), then measures the WAL's growth over
    three seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            load = server_load(ready)
        except (OSError, ValueError):
            load = {"polls": 0}
        if load["polls"] >= 3 and _every_poll(load.get("texts", [])) is not None:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the daemon never polled its server twice on one connection: {ready}"
            )
        time.sleep(0.2)
    size0, t0 = _wal_size(history), time.monotonic()
    time.sleep(3.0)
    wal_bytes = int((_wal_size(history) - size0) / (time.monotonic() - t0))
    texts = [t for t, _ in server_load(ready)["texts"]]
    every = _every_poll(server_load(ready)["texts"])
    assert every is not None  # the wait above saw it
    first = next(t for t in texts if t.startswith("SET @@session.time_zone"))
    # asyncmy's own SET AUTOCOMMIT at connect is the floor's too; the rest are cadence reads
    cadence = [t for t in texts if t not in (every, first) and not t.startswith("SET ")]
    return FloorPlan(first, every, cadence, max(wal_bytes, 1))


def start_floor(
    procs: Procs, workdir: Path, broker: int, seconds: float, *, plan: FloorPlan, mysql_port: int
) -> subprocess.Popen[bytes]:
    spec = workdir / "floor.json"
    spec.write_text(plan.as_json(mysql_port, workdir / "floor.wal"))
    argv = [sys.executable, SCRIPT, "--role", "floor", "--port", str(broker)]
    argv += ["--member", member_uuid(98, 1), "--seconds", str(seconds), "--floor", str(spec)]
    return procs.start(argv, workdir / "floor.log")


def mysql_figures(
    before: dict[str, Any], after: dict[str, Any], seconds: float
) -> dict[str, float]:
    """Per poll and per second, what one server paid between two readings of its figures."""
    polls = max(after["polls"] - before["polls"], 1)
    out: dict[str, float] = {"polls_per_s": polls / seconds}
    for key in ("round_trips", "statements", "rows", "bytes_sent", "bytes_received"):
        delta = after[key] - before[key]
        out[key] = delta / polls
        out[key + "_per_s"] = delta / seconds
    return out


def print_mysql(rows: list[tuple[str, dict[str, float]]]) -> None:
    """The per-poll MySQL figures of each reader, then mysqld_exporter's default scrape."""
    print("    what the MySQL server pays, per poll (per second), from the fake servers' counts:")
    for name, f in rows:
        print(
            f"      {name:<26} {f['polls_per_s']:.2f} polls/s: "
            f"{f['round_trips']:.2f} round trips ({f['round_trips_per_s']:.2f}/s), "
            f"{f['statements']:.1f} statements ({f['statements_per_s']:.1f}/s), "
            f"{f['rows']:.1f} rows ({f['rows_per_s']:.1f}/s), "
            f"{f['bytes_sent'] / 1024:.1f} KiB read ({f['bytes_sent_per_s'] / 1024:.1f} KiB/s), "
            f"{f['bytes_received'] / 1024:.1f} KiB of statements "
            f"({f['bytes_received_per_s'] / 1024:.1f} KiB/s)"
        )
    for line in EXPORTER_LINES:
        print("      " + line)


# mysqld_exporter v0.20.0's default scrape, from its own documentation and code (nothing run
# here): README.md "Collector Flags" marks collect.global_status, collect.global_variables and
# collect.slave_status "(Enabled by default)"; mysqld_exporter.go's `scrapers` map also
# enables collect.info_schema.innodb_cmp, innodb_cmpmem and query_response_time. Each scrape
# (collector/exporter.go `scrape`) opens a new connection (TCP + login, the DSN's
# `SET lock_wait_timeout=2`: its README, exporter.enable_lock_wait_timeout "(default:
# true)"), runs `SELECT @@version` and a ping, then each collector:
# SHOW GLOBAL STATUS and SHOW GLOBAL VARIABLES (every row of each), the slave status (its
# loop tries SHOW ALL SLAVES STATUS and three suffixes before SHOW SLAVE STATUS, and on 8.4,
# where SHOW SLAVE STATUS is gone, three more before SHOW REPLICA STATUS: 5 statements on
# 8.0, 9 on 8.4), the two innodb_cmp SELECTs and SELECT @@query_response_time_stats
# (refused by Oracle MySQL: Percona Server's variable). Its interval is Prometheus':
# scrape_interval, "default = 1m" (prometheus.io/docs/prometheus/latest/configuration/
# configuration/, global), 15 s in Prometheus' example prometheus.yml.
EXPORTER_LINES = (
    'mysqld_exporter v0.20.0, default collectors (its README\'s "Collector Flags" and '
    "mysqld_exporter.go), per scrape:",
    "  a new connection (TCP, login, SET lock_wait_timeout=2), SELECT @@version, a ping, "
    "SHOW GLOBAL STATUS and SHOW GLOBAL VARIABLES (every row: hundreds each),",
    "  5 (8.0) or 9 (8.4) slave/replica status statements, 2 innodb_cmp SELECTs, "
    "SELECT @@query_response_time_stats: 12 (8.0) / 16 (8.4) statements,",
    "  each its own round trip, plus the ping and the login's; at Prometheus' default "
    "scrape_interval of 1 min (0.2-0.27 statements/s), 15 s in its example config (0.8-1.1/s)",
)
