"""bench_daemon's commit-path pair (issue 27): scenario (a) with and without the section.

The 9 simulated daemons of (a) run at the group's default MySQL version, whose
members send ext.commit_path and ext.commit_path_comm ("with"), and at
`[simulated] version = "8.0.22"`, a server without the Gr_* status variables
and without replication_group_communication_information, so no section
("without"). The two alternate in one run (with, without, with, without, ...),
each phase on its own fresh Mosquitto (no retained envelope crosses phases)
beside its own bare aiomqtt process, measured for the same seconds after the
same warm-up. Each phase reads grstats_member_commit_path from one daemon's
API: the rows it holds are the members whose envelopes carried a section, so
"with" should show every member and "without" none.

Printed: each phase's daemon CPU % and RSS (means over the 9) and the bare
process's; then the means over the phases of each kind and the ratio
with / without (issue 27's "Done when": at most 1.05 for both).

The production pair (`production_pair`, bench_daemon --commit-path-pair
--production) does the same with (d)'s daemons: the mysql source, history on,
[sql] off, each against its own fake server in another process
(_bench_mimic.py --commit-path): fake 8.4 or 9.x servers showing the Gr_*
variables and the communication table ("with") vs fake 8.0 servers without
either ("without"). There the daemons' own queries and parsing are part of
what is measured, which the simulated pair leaves out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _bench_procs import (
    Procs,
    api_port_of,
    http_json,
    member_uuid,
    scratch_with_broker,
    start_daemon,
)
from _bench_steady import GRSTATS, measure, production_toml, start_bare, start_mimic

WITHOUT_VERSION = "8.0.22"  # before 8.0.23 (communication information) and 8.1.0 (Gr_*)
TABLE = "grstats_member_commit_path"


@dataclass(frozen=True)
class Phase:
    """One measured phase: means over its daemons, its bare process, its table rows."""

    label: str
    cpu: float
    rss: float
    bare_cpu: float
    bare_rss: float
    rows: int
    members: int
    comm: int = 0  # rows with the communication information (WRITE_CONCURRENCY)


def _rows_seen(port: int, members: int, deadline_s: float) -> tuple[int, int]:
    """grstats_member_commit_path's row count on one daemon, once every member was
    heard from (or at the deadline): the members whose envelopes carried a section;
    and how many of those rows have the communication information."""
    deadline = time.monotonic() + deadline_s
    while True:
        seen = len(http_json(port, "/v1/tables/grstats_member_status"))
        if seen >= members or time.monotonic() > deadline:
            rows = http_json(port, f"/v1/tables/{TABLE}")
            return len(rows), sum(1 for r in rows if r.get("WRITE_CONCURRENCY") is not None)
        time.sleep(0.2)


def _measured(
    label: str,
    scratch: tuple[Procs, Path, int],
    daemons: list[int],
    ports: list[int],
    seconds: float,
) -> Phase:
    """Start the bare process beside the running `daemons`, measure them all for
    `seconds`, and read which members' commit-path rows the first daemon holds."""
    procs, workdir, broker = scratch
    bare = start_bare(procs, workdir, broker, seconds)
    w = measure([*daemons, bare.pid], seconds)
    rows, comm = _rows_seen(ports[0], len(daemons), 10.0)
    return Phase(
        label,
        w.mean_cpu(daemons),
        w.mean_rss(daemons),
        w.cpu[bare.pid],
        w.rss[bare.pid],
        rows,
        len(daemons),
        comm,
    )


def run_phase(label: str, simulated: str, seconds: float, n: int) -> Phase:
    """Start `n` simulated daemons (with `simulated` in their [simulated] section)
    and a bare process on a fresh broker, measure them, stop them."""
    with scratch_with_broker("bench-pair-") as scratch:
        procs, workdir, broker = scratch
        members = [member_uuid(i, 1) for i in range(n)]
        started = [
            start_daemon(procs, workdir, broker, m, members, simulated=simulated) for m in members
        ]
        ports = [api_port_of(log) for _, log in started]
        daemons = [p.pid for p, _ in started]
        return _measured(label, scratch, daemons, ports, seconds)


def run_production_phase(label: str, version: str, seconds: float, n: int) -> Phase:
    """`n` production daemons (mysql source, history on) against fake servers of
    `version` showing what it shows of issue 27, and a bare process; measured."""
    with scratch_with_broker("bench-prod-pair-") as scratch:
        procs, workdir, broker = scratch
        servers = start_mimic(procs, workdir, n, ("--version", version, "--commit-path"))
        daemons, logs = [], []
        for i, server in enumerate(servers):
            d = workdir / f"d{i}"
            d.mkdir()
            (d / "grstats.toml").write_text(production_toml(broker, server["port"], d, False))
            proc = procs.start([GRSTATS, "run", "--config", str(d / "grstats.toml")], d / "log")
            daemons.append(proc.pid)
            logs.append(d / "log")
        ports = [api_port_of(log) for log in logs]
        return _measured(label, scratch, daemons, ports, seconds)


def production_pair(seconds: float, rounds: int, n: int, version: str = "8.4") -> None:
    """Alternate `rounds` times: `n` production daemons against fake `version`
    servers (Gr_* and communication information shown), then against fake 8.0 ones."""
    kinds = {"with": version, "without": "8.0"}
    print(
        f"(f) production commit-path pair (issue 27): {n} daemons (mysql source, history on, "
        f"period 1 s) + 1 bare aiomqtt, fake {version} servers (Gr_* and communication "
        f"information shown) vs fake 8.0 (neither), alternating, {rounds} x {seconds:.0f} s each"
    )
    _alternate(rounds, kinds, lambda label, shape: run_production_phase(label, shape, seconds, n))


def _alternate(rounds: int, kinds: dict[str, str], run: Callable[[str, str], Phase]) -> None:
    """Run each kind of phase in turn, `rounds` times, printing each; then the summary."""
    phases: list[Phase] = []
    for r in range(rounds):
        for label, how in kinds.items():
            p = run(label, how)
            phases.append(p)
            _print_phase(r, p)
    _summarise(phases, list(kinds))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _print_phase(r: int, p: Phase) -> None:
    print(
        f"    round {r + 1} {p.label:<7}: daemon CPU {p.cpu:5.2f} %  RSS {p.rss:5.1f} MB | "
        f"bare CPU {p.bare_cpu:5.2f} %  RSS {p.bare_rss:5.1f} MB | "
        f"{TABLE} rows {p.rows}/{p.members} (communication {p.comm})",
        flush=True,
    )


def _summarise(phases: list[Phase], kinds: list[str]) -> None:
    """The means of each kind of phase, the ratio with/without, and a warning when
    the phases did not differ in the section as intended."""
    by = {k: [p for p in phases if p.label == k] for k in kinds}
    cpu = {k: _mean([p.cpu for p in ps]) for k, ps in by.items()}
    rss = {k: _mean([p.rss for p in ps]) for k, ps in by.items()}
    rel = {k: _mean([p.cpu / max(p.bare_cpu, 1e-9) for p in ps]) for k, ps in by.items()}
    for k in kinds:
        print(f"    {k:<7} mean: CPU {cpu[k]:.2f} % ({rel[k]:.2f}x bare)  RSS {rss[k]:.1f} MB")
    print(
        f"    ratio with/without: CPU {cpu['with'] / max(cpu['without'], 1e-9):.3f}x "
        f"(of the x-bare figures {rel['with'] / max(rel['without'], 1e-9):.3f}x), "
        f"RSS {rss['with'] / rss['without']:.3f}x  (goal: <= 1.05x each)"
    )
    leaked = [p for p in by["without"] if p.rows]
    missing = [p for p in by["with"] if p.rows < p.members]
    if leaked or missing:
        print(
            f"    WARNING: {len(leaked)} 'without' phase(s) held commit-path rows, "
            f"{len(missing)} 'with' phase(s) lacked some: the pair does not measure the section"
        )


def commit_path_pair(seconds: float, rounds: int, n: int = 9) -> None:
    """Alternate `rounds` times: `n` daemons with the commit-path section, then without."""
    kinds = {"with": "", "without": f'version = "{WITHOUT_VERSION}"'}
    print(
        f"(e) commit-path pair (issue 27): {n} simulated daemons at 1 Hz + 1 bare aiomqtt, "
        f"default version (ext.commit_path sent) vs {WITHOUT_VERSION} (none), "
        f"alternating, {rounds} x {seconds:.0f} s each"
    )
    _alternate(rounds, kinds, lambda label, simulated: run_phase(label, simulated, seconds, n))
