"""The SQL child supervisor's pure parts: backoff, exit reasons, counters across restarts.

Expected values are written by hand from the documented rules (0.5 s doubling
up to 30 s; the child's exit statuses; counters summed, gauges not).
"""

from __future__ import annotations

import signal
import subprocess
import sys

from grstats.core.snapshot import SqlFigures
from grstats.daemon.sqlchild import add_counts, backoff_s, exit_reason


def test_restarts_back_off_from_half_a_second_doubling_up_to_thirty() -> None:
    assert [backoff_s(n) for n in range(9)] == [0.5, 0.5, 1, 2, 4, 8, 16, 30, 30]


def test_exit_reasons_name_the_signal_or_the_limit() -> None:
    assert exit_reason(-signal.SIGKILL) == "killed by SIGKILL"
    assert exit_reason(3) == "address space limit reached (max_address_space)"
    assert exit_reason(4) == "CPU time limit reached (max_cpu_seconds)"
    assert exit_reason(1) == "exited with status 1"


def test_counters_add_up_across_children_and_the_rest_is_the_newer_childs() -> None:
    base = SqlFigures(queries=5, connections_accepted=2, errors={1045: 1}, connections_open=1)
    last = SqlFigures(
        serving=True,
        queries=3,
        connections_accepted=1,
        errors={1045: 2, 1146: 1},
        results_refused={"max_rows": 1},
        connections_open=4,
        max_connections=16,
    )
    total = add_counts(base, last)
    assert (total.queries, total.connections_accepted) == (8, 3)
    assert total.errors == {1045: 3, 1146: 1}
    assert total.results_refused == {"max_rows": 1}
    assert (total.serving, total.connections_open, total.max_connections) == (True, 4, 16)


def test_child_limits_above_the_units_hard_limits_are_lowered_to_them() -> None:
    code = (
        "import resource\n"
        "from grstats.sql.channel import ChildConfig\n"
        "from grstats.sql.child import apply_limits\n"
        "from grstats.sql.options import SqlOptions\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"  # as LimitAS= would
        "config = ChildConfig(SqlOptions(), 1024, 1.0, max_address_space=8 << 30,"
        " max_cpu_seconds=100, nice=5)\n"
        "print(repr(apply_limits(config)), resource.getrlimit(resource.RLIMIT_AS))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split("\n")[-2] == f"'' ({3 << 30}, {3 << 30})"
