"""Entry of the history's short-lived child process: `python -m grstats.daemon.historymain`.

The daemon's history writer (`grstats.history.offload`) starts it for each
Parquet step so the daemon never loads pyarrow; it configures the logging
(JSON lines to stderr, the daemon's log), reads the request on stdin, prints
the one-line JSON answer on stdout and exits.

It imports only what a step needs (not `protocol`'s codecs nor the writer's
side: `grstats.history` loads its modules when their names are used), and it
ends with `os._exit` once its answer and logs are flushed: the interpreter's
teardown (freeing every module, pyarrow's pools) was ~1/6 of a child's CPU and
does nothing for the files, which the step has fsynced and renamed already.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import NoReturn

# pyarrow imports numpy when it is installed, for conversions the history never
# makes (Python lists in, Parquet out); a child without it starts on ~40 % less CPU,
# paid once per flush interval. An import of numpy here fails (ImportError).
sys.modules.setdefault("numpy", None)  # type: ignore[arg-type]  # None: "not importable"

from grstats.history.offloadmain import run  # noqa: E402 - after keeping numpy out
from grstats.logs import configure_logging  # noqa: E402


def main() -> int:
    """Run one step; 0 even when the step failed (the answer says so)."""
    configure_logging()
    request = json.loads(sys.stdin.buffer.read())
    print(json.dumps(run(request)), flush=True)
    return 0


def exit_now(code: int) -> NoReturn:
    """Flush the answer and the log lines, then end without the interpreter's teardown."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
