"""`grstats demo` (`make demo`): the whole pipeline on loopback, then everything stopped.

The steps are in `grstats.cli.demo.steps`, the process supervisor in
`grstats.cli.demo.supervisor`; this command owns the run: it stops every child on
success, on a failed step, on Ctrl-C and on SIGTERM. `--keep` (`make
playground`) instead leaves a group running to try commands on
(`grstats.cli.demo.keep`); `--stop` ends it, `--fault` makes one of its members
misbehave (`grstats.cli.demo.playground`).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from types import FrameType

import click

from grstats.cli.demo.playground import FAULTS, PlaygroundError
from grstats.cli.demo.steps import (
    DEFAULT_SECONDS,
    FINDINGS_HEADING,
    DemoError,
    batch_part,
    live_part,
    note,
    plain_text,
    say,
    section_headline,
)
from grstats.cli.demo.supervisor import Processes
from grstats.cli.errors import BadArgument
from protocol.humanize import duration

__all__ = ["command"]


class _Interrupted(Exception):
    """SIGTERM received: stop like Ctrl-C."""


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
@click.option(
    "--keep",
    is_flag=True,
    help="Leave a simulated group running on loopback to try commands on (the playground: "
    "a week of history rolled up, the SQL endpoint); `--stop` ends it.",
)
@click.option("--stop", "stop_", is_flag=True, help="End the playground started by --keep.")
@click.option(
    "--fault",
    nargs=2,
    metavar="KIND MEMBER",
    default=None,
    help=f"Make a playground member misbehave; KIND: {', '.join(FAULTS)} (none clears it); "
    "MEMBER: 1-3, host:port or UUID.",
)
def command(  # noqa: PLR0917 - click passes every option by keyword anyway
    out: Path,
    seconds: float,
    days: int,
    keep: bool,
    stop_: bool,
    fault: tuple[str, str] | None,
) -> None:
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
      make playground                          # the same as: grstats demo --keep
      grstats demo --fault slow-applier 127.0.0.1:3308
      grstats demo --stop
    """
    out = out.resolve()
    if sum((keep, stop_, fault is not None)) > 1:
        raise BadArgument("--keep, --stop and --fault: one at a time")
    if stop_ or fault is not None:
        _playground(out, stop_, fault)
        return
    _java_or_exit()
    if keep:
        _keep(out)
        return
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    processes = Processes(out / "demo.pids")
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    started = time.monotonic()
    try:
        live_part(processes, out, logs, seconds)
        report = batch_part(processes, out, logs, days)
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
    took = duration(time.monotonic() - started)
    say(f"done in {took}; the weekly conflict report is in {report}")
    for path in files:
        if path.suffix in (".html", ".md"):
            note(str(path))
    note(f"({len(files)} files: Markdown, HTML, PNG charts and CSV; logs in {logs})")
    for path in files:
        if path.name == "report.md":
            findings = section_headline(path.read_text(encoding="utf-8"), FINDINGS_HEADING)
            if findings:
                say(f"{FINDINGS_HEADING} ({path.parent.name}):")
                for line in plain_text(findings).splitlines():
                    note(line)


def _java_or_exit() -> None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        click.secho(
            "demo failed: no Java runtime for Spark (make demo installs default-jre-headless)",
            fg="red",
            err=True,
        )
        raise SystemExit(1)


def _keep(out: Path) -> None:
    from grstats.cli.demo.keep import keep  # noqa: PLC0415

    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        keep(out)
    except (KeyboardInterrupt, _Interrupted):
        click.secho("\ninterrupted: the playground was stopped", fg="yellow", err=True)
        raise SystemExit(130) from None
    except DemoError as exc:
        click.secho(f"playground failed: {exc}", fg="red", err=True)
        raise SystemExit(1) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _playground(out: Path, stop_: bool, fault: tuple[str, str] | None) -> None:
    from grstats.cli.demo import playground  # noqa: PLC0415

    try:
        if stop_:
            stopped, busy = playground.stop(out)
            say(f"stopped: {', '.join(stopped) or 'nothing was running'}")
            if busy:
                click.secho(f"ports still busy: {busy}", fg="red", err=True)
                raise SystemExit(1)
            return
        assert fault is not None
        kind, member = fault
        if kind not in FAULTS:
            raise BadArgument(f"--fault: {kind!r} is not one of {', '.join(FAULTS)}")
        label = playground.fault(out, kind, member)
    except PlaygroundError as exc:
        click.secho(str(exc), fg="red", err=True)
        raise SystemExit(1) from None
    if kind == "none":
        say("no fault: every member is back to the playground's model")
    else:
        say(f"{kind} on {label}: the members restarted with it; now try --explain")
