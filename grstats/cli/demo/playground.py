"""`grstats demo --keep` / `--stop` / `--fault`: a simulated group left running to try commands on.

Strategy: the same pieces as the demo (a private Mosquitto, three simulated
members as `grstats run`), started detached so that they outlive the command,
plus what the commands of the README's "try it" list read: member 1 keeps
every member's history (`scope = "all"`) in a directory that `grstats
simulate` has first filled with the week before today, Spark has rolled that
week up, and member 1 serves it all over its SQL endpoint. The live members
continue the backfilled week exactly: the same model (seed, members, slow
member, flow-control thresholds) and the same `[simulated] epoch` (the
backfill's first second), so their counters go on from the history's.

Member 1's API takes the default address (127.0.0.1:8437) when it is free, so
every command finds it with no option; else a free port, and the command
prints the `export GRSTATS_API=...` to use. The SQL endpoint likewise takes
3307. `<out>/playground.toml` is member 1's config (`--config` for any
command); the state (every process with its pid and start time, every port)
is `<out>/playground/state.json`.

Invariants: `--stop` signals only the processes recorded in the state, by pid
and only while the pid still has its recorded start time (a pid the system
gave to another process since is left alone); it waits until each is gone and
its ports refuse connections. A fault changes the group model, which every
member must share: all three configs are rewritten and the three daemons
restarted on their ports.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grstats.cli.demo.mosquitto import write_loopback_config
from grstats.cli.demo.supervisor import Processes, free_port, grstats_argv, port_accepts

__all__ = [
    "API_PORT",
    "DAYS",
    "FAULTS",
    "SQL_PASSWORD",
    "SQL_PORT",
    "PlaygroundError",
    "fault",
    "member_configs",
    "running",
    "stop",
    "write_state",
]

API_PORT = 8437  # the CLI's default API address: every command finds member 1 with no option
SQL_PORT = 3307  # the documented [sql] listen example
SQL_USER = "grstats"
SQL_PASSWORD = "playground"  # loopback only, a throw-away group
DAYS = 7
SEED = 1
FLOW_THRESHOLD = 1000  # as the demo's live members: flow control binds at the model's rates
HOST_PORTS = (3306, 3307, 3308)  # the members' MEMBER_PORT (what `host:port` shows)
FAULTS = ("slow-applier", "errant", "recovery-error", "slow-link", "none")
STOP_GRACE_S = 10.0
FAULT_S = 900  # how long a fault with a duration lasts (then the member recovers)


class PlaygroundError(Exception):
    """A playground step failed; str() is the one line shown."""


def state_path(out: Path) -> Path:
    return out / "playground" / "state.json"


def _start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks after boot), None when no such process lives."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has ended: only its parent's wait is missing
        return None
    return int(fields[19])


def _ours(entry: dict[str, Any]) -> bool:
    return _start_ticks(int(entry["pid"])) == entry.get("ticks")


def read_state(out: Path) -> dict[str, Any] | None:
    """The running playground's state, None when there is none."""
    try:
        state: dict[str, Any] = json.loads(state_path(out).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state


def running(out: Path) -> bool:
    """Whether a playground started in `out` still has a process alive."""
    state = read_state(out)
    return state is not None and any(_ours(p) for p in state.get("processes", []))


def write_state(out: Path, state: dict[str, Any]) -> None:
    path = state_path(out)
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")


def record(state: dict[str, Any], name: str, process: subprocess.Popen[bytes]) -> None:
    """Add a detached child to the state, with its start time (pid reuse guard)."""
    state["processes"].append(
        {"name": name, "pid": process.pid, "ticks": _start_ticks(process.pid)}
    )


def epoch_of(today: dt.date) -> tuple[dt.date, int]:
    """The backfill's first day (DAYS before today) and its first second (the group's epoch)."""
    first = today - dt.timedelta(days=DAYS)
    return first, int(dt.datetime(first.year, first.month, first.day, tzinfo=dt.UTC).timestamp())


def _fault_keys(kind: str, member: str, members: Sequence[str], now_s: int) -> str:
    """The [simulated] lines of a fault on `member`, from `now_s` on.

    A fault is a scripted event from now on wherever the model has one, so the
    week before keeps the values the history holds; a knob of the settings would
    change the model since its epoch (a slow member's queue over a whole week).
    """
    base = f'slow_member = "{members[-1]}"\n'
    if kind == "slow-link":
        # the commit path's consensus rounds only: nothing accumulates since the epoch
        return base + f'slow_link_member = "{member}"\n'
    if kind == "slow-applier":
        # the applier stops for FAULT_S: its queue grows at the others' rate and flow
        # control holds the writers (the model's one applier knob with a start time)
        return base + _event(now_s + 3, member, "applier_stop", f"duration = {FAULT_S}")
    if kind == "errant":
        return base + _event(now_s + 3, member, "errant_write", "count = 3")
    if kind == "recovery-error":
        # the smallest knob the model has: the member reports ERROR (leaving the view) for
        # FAULT_S, then rejoins; the recovery channel's own error comes with the
        # replication channel tables (issue 41)
        return base + _event(
            now_s + 3, member, "set_state", f'state = "ERROR"\nduration = {FAULT_S}'
        )
    return base


def _event(at_s: int, member: str, action: str, extra: str) -> str:
    return (
        f'\n[[simulated.script]]\nat = {at_s}\nmember = "{member}"\naction = "{action}"\n{extra}\n'
    )


def member_configs(
    *,
    group: str,
    members: Sequence[str],
    epoch_s: int,
    broker_port: int,
    api_ports: Sequence[int],
    sql_port: int,
    out: Path,
    fault: tuple[str, str, int] | None = None,
) -> list[str]:
    """The three members' configs: the backfill's model, member 1 with history and SQL.

    Args:
        group, members: the group's name and member UUIDs (the backfill's).
        epoch_s: the group's start ([simulated] epoch), the backfill's first second.
        broker_port, api_ports, sql_port: loopback ports.
        out: the playground's directory (history, rollups, the SQL password file).
        fault: (kind, member UUID, at Unix second) of `grstats demo --fault`, or None.

    Returns:
        One TOML text per member.
    """
    kind, target, at_s = fault if fault is not None else ("none", members[-1], 0)
    simulated = _fault_keys(kind, target, members, at_s)
    listed = ", ".join(f'"{m}"' for m in members)
    texts = []
    for index, member in enumerate(members):
        extra = ""
        if index == 0:
            extra = f"""
[history]
dir = "{out / "history"}"
scope = "all"            # every member's samples, as the backfill wrote them
flush_interval = 60

[sql]
listen = "127.0.0.1:{sql_port}"
user = "{SQL_USER}"
password_file = "{out / "sql.password"}"
rollups_dir = "{out / "rollups"}"
"""
        texts.append(
            f"""# generated by grstats demo --keep (the playground); grstats demo --stop ends it
[member]
group = "{group}"
id = "{member}"
host = "127.0.0.1"
port = {HOST_PORTS[index]}

[source]
kind = "simulated"

[bus]
host = "127.0.0.1"
port = {broker_port}

[api]
listen = "127.0.0.1:{api_ports[index]}"

[flow_control]
certifier_threshold = {FLOW_THRESHOLD}
applier_threshold = {FLOW_THRESHOLD}
{extra}
[simulated]              # the model `grstats simulate` wrote the week before today with
members = [{listed}]
seed = {SEED}
epoch = {epoch_s}
{simulated}"""
        )
    return texts


def port_or_free(preferred: int) -> int:
    """`preferred` when nothing listens on it (and it can be bound), else a free port."""
    import socket  # noqa: PLC0415

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
        except OSError:
            return free_port()
    return preferred


def start_daemons(
    processes: Processes, state: dict[str, Any], out: Path, configs: Sequence[str]
) -> list[subprocess.Popen[bytes]]:
    """Write the members' configs and start them detached, recorded in `state`."""
    started = []
    for index, text in enumerate(configs, start=1):
        config = out / f"member{index}.toml"
        config.write_text(text, encoding="utf-8")
        process = processes.start(
            f"member{index}",
            [*grstats_argv(), "run", "--config", str(config), "--log-format", "json"],
            log=out / "logs" / f"member{index}.log",
            detach=True,
        )
        record(state, f"member{index}", process)
        started.append(process)
    return started


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop_entries(entries: Sequence[dict[str, Any]]) -> list[str]:
    """SIGTERM each recorded process's group (newest first), SIGKILL after a grace period.

    Returns:
        The names of the processes that were still running.
    """
    alive = [e for e in reversed(entries) if _ours(e)]
    for entry in alive:
        _signal_group(int(entry["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while any(_ours(e) for e in alive) and time.monotonic() < deadline:
        time.sleep(0.1)
    for entry in alive:
        if _ours(entry):
            _signal_group(int(entry["pid"]), signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while any(_ours(e) for e in alive) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [str(e["name"]) for e in alive]


def wait_ports_free(ports: Sequence[int], timeout: float = 10.0) -> list[int]:
    """The ports still accepting connections after `timeout` (empty: all free)."""
    deadline = time.monotonic() + timeout
    while True:
        busy = [p for p in ports if port_accepts(p)]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.1)


def stop(out: Path) -> tuple[list[str], list[int]]:
    """End every process of the playground in `out` and free its ports.

    Returns:
        (names of the processes stopped, ports still busy afterwards).

    Raises:
        PlaygroundError: no playground was started in `out`.
    """
    state = read_state(out)
    if state is None:
        raise PlaygroundError(f"no playground in {out} (grstats demo --keep starts one)")
    stopped = stop_entries(state.get("processes", []))
    busy = wait_ports_free([int(p) for p in state.get("ports", [])])
    state_path(out).unlink(missing_ok=True)
    (out / "playground.toml").unlink(missing_ok=True)
    return stopped, busy


def resolve_member(state: dict[str, Any], name: str) -> str:
    """A member named as 1..3, member2, host:port or its UUID -> its UUID."""
    members: list[dict[str, Any]] = state["members"]
    for index, member in enumerate(members, start=1):
        if name.lower() in (str(index), f"member{index}", member["label"], member["id"]):
            return str(member["id"])
    known = ", ".join(m["label"] for m in members)
    raise PlaygroundError(f"{name}: not a playground member (one of: {known}, or 1-3)")


def _wait_up(apis: Sequence[str], started: Sequence[subprocess.Popen[bytes]], logs: Path) -> None:
    """Until every restarted member's API answers (a member that exits fails at once)."""
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    deadline = time.monotonic() + 120.0
    for index, (api, process) in enumerate(zip(apis, started, strict=True), start=1):
        while True:
            if process.poll() is not None:
                log = logs / f"member{index}.log"
                raise PlaygroundError(f"member{index} exited ({process.returncode}); see {log}")
            try:
                with urllib.request.urlopen(f"{api}/healthz", timeout=1.0):
                    break
            except urllib.error.HTTPError:
                break  # it answers (degraded is still up)
            except OSError:
                if time.monotonic() > deadline:
                    raise PlaygroundError(f"{api} did not come back within 120 s") from None
                time.sleep(0.2)


def fault(out: Path, kind: str, member_name: str) -> str:
    """Make a playground member misbehave: every member restarted with the fault's model.

    Args:
        out: the playground's directory.
        kind: one of FAULTS ("none" clears the fault).
        member_name: the member (see `resolve_member`).

    Returns:
        The member's label.

    Raises:
        PlaygroundError: no playground, or an unknown member.
    """
    state = read_state(out)
    if state is None or not running(out):
        raise PlaygroundError(f"no playground running in {out} (grstats demo --keep starts one)")
    member = resolve_member(state, member_name)
    members = [str(m["id"]) for m in state["members"]]
    daemons = [p for p in state["processes"] if str(p["name"]).startswith("member")]
    stop_entries(daemons)
    api_ports = [int(m["api_port"]) for m in state["members"]]
    wait_ports_free([*api_ports, int(state["sql_port"])])
    state["processes"] = [p for p in state["processes"] if p not in daemons]
    configs = member_configs(
        group=state["group"],
        members=members,
        epoch_s=int(state["epoch"]),
        broker_port=int(state["broker_port"]),
        api_ports=api_ports,
        sql_port=int(state["sql_port"]),
        out=out / "playground",
        fault=(kind, member, int(time.time())),
    )
    processes = Processes(out / "playground" / "fault.pids")
    started = start_daemons(processes, state, out / "playground", configs)
    state["fault"] = None if kind == "none" else {"kind": kind, "member": member}
    write_state(out, state)
    _wait_up([f"http://127.0.0.1:{p}" for p in api_ports], started, out / "playground" / "logs")
    label = next(str(m["label"]) for m in state["members"] if m["id"] == member)
    return label


def python_env() -> dict[str, str]:
    """The environment of the Spark steps: loopback, this interpreter."""
    env = dict(os.environ)
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    env.update(PYSPARK_DRIVER_PYTHON=sys.executable)
    return env


def client_toml(out: Path, api_port: int) -> str:
    """`<out>/playground.toml`: member 1's config, which every command accepts as --config."""
    return (
        (out / "member1.toml")
        .read_text(encoding="utf-8")
        .replace(
            "# generated by grstats demo --keep (the playground)",
            f"# the playground's member 1 (API http://127.0.0.1:{api_port})",
        )
    )


def write_broker(out: Path) -> tuple[Path, int]:
    """The private broker's config on a free loopback port."""
    port = free_port()
    conf = write_loopback_config(
        out / "mosquitto.conf", port, header="# generated by grstats demo --keep\n"
    )
    return conf, port
