"""`grstats demo` (`make demo`): the whole pipeline on loopback, then everything stopped.

Strategy: a sequence of steps, each a child process this command starts and
owns: a private Mosquitto on a free loopback port; three simulated members
(multi-primary, conflicts, one slow applier) as `grstats run` with generated
configs; `grstats watch` on the first member for GRSTATS_DEMO_SECONDS (20 s by
default); then offline `grstats simulate` for a week of history, the Spark
rollup and the weekly report (`python -m spark_rollups ...`, SPARK_LOCAL_IP
127.0.0.1). Batch steps' output is forwarded line by line (and kept in
`<out>/logs/`), with a heartbeat when a step is quiet, so progress is always
visible.

Invariants:
- every child is started in its own process group (Spark's JVM is a child of
  its Python), recorded in `<out>/demo.pids` (`pid name`), and stopped by
  that id: SIGTERM to the group, SIGKILL after a grace period — on success,
  on a failed step, on Ctrl-C and on SIGTERM. Children also get SIGTERM from
  the kernel if this process dies without cleaning up (PR_SET_PDEATHSIG);
- `grstats watch` alone stays in the terminal's process group so that Ctrl-C
  reaches it (it quits cleanly) and this process (which then stops the rest);
- nothing listens beyond 127.0.0.1; files go under `--out` only.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

import click

from grstats.cli.mosquitto import find_mosquitto, write_loopback_config
from grstats.cli.reader import ReadError, fetch_table

__all__ = ["command"]

GROUP = "dddddddd-0000-4000-8000-000000000001"
MEMBERS = (
    "dddddddd-0000-4000-8000-0000000000a1",
    "dddddddd-0000-4000-8000-0000000000a2",
    "dddddddd-0000-4000-8000-0000000000a3",
)
SLOW_MEMBER = MEMBERS[2]
DEFAULT_SECONDS = 20.0
SIMULATE_SEED = 1
STOP_GRACE_S = 6.0
HEARTBEAT_S = 10.0


class DemoError(Exception):
    """A step failed; str() is the one line shown."""


class _Interrupted(Exception):
    """SIGTERM received: stop like Ctrl-C."""


def _say(message: str) -> None:
    click.secho(message, fg="cyan", bold=True)


def _note(message: str) -> None:
    click.echo(f"  {message}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _libc_prctl() -> Callable[..., int] | None:
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


# Looked up once in the parent: the child between fork and exec only calls it.
_PRCTL = _libc_prctl()
_PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> None:
    # Runs in the child between fork and exec: if the demo dies abruptly the
    # kernel sends SIGTERM to the child, so no member outlives the demo.
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _grstats_argv() -> list[str]:
    script = Path(sys.executable).with_name("grstats")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from grstats.cli.main import main; main()"]


@dataclass
class _Child:
    name: str
    process: subprocess.Popen[bytes]
    own_group: bool
    log: Path | None


class Processes:
    """Every child the demo starts, stopped by its id (never by name).

    Args:
        pid_file: where `pid name` lines are appended as children start.
    """

    def __init__(self, pid_file: Path) -> None:
        self.pid_file = pid_file
        self.children: list[_Child] = []
        pid_file.write_text(f"{os.getpid()} demo\n", encoding="utf-8")

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log: Path | None = None,
        env: Mapping[str, str] | None = None,
        own_group: bool = True,
        pipe: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start one child; its output goes to `log`, a pipe, or the terminal.

        Args:
            name: for messages and the pid file.
            argv: the command.
            log: file for stdout+stderr (None: inherit, unless `pipe`).
            env: the environment (None: ours).
            own_group: start it in a new process group (stopped as a group).
            pipe: give the caller stdout+stderr as one pipe.

        Returns:
            The process.
        """
        stdout: int | IO[bytes] | None = None
        handle: IO[bytes] | None = None
        if pipe:
            stdout = subprocess.PIPE
        elif log is not None:
            handle = log.open("ab")
            stdout = handle
        try:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT if stdout is not None else None,
                env=dict(env) if env is not None else None,
                process_group=0 if own_group else None,
                preexec_fn=_set_pdeathsig,  # noqa: PLW1509 - only prctl, no locks taken
            )
        finally:
            if handle is not None:
                handle.close()
        self.children.append(_Child(name, process, own_group, log))
        with self.pid_file.open("a", encoding="utf-8") as file:
            file.write(f"{process.pid} {name}\n")
        return process

    def stop(self, process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM (to its group if it has one), SIGKILL after `grace_s`, reap."""
        child = next((c for c in self.children if c.process is process), None)
        if child is None:
            return
        own_group = child.own_group
        if process.poll() is None:
            self._signal(process, signal.SIGTERM, own_group)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._signal(process, signal.SIGKILL, own_group)
                process.wait(timeout=10)
        if own_group:
            # Grandchildren (Spark's JVM) share the group; make sure none is left.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        self.children.remove(child)

    @staticmethod
    def _signal(process: subprocess.Popen[bytes], sig: int, own_group: bool) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if own_group:
                os.killpg(process.pid, sig)
            else:
                process.send_signal(sig)

    def stop_all(self) -> None:
        """Stop every child still known, newest first (members before the broker)."""
        for child in reversed(list(self.children)):
            self.stop(child.process)


def _forward(
    process: subprocess.Popen[bytes], name: str, log: Path, on_line: Callable[[str], None]
) -> int:
    """Copy a child's output to `log` and the terminal; heartbeat while quiet."""
    assert process.stdout is not None
    last = [time.monotonic()]
    started = time.monotonic()

    def pump() -> None:
        assert process.stdout is not None
        with log.open("ab") as file:
            for raw in iter(process.stdout.readline, b""):
                file.write(raw)
                file.flush()
                last[0] = time.monotonic()
                on_line(raw.decode("utf-8", "replace").rstrip())

    reader = threading.Thread(target=pump, name=f"demo-{name}", daemon=True)
    reader.start()
    while process.poll() is None:
        reader.join(timeout=1.0)
        if time.monotonic() - last[0] >= HEARTBEAT_S:
            _note(f"... {name} still running ({time.monotonic() - started:.0f} s)")
            last[0] = time.monotonic()
    reader.join(timeout=5.0)
    return process.wait()


def _mosquitto() -> str:
    found = find_mosquitto()
    if found:
        return found
    raise DemoError("mosquitto is not installed (make demo installs it: apt-get install mosquitto)")


def _member_config(index: int, broker_port: int, api_port: int, hot_hours: Sequence[int]) -> str:
    members = ", ".join(f'"{m}"' for m in MEMBERS)
    return f"""# generated by grstats demo
[member]
group = "{GROUP}"
id = "{MEMBERS[index]}"
host = "127.0.0.1"
port = {3306 + index}

[source]
kind = "simulated"

[simulated]
members = [{members}]
seed = 7
mode = "multi-primary"
write_rate = 30.0
conflict_probability = 0.04
# this hour and the next are busy: the slow member's applier queue builds up
# from the top of the hour while the demo watches
hot_hours = [{", ".join(str(h) for h in hot_hours)}]
slow_member = "{SLOW_MEMBER}"

[bus]
host = "127.0.0.1"
port = {broker_port}
prefix = "grstats/v1"

[publish]
period = 1.0

[api]
listen = "127.0.0.1:{api_port}"
"""


def _last_full_iso_week(today: dt.date) -> tuple[dt.date, str]:
    monday = today - dt.timedelta(days=today.weekday() + 7)
    year, week, _ = monday.isocalendar()
    return monday, f"{year}-W{week:02d}"


def _wait_for_members(
    apis: Sequence[str], processes: Sequence[subprocess.Popen[bytes]], logs: Path
) -> None:
    deadline = time.monotonic() + 45.0
    for number, (api, process) in enumerate(zip(apis, processes, strict=True), start=1):
        while True:
            if process.poll() is not None:
                raise DemoError(
                    f"member {number} exited with status {process.returncode}; "
                    f"see {logs / f'member{number}.log'}"
                )
            try:
                rows = fetch_table(api, "replication_group_member_stats", timeout=1.0)
                if len(rows) >= len(MEMBERS):
                    break
            except ReadError:
                pass
            if time.monotonic() > deadline:
                raise DemoError(f"the members did not see each other within 45 s ({api})")
            time.sleep(0.2)


def _run_step(
    processes: Processes,
    name: str,
    argv: Sequence[str],
    logs: Path,
    env: Mapping[str, str] | None = None,
) -> None:
    log = logs / f"{name}.log"
    log.write_bytes(b"")
    started = time.monotonic()
    process = processes.start(name, argv, env=env, pipe=True)
    try:
        status = _forward(process, name, log, lambda line: click.echo(f"  | {line}"))
    finally:
        processes.stop(process)
    if status != 0:
        raise DemoError(f"{name} failed (exit status {status}); see {log}")
    _note(f"{name} done in {time.monotonic() - started:.1f} s")


def _live_part(processes: Processes, out: Path, logs: Path, seconds: float) -> None:
    mosquitto = _mosquitto()
    broker_port = _free_port()
    live = out / "live"
    live.mkdir(parents=True, exist_ok=True)
    conf = write_loopback_config(
        live / "mosquitto.conf", broker_port, header="# generated by grstats demo\n"
    )
    _say(f"[1/5] starting a private Mosquitto on 127.0.0.1:{broker_port}")
    broker = processes.start("mosquitto", [mosquitto, "-c", str(conf)], log=logs / "mosquitto.log")
    deadline = time.monotonic() + 10.0
    while not _port_accepts(broker_port):
        if broker.poll() is not None or time.monotonic() > deadline:
            raise DemoError(f"mosquitto did not start; see {logs / 'mosquitto.log'}")
        time.sleep(0.05)

    _say("[2/5] starting three simulated members (multi-primary, conflicts, one slow applier)")
    apis: list[str] = []
    members: list[subprocess.Popen[bytes]] = []
    hour = dt.datetime.now(dt.UTC).hour
    hot_hours = sorted({hour, (hour + 1) % 24})
    for index, member_id in enumerate(MEMBERS):
        api_port = _free_port()
        config = live / f"member{index + 1}.toml"
        config.write_text(_member_config(index, broker_port, api_port, hot_hours), encoding="utf-8")
        slow = "  (slow applier)" if member_id == SLOW_MEMBER else ""
        _note(f"member {index + 1} {member_id}  api http://127.0.0.1:{api_port}{slow}")
        members.append(
            processes.start(
                f"member{index + 1}",
                [*_grstats_argv(), "run", "--config", str(config), "--log-format", "json"],
                log=logs / f"member{index + 1}.log",
            )
        )
        apis.append(f"http://127.0.0.1:{api_port}")
    _note("waiting until every member sees the other two ...")
    _wait_for_members(apis, members, logs)

    _say(
        f"[3/5] live replication_group_member_stats from member 1 for {seconds:g} s (Ctrl-C stops)"
    )
    watch = processes.start(
        "watch",
        [
            *_grstats_argv(),
            "watch",
            "--api",
            apis[0],
            "--interval",
            "1",
            "--duration",
            str(seconds),
        ],
        own_group=False,
    )
    status = watch.wait()
    processes.stop(watch)
    if status != 0:
        raise DemoError(f"grstats watch failed (exit status {status})")
    bus_address = f"127.0.0.1:{broker_port}"
    _note(f"the members read straight from the broker: grstats members --bus {bus_address}")
    _run_step(
        processes,
        "members-bus",
        [*_grstats_argv(), "members", "--bus", bus_address],
        logs,
    )
    _note("stopping the live members and the broker")
    for member in members:
        processes.stop(member)
    processes.stop(broker)


def _batch_part(processes: Processes, out: Path, logs: Path, days: int) -> Path:
    history, rollups, report = out / "history", out / "rollups", out / "report"
    for stale in (history, rollups, report):
        shutil.rmtree(stale, ignore_errors=True)
    monday, week = _last_full_iso_week(dt.datetime.now(dt.UTC).date())
    _say(f"[4/5] backfilling {days} simulated day(s) of 3 members from {monday} (week {week})")
    _run_step(
        processes,
        "simulate",
        [
            *_grstats_argv(),
            "simulate",
            "--members",
            "3",
            "--days",
            str(days),
            "--seed",
            str(SIMULATE_SEED),
            "--group",
            GROUP,
            "--start",
            monday.isoformat(),
            "--slow-member",
            "--out",
            str(history),
        ],
        logs,
    )
    env = dict(os.environ)
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    _say("[5/5] Spark (local): rolling up the history, then the weekly conflict report")
    _run_step(
        processes,
        "rollup",
        [
            sys.executable,
            "-m",
            "spark_rollups",
            "rollup",
            "--history",
            str(history),
            "--out",
            str(rollups),
        ],
        logs,
        env,
    )
    _run_step(
        processes,
        "report",
        [
            sys.executable,
            "-m",
            "spark_rollups",
            "report",
            "--rollups",
            str(rollups),
            "--week",
            week,
            "--out",
            str(report),
        ],
        logs,
        env,
    )
    return report


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Interrupted


@click.command("demo", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo-out"),
    show_default=True,
    help="Where configs, logs, history, rollups and the report go.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=1),
    envvar="GRSTATS_DEMO_SECONDS",
    default=DEFAULT_SECONDS,
    show_default=True,
    help="Length of the live part (environment: GRSTATS_DEMO_SECONDS).",
)
@click.option(
    "--days",
    type=click.IntRange(1, 7),
    default=7,
    show_default=True,
    help="Simulated days to backfill (the last full ISO week, from its Monday).",
)
def command(out: Path, seconds: float, days: int) -> None:
    """Run the whole pipeline on loopback, then stop everything it started.

    A private Mosquitto, three simulated members (multi-primary, with
    conflicts, one slow applier) and their live member-stats table; then a
    simulated week of history, the Spark rollup and the weekly conflict
    report. Every process it starts is stopped at the end, on an error and on
    Ctrl-C; their PIDs are in OUT/demo.pids.

    \b
    Examples:
      make demo                                # the same as: .venv/bin/grstats demo
      GRSTATS_DEMO_SECONDS=5 grstats demo --days 2 --out /tmp/demo
    """
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        click.secho(
            "demo failed: no Java runtime for Spark (make demo installs default-jre-headless)",
            fg="red",
            err=True,
        )
        raise SystemExit(1)
    out = out.resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    processes = Processes(out / "demo.pids")
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    started = time.monotonic()
    try:
        _live_part(processes, out, logs, seconds)
        report = _batch_part(processes, out, logs, days)
    except (KeyboardInterrupt, _Interrupted):
        click.secho("\ninterrupted: stopping every process the demo started", fg="yellow", err=True)
        processes.stop_all()
        raise SystemExit(130) from None
    except DemoError as exc:
        processes.stop_all()
        click.secho(f"demo failed: {exc}", fg="red", err=True)
        raise SystemExit(1) from None
    finally:
        processes.stop_all()
        signal.signal(signal.SIGTERM, previous)
    files = sorted(p for p in report.rglob("*") if p.is_file())
    _say(f"done in {time.monotonic() - started:.0f} s; the weekly conflict report is in {report}")
    for path in files:
        if path.suffix in (".html", ".md"):
            _note(str(path))
    _note(f"({len(files)} files: Markdown, HTML, PNG charts and CSV; logs in {logs})")
