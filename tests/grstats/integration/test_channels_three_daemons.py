"""Three simulated daemons on a real Mosquitto: a recovery that cannot reach its donor, explained.

M3 is scripted RECOVERING from `s_err` for 40 s, its recovery channel unable
to connect to its donor (error 2003) for the first 30 s; the donor is the
first other ONLINE member, M1, at 127.0.0.1:3306 (the simulated members'
host:port: 127.0.0.1 and 3306 + their index), M3 itself is 127.0.0.1:3308.

* Every daemon shows M3's recovery receiver with error 2003 no later than two
  periods after the error appears (`s_err`): M3's daemon sends ext.channels
  on the change of state, not at its GTID interval (30 s here).
* `grstats channels --explain` on every daemon names M3, its donor as
  host:port and the error with MySQL's symbol; `grstats channels` shows the
  recovery channel CONNECTING with 2003.
* Every daemon's /metrics carries the alert's input for M3's recovery
  receiver; held as observed, GrstatsChannelError fires in promtool, and the
  same run's healthy members give it nothing to fire on.
* When the error is over and M3 is ONLINE, the recovery channel's rows go
  on every daemon and the explanation is empty.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.fixtures.broker import Broker
from tests.fixtures.cli import grstats
from tests.fixtures.daemons import (
    M1,
    M2,
    M3,
    DaemonProc,
    daemon_config,
    daemons,
    http_get,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.timing]

MEMBERS = (M1, M2, M3)
PERIOD_S = 0.5
RECOVERY = "group_replication_recovery"
RULES = Path(__file__).resolve().parents[3] / "config" / "prometheus" / "grstats-rules.yml"


def _failing(d: DaemonProc) -> bool:
    return any(
        r["MEMBER_ID"] == M3 and r["CHANNEL_NAME"] == RECOVERY and r["LAST_ERROR_NUMBER"] == 2003
        for r in d.table("replication_connection_status")
    )


def _open_series(d: DaemonProc) -> list[str]:
    """The alert's input as the daemon exposes it: its open channel errors, and the info
    series of the members they are of (the alert joins their host:port)."""
    _, body = http_get(d.api_port, "/metrics")
    lines = body.decode().splitlines()
    errors = [
        x for x in lines if x.startswith("grstats_channel_error_open{") and x.endswith(" 1.0")
    ]
    info = [
        x
        for x in lines
        if x.startswith("mysql_perf_schema_replication_group_member_info{")
        and any(f'member_id="{m}"' in x for e in errors for m in MEMBERS if f'member_id="{m}"' in e)
    ]
    return errors + info


def _wait_series(d: DaemonProc) -> list[str]:
    found: list[str] = wait_for(lambda: _open_series(d), 10, "the alert's input")
    return found


def _recovered(d: DaemonProc) -> bool:
    return all(r["CHANNEL_NAME"] != RECOVERY for r in d.table("replication_connection_status"))


def _promtool(tmp_path: Path, lines: list[str], fires: bool) -> str:
    shutil.copy(RULES, tmp_path / RULES.name)
    series = [line.rsplit(" ", 1)[0] for line in lines]
    inputs = "".join(
        f"      - series: '{s[:-1]},instance=\"a\",job=\"grstats\"}}'\n        values: '1x20'\n"
        for s in series
    )
    expected = (
        "        exp_alerts:\n          - exp_labels:\n              severity: warning\n"
        "              group: aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa\n"
        f"              member_id: {M3}\n"
        f"              channel_name: {RECOVERY}\n              thread: receiver\n"
        '              member_host: 127.0.0.1\n              member_port: "3308"\n'
        "            exp_annotations:\n"
        f'              summary: "Member 127.0.0.1:3308: channel {RECOVERY} (receiver) has '
        'shown an error for 2 minutes"\n'
        '              description: "Run `grstats channels --explain` on any member of group '
        "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa: the error number, its MySQL text, the source "
        'or donor, since when."\n'
        if fires
        else "        exp_alerts: []\n"
    )
    (tmp_path / "t.yml").write_text(
        f"rule_files: [{RULES.name}]\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n"
        f"    input_series:{'' if inputs else ' []'}\n{inputs}"
        "    alert_rule_test:\n      - eval_time: 3m\n        alertname: GrstatsChannelError\n"
        + expected,
        encoding="utf-8",
    )
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    done = subprocess.run(
        [promtool, "test", "rules", "t.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr if done.returncode else ""


def test_a_recovery_that_cannot_reach_its_donor_is_explained_on_every_daemon(
    broker: Broker, tmp_path: Path
) -> None:
    s_err = int(time.time()) + 20  # the daemons start (and warm the model) before it
    simulated = {
        "script": [
            {"at": s_err, "member": M3, "action": "set_state", "state": "RECOVERING",
             "duration": 40},
            {"at": s_err, "member": M3, "action": "recovery_error", "count": 2003,
             "duration": 30},
        ]
    }  # fmt: skip
    configs = [
        daemon_config(broker.port, m, MEMBERS, period=PERIOD_S, simulated=simulated)
        for m in MEMBERS
    ]
    for index, config in enumerate(configs):  # each member at its own port, as the model has it
        config["member"]["port"] = 3306 + index
    with daemons(tmp_path, configs) as ds:
        for d in ds:
            wait_for(
                lambda d=d: len(d.table("replication_connection_status")) == 3 or None,
                20,
                "every member's applier channel",
            )
        assert time.time() < s_err, "the daemons started too late for the scripted error"
        assert not any(_failing(d) for d in ds)
        seen: dict[str, float] = {}
        while len(seen) < len(ds) and time.time() < s_err + 10:  # bounded
            for d in ds:
                if d.member_id not in seen and _failing(d):
                    seen[d.member_id] = time.time()
            time.sleep(0.05)
        print(
            "shown after the error appeared (s):",
            {m[:8]: round(t - s_err, 2) for m, t in seen.items()},
        )
        assert set(seen) == set(MEMBERS)
        assert max(seen.values()) <= s_err + 2 * PERIOD_S, seen

        for d in ds:
            api = f"http://127.0.0.1:{d.api_port}"
            explained = grstats("channels", "--explain", "--api", api)
            assert explained.returncode == 0, explained.stderr
            assert "127.0.0.1:3308 (RECOVERING)" in explained.stdout
            assert "cannot connect to its donor 127.0.0.1:3306" in explained.stdout
            assert "error 2003 (CR_CONN_HOST_ERROR" in explained.stdout
            overview = grstats("channels", "--api", api)
            assert overview.returncode == 0, overview.stderr
            line = next(x for x in overview.stdout.splitlines() if RECOVERY in x)
            assert "127.0.0.1:3308" in line and "CONNECTING" in line and "2003" in line

        observed = {
            d.member_id: wait_for(lambda d=d: _open_series(d), 10, "the alert's input") for d in ds
        }
        for lines in observed.values():
            errors = [x for x in lines if x.startswith("grstats_channel_error_open")]
            assert len(errors) == 1 and f'member_id="{M3}"' in errors[0], lines
            assert f'channel_name="{RECOVERY}"' in errors[0] and 'thread="receiver"' in errors[0]
        assert _promtool(tmp_path, observed[M1], fires=True) == ""

        healthy = [x for x in _open_series(ds[0]) if f'member_id="{M3}"' not in x]
        assert healthy == []  # M1 and M2: nothing for the alert
        assert _promtool(tmp_path, healthy, fires=False) == ""

        for d in ds:
            wait_for(
                lambda d=d: (
                    all(
                        r["CHANNEL_NAME"] != RECOVERY
                        for r in d.table("replication_connection_status")
                    )
                    or None
                ),
                40 + s_err - time.time() + 10,
                "the recovery channel gone",
            )
            quiet = grstats("channels", "--explain", "--api", f"http://127.0.0.1:{d.api_port}")
            assert quiet.stdout.strip() == "every member is ONLINE and no channel shows an error"
