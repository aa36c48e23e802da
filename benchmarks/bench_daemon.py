"""Daemon footprint and receive throughput, each beside bare aiomqtt in the same run.

Usage: python benchmarks/bench_daemon.py [--seconds 120] [--fanin-seconds 20]
                                         [--publishers 2] [--members 300]
                                         [--skip-steady] [--skip-fanin]
                                         [--production] [--prod-daemons 3]
                                         [--compare-tree DIR] [--flush-interval S]
                                         [--commit-path-pair] [--pair-rounds 2]
                                         [--commit-path-pair --production] [--pair-version 8.4]

(a) steady state: 9 `grstats run` daemons (simulated source, period 1 s) and
    one bare aiomqtt process doing the same exchange (publish one
    pre-encoded envelope per second, retained, and drain the group's topics)
    on a private Mosquitto for `--seconds`. After a 5 s warm-up, CPU % of one
    core from /proc/<pid>/stat (utime + stime deltas over the window) and RSS
    from /proc/<pid>/status. Goals: < 1 % CPU and < 80 MB RSS per daemon.
(b) fan-in: one daemon's receive path (decode, validate, apply to the tables)
    while `--publishers` processes publish pre-encoded envelopes of
    `--members` members each (seq increasing, so every one is acceptable) as
    fast as they can, bounded in count and time. Accepted envelopes per second
    from the daemon's counters (/healthz), then the same load against a bare
    aiomqtt subscriber that only counts messages. Goal: daemon >= 0.6 x bare.

(c) collector fan-in (`--fanin` runs only this): the same publishers against,
    back to back in one run, a bare aiomqtt subscriber, a raw `mosquitto_sub
    -C N` consumer, grstats' Bus counting only (as it reads now, through its
    socket tap, and with paho reading every packet: the floor issue 44 was
    filed against), one `grstats collect` (and, with `--compare-tree DIR`, one
    of that checkout) and two of them in one shared group (`[bus]
    shared_group`), each collector with history on (WAL fsync every second,
    Parquet at stop; the Parquet rows are counted after the stop), the
    publishers started once the collector's own start-up CPU has settled.
    Envelopes/s from the first to the last accepted one (/healthz polled every
    0.1 s), CPU per envelope, the load average before each. Goals: one collector
    >= 25 k envelopes/s; two >= 1.8 x one (only meaningful with two free cores:
    the broker and the publishers share them here).

(d) production configuration (`--production` runs only this; also after (a)):
    `grstats run` daemons with the mysql source, each reading its own fake
    MySQL 8.4 server (tests/fixtures/fake_mysql.py, served by
    benchmarks/_bench_mimic.py in another process so the fakes' SQL is not the
    daemons' cost), history on, period 1 s; `--prod-daemons` with `[sql]` off
    and as many with it on, beside one bare aiomqtt process and the I/O floor
    (_bench_floor.py: one process doing only what cannot be avoided -- the
    same MQTT exchange with a daemon's own envelopes, the daemon's exact
    statements over asyncmy to a fake server of its own each period, the
    daemon's WAL bytes appended and fsynced each second), in one window. CPU %
    as ratios to both (grstats' own cost: the daemon's CPU minus the floor's),
    RSS to the bare process (with [sql] also the daemon plus its endpoint's
    process, which starts only on a first connection: +MB over [sql] off);
    what each fake server paid per poll and per second (round trips,
    statements, rows, bytes), beside mysqld_exporter's default scrape; after
    the window, the first SQL query of each [sql]-on daemon (its endpoint's
    process started by it) and the next. `--compare-tree DIR` adds another
    checkout's daemons (both rows) to the same window: before / after, back to
    back. Goals: <= 1.5x the floor's CPU, <= 1.5x RSS, <= +20 MB for [sql] unused.

(e) commit-path pair (`--commit-path-pair` runs only this; issue 27): (a)'s 9
    daemons at the default MySQL version (ext.commit_path sent) and at
    `[simulated] version = "8.0.22"` (no Gr_* variables: no section),
    alternating `--pair-rounds` times, `--seconds` each, each phase beside its
    own bare aiomqtt process on a fresh broker. CPU and RSS of each phase, the
    ratio with/without (goal: <= 1.05x), and one daemon's commit-path row count
    per phase (all members with, none without).

(f) production commit-path pair (`--commit-path-pair --production`; issue 27):
    (d)'s daemons ([sql] off, `--prod-daemons` of them) against fake servers
    of `--pair-version` (8.4 or 9.x: the Gr_* variables and
    replication_group_communication_information shown, the counters growing)
    vs fake 8.0 servers (neither; shapes from MySQL's definitions), alternating
    as (e), each phase on a fresh broker beside its own bare aiomqtt process.
    The ratio with/without (goal: <= 1.05x) includes the daemons' own reading
    and parsing of those figures.

The scenarios live in _bench_steady.py (a, d), _bench_fanin.py (b, c),
_bench_pair.py (e, f); the child processes' roles in _bench_roles.py; the
plumbing in _bench_procs.py.

Figures only; nothing is asserted. Only processes started here are signalled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from _bench_fanin import fanin, fanin_collectors
from _bench_pair import commit_path_pair, production_pair
from _bench_roles import (
    role_bare_steady,
    role_bare_sub,
    role_bus_sub,
    role_floor,
    role_publisher,
)
from _bench_steady import production, steady
from _common import machine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--fanin-seconds", type=float, default=20.0)
    parser.add_argument("--publishers", type=int, default=2)
    parser.add_argument("--members", type=int, default=300)
    parser.add_argument("--per-member", type=int, default=200)
    parser.add_argument("--skip-steady", action="store_true")
    parser.add_argument("--skip-fanin", action="store_true")
    parser.add_argument("--fanin", action="store_true", help="only (c): collectors, 1 and 2")
    parser.add_argument("--production", action="store_true", help="only (d): mysql + history")
    parser.add_argument("--flush-interval", type=float, help="(d) [history] flush_interval")
    parser.add_argument("--prod-daemons", type=int, default=3, help="(d) daemons per [sql] row")
    parser.add_argument(
        "--compare-tree", type=Path, help="(d) another checkout's daemons in the same window"
    )
    parser.add_argument("--commit-path-pair", action="store_true", help="only (e): issue 27")
    parser.add_argument("--pair-rounds", type=int, default=2, help="(e) with/without rounds")
    parser.add_argument("--pair-daemons", type=int, default=9, help="(e) daemons per phase")
    parser.add_argument("--pair-version", choices=("8.4", "9.x"), default="8.4", help="(f)")
    # child roles
    parser.add_argument(
        "--role",
        choices=("bare-steady", "bare-sub", "bus-sub", "bus-sub-paho", "publisher", "floor"),
    )
    parser.add_argument("--floor", type=Path, help="(floor role) what it replays, as JSON")
    parser.add_argument("--port", type=int)
    parser.add_argument("--member")
    parser.add_argument("--family", type=int, default=10)
    parser.add_argument("--idle", type=float, default=2.0)
    parser.add_argument("--ready")
    args = parser.parse_args(argv)
    if args.role == "bare-steady":
        asyncio.run(role_bare_steady(args.port, args.member, args.seconds))
        return 0
    if args.role == "floor":
        floor = json.loads(args.floor.read_text())
        asyncio.run(role_floor(args.port, args.member, args.seconds, floor))
        return 0
    if args.role == "bare-sub":
        asyncio.run(role_bare_sub(args.port, args.idle, args.seconds, args.ready))
        return 0
    if args.role in ("bus-sub", "bus-sub-paho"):
        paho = args.role == "bus-sub-paho"
        asyncio.run(role_bus_sub(args.port, args.idle, args.seconds, args.ready, paho=paho))
        return 0
    if args.role == "publisher":
        role_publisher(args.port, args.family, args.members, args.per_member, args.seconds)
        return 0
    print(machine(f"load average {os.getloadavg()[0]:.2f}"))
    if args.fanin:
        fanin_collectors(args)
        return 0
    if args.commit_path_pair and args.production:
        production_pair(args.seconds, args.pair_rounds, args.prod_daemons, args.pair_version)
        return 0
    if args.production:
        production(args.seconds, args.prod_daemons, args.flush_interval, args.compare_tree)
        return 0
    if args.commit_path_pair:
        commit_path_pair(args.seconds, args.pair_rounds, args.pair_daemons)
        return 0
    if not args.skip_steady:
        steady(args.seconds)
        production(args.seconds, args.prod_daemons, args.flush_interval)
    if not args.skip_fanin:
        fanin(args)
        fanin_collectors(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
