"""The child side of `grstats.history.offload`: one Parquet step of a writer.

`python -m grstats.daemon.historymain` (which configures the logging) reads
one JSON request on stdin ({"op", "dir", "writer", "counters", ...}),
runs the in-process code of that step (pyarrow is loaded here, not in the
daemon) and prints one JSON line: the step's result, the counters after it,
the data faults it noted, and `error` when a file-system error stopped it.
Log lines go to stderr (the daemon's log). Anything else escaping is a bug:
the traceback goes to stderr and the parent sees no answer (an OSError there).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import structlog

from grstats.history.datafaults import DataFaults
from grstats.history.dedupe import read_marks
from grstats.history.fileops import FileOps
from grstats.history.housekeeping import housekeep
from grstats.history.offload import counters_from, counters_to
from grstats.history.segmenter import ClosedWals
from grstats.history.stats import RateLimitedLog

log = structlog.get_logger("grstats.history")

LOG_INTERVAL_S = 60.0


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Do the step `request` asks for.

    Args:
        request: {"op": "segment" | "marks" | "housekeep", "dir", "writer",
            "counters", and the op's own keys} (see `grstats.history.offload`).

    Returns:
        The answer: the step's result, the counters after it, the faults it
        noted, and "error" when a file-system error stopped it.
    """
    directory = Path(request["dir"])
    writer = str(request["writer"])
    counters = counters_from(request["counters"])
    faults = DataFaults(directory, counters, RateLimitedLog(log, LOG_INTERVAL_S))
    reply: dict[str, Any] = {}
    op = request["op"]
    done: list[int] = []
    try:
        if op == "segment":
            paths = [Path(p) for p in request["paths"]]
            wals = ClosedWals(faults, writer, FileOps(), counters)
            wals.segment_files(paths, recovering=bool(request["recovering"]), sizes=done)
        elif op == "marks":
            marks: dict[str, list[tuple[str, int, int]]] = {}
            reply["marks"] = marks
            for path in request["paths"]:
                found = read_marks(Path(path), writer, faults.quarantine)
                marks[path] = [(m, i, seq) for (m, i), seq in found.items()]
        elif op == "housekeep":
            today = dt.date.fromisoformat(request["today"])
            housekeep(directory, int(request["retention_days"]), today, writer, faults.quarantine)
        else:
            raise ValueError(f"unknown history step {op!r}")
    except OSError as exc:
        reply["error"] = str(exc)
    reply["done"] = done
    reply["counters"] = counters_to(counters)
    reply["faults"] = {kind: text for kind, (_, text) in counters.recent.items()}
    reply["quarantined_last"] = counters.quarantined_last
    return reply
