"""`grstats demo --keep` (`make playground`): start the playground and say what to try.

Strategy: the steps run in the order that keeps the wait short: the broker,
then the week's backfill (`grstats simulate`, the one step every other one
needs), then the three daemons and the Spark rollup at the same time. The
broker and the daemons are detached (they outlive this command); the
backfill and the rollup are ordinary steps, stopped with everything else if
this command fails or is interrupted -- a playground is either left running
whole or not at all.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from grstats.cli.demo import playground as pg
from grstats.cli.demo.mosquitto import find_mosquitto
from grstats.cli.demo.steps import DemoError, note, say, wait_for_members
from grstats.cli.demo.supervisor import (
    Processes,
    forward_output,
    free_port,
    grstats_argv,
    port_accepts,
)
from protocol.humanize import duration

__all__ = ["TRY", "keep", "try_commands"]

GROUP = "dddddddd-0000-4000-8000-000000000042"


def try_commands(history: Path, sql_port: int) -> list[str]:
    """The ten commands worth trying on the playground (the README's "try it" list).

    Args:
        history: the playground's history directory, as the user would type it.
        sql_port: its SQL endpoint's port.

    Returns:
        The command lines.
    """
    return [
        "grstats members",
        "grstats stats",
        "grstats lag",
        "grstats flow",
        f"grstats applier --explain --since 1h --history {history}",
        "grstats gtids --explain",
        "grstats commit-path --explain",
        "grstats watch --count 3",
        "grstats table grstats_member_status",
        f"mariadb -h 127.0.0.1 -P {sql_port} -u {pg.SQL_USER} -p{pg.SQL_PASSWORD} "
        "-e 'SELECT bucket_start, member_id, transactions_checked FROM grstats.member_hour "
        "ORDER BY bucket_start DESC LIMIT 6'",
    ]


TRY = try_commands(Path("demo-out/playground/history"), pg.SQL_PORT)


def _step(processes: Processes, name: str, argv: Sequence[str], logs: Path, **kw: Any) -> None:
    log = logs / f"{name}.log"
    process = processes.start(name, argv, pipe=True, **kw)
    status = forward_output(process, name, log, lambda _line: None, _quiet(name))
    processes.stop(process)
    if status != 0:
        raise DemoError(f"{name} failed (exit status {status}); see {log}")


def _quiet(name: str) -> Any:
    return lambda seconds: note(f"... {name} still running ({duration(seconds)})")


def keep(out: Path) -> None:
    """Start the playground in `<out>/playground` and print what to try.

    Raises:
        DemoError: a step failed (everything started is stopped again).
    """
    base = out / "playground"
    if pg.running(out):
        raise DemoError(f"a playground is already running in {out} (grstats demo --stop)")
    mosquitto = find_mosquitto()
    if mosquitto is None:
        raise DemoError("mosquitto is not installed (make playground installs it)")
    logs = base / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for stale in ("history", "rollups"):
        import shutil  # noqa: PLC0415

        shutil.rmtree(base / stale, ignore_errors=True)
    processes = Processes(base / "keep.pids")
    state: dict[str, Any] = {"processes": [], "members": []}
    began = time.monotonic()
    try:
        _start(processes, state, out, base=base, mosquitto=mosquitto, logs=logs)
    except BaseException:
        pg.stop_entries(state["processes"])
        processes.stop_all()
        raise
    _tell(out, base, state, time.monotonic() - began)


def _start(
    processes: Processes,
    state: dict[str, Any],
    out: Path,
    *,
    base: Path,
    mosquitto: str,
    logs: Path,
) -> None:
    conf, broker_port = pg.write_broker(base)
    say(f"[1/4] a private Mosquitto on 127.0.0.1:{broker_port}")
    broker = processes.start(
        "mosquitto", [mosquitto, "-c", str(conf)], log=logs / "mosquitto.log", detach=True
    )
    pg.record(state, "mosquitto", broker)
    pg.write_state(out, {**state, "ports": [broker_port]})

    first, epoch_s = pg.epoch_of(dt.datetime.now(dt.UTC).date())
    members = [str(m) for m in _member_ids()]
    say(f"[2/4] {pg.DAYS} days of history of 3 simulated members, from {first}")
    _step(
        processes,
        "simulate",
        [
            *grstats_argv(),
            "simulate",
            "--members",
            "3",
            "--days",
            str(pg.DAYS),
            "--seed",
            str(pg.SEED),
            "--group",
            GROUP,
            "--start",
            first.isoformat(),
            "--epoch",
            first.isoformat(),
            "--slow-member",
            "--certifier-threshold",
            str(pg.FLOW_THRESHOLD),
            "--applier-threshold",
            str(pg.FLOW_THRESHOLD),
            "--out",
            str(base / "history"),
        ],
        logs,
    )
    api_ports = [pg.port_or_free(pg.API_PORT), free_port(), free_port()]
    sql_port = pg.port_or_free(pg.SQL_PORT)
    password = base / "sql.password"
    password.touch(mode=0o600)
    password.write_text(pg.SQL_PASSWORD + "\n", encoding="utf-8")
    configs = pg.member_configs(
        group=GROUP,
        members=members,
        epoch_s=epoch_s,
        broker_port=broker_port,
        api_ports=api_ports,
        sql_port=sql_port,
        out=base,
    )
    state.update(
        group=GROUP,
        epoch=epoch_s,
        broker_port=broker_port,
        sql_port=sql_port,
        ports=[broker_port, *api_ports, sql_port],
        members=[
            {"id": m, "label": f"127.0.0.1:{pg.HOST_PORTS[i]}", "api_port": api_ports[i]}
            for i, m in enumerate(members)
        ],
        fault=None,
    )
    say("[3/4] three members (member 1 with the history and the SQL endpoint), and the rollup")
    daemons = pg.start_daemons(processes, state, base, configs)
    pg.write_state(out, state)
    rollup = processes.start(
        "rollup",
        [
            sys.executable,
            "-m",
            "spark_rollups",
            "rollup",
            "--history",
            str(base / "history"),
            "--out",
            str(base / "rollups"),
        ],
        env=pg.python_env(),
        pipe=True,
    )
    apis = [f"http://127.0.0.1:{p}" for p in api_ports]
    wait_for_members(apis, daemons, logs)
    note("the members see each other; waiting for the rollup")
    say("[4/4] Spark (local): rolling up the week")
    log = logs / "rollup.log"
    status = forward_output(rollup, "rollup", log, lambda _l: None, _quiet("rollup"))
    processes.stop(rollup)
    if status != 0:
        raise DemoError(f"rollup failed (exit status {status}); see {logs / 'rollup.log'}")
    deadline = time.monotonic() + 30.0
    while not port_accepts(sql_port):
        if time.monotonic() > deadline:
            raise DemoError(f"the SQL endpoint did not listen on {sql_port}; see {logs}")
        time.sleep(0.2)
    (out / "playground.toml").write_text(pg.client_toml(base, api_ports[0]), encoding="utf-8")


def _member_ids() -> list[str]:
    from grstats.offline.backfill import member_ids  # noqa: PLC0415

    return member_ids(pg.SEED, 3)


def _tell(out: Path, base: Path, state: dict[str, Any], seconds: float) -> None:
    api = f"http://127.0.0.1:{state['members'][0]['api_port']}"
    say(f"the playground is running ({duration(seconds)} to start): 3 members on loopback")
    for member in state["members"]:
        note(f"{member['label']}  api http://127.0.0.1:{member['api_port']}")
    note(f"live page: {api}/")
    if state["members"][0]["api_port"] != pg.API_PORT:
        note(f"127.0.0.1:{pg.API_PORT} was busy; first: export GRSTATS_API={api}")
    note(f"every command also takes --config {out / 'playground.toml'}")
    try:
        history = base.relative_to(Path.cwd()) / "history"
    except ValueError:
        history = base / "history"
    say("try (with .venv/bin on your PATH: . .venv/bin/activate):")
    for line in try_commands(history, int(state["sql_port"])):
        note(line)
    say("make a member misbehave, then ask --explain:")
    note("grstats demo --fault slow-applier 127.0.0.1:3307   (errant, recovery-error, slow-link)")
    say("stop it: grstats demo --stop")
    click.echo("", nl=False)
