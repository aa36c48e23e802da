"""`grstats demo` (`make demo`): the whole pipeline on loopback, then everything stopped.

The steps are in `grstats.cli.demo.steps`, the process supervisor in
`grstats.cli.demo.supervisor`; this command owns the run: it stops every child on
success, on a failed step, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from types import FrameType

import click

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
    say(f"done in {time.monotonic() - started:.0f} s; the weekly conflict report is in {report}")
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
