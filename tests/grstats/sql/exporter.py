"""Run the Debian prometheus-mysqld-exporter against an endpoint and scrape it."""

from __future__ import annotations

import socket
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.daemons import wait_for


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def exporter_lines(
    tmp_path: Path,
    port: int,
    user: str,
    password: str,
    ready: Callable[[list[str]], bool] = lambda lines: True,
) -> list[str]:
    """Run the exporter as `user` (group-replication collectors only) until a scrape
    satisfies `ready`; its /metrics lines. The exporter is stopped before returning."""
    cnf = tmp_path / f"{user}.cnf"
    cnf.write_text(
        f"[client]\nuser={user}\npassword={password}\nhost=127.0.0.1\nport={port}\n",
        encoding="utf-8",
    )
    web = free_port()
    args = [
        "prometheus-mysqld-exporter", f"--config.my-cnf={cnf}",
        f"--web.listen-address=127.0.0.1:{web}",
        "--no-collect.global_status", "--no-collect.global_variables",
        "--no-collect.slave_status", "--no-collect.info_schema.innodb_cmp",
        "--no-collect.info_schema.innodb_cmpmem",
        "--no-collect.info_schema.query_response_time",
        "--collect.perf_schema.replication_group_members",
        "--collect.perf_schema.replication_group_member_stats",
    ]  # fmt: skip
    with (tmp_path / f"{user}.log").open("wb") as log:
        exporter = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:

            def scrape() -> list[str] | None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{web}/metrics", timeout=10) as r:
                        lines = r.read().decode().splitlines()
                except OSError:
                    return None  # not listening yet
                return lines if ready(lines) else None

            return wait_for(scrape, 30, f"the exporter as {user}")
        finally:
            exporter.terminate()
            exporter.wait(10)
