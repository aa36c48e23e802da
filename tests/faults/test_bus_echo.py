"""A member whose writes the broker's ACL drops must not say "ok".

Run against the shipped secure Mosquitto config: member B's daemon connects
with member A's credentials, so the `%u` write rule drops everything it
publishes under B's topic without a word to the publisher. B's daemon must
notice that its own envelopes never come back and degrade /healthz; A's
correctly configured daemon stays healthy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.broker import ACCOUNTS, MEMBER_A, MEMBER_B, SecureBroker
from tests.fixtures.daemons import (
    GROUP,
    DaemonProc,
    daemon_config,
    spawn_daemon,
    wait_for,
    wait_started,
)

pytestmark = pytest.mark.faults


def _config(broker: SecureBroker, member: str, username: str) -> dict[str, Any]:
    config = daemon_config(broker.port, member, [MEMBER_A, MEMBER_B], period=0.25)
    config["member"]["group"] = GROUP
    config["bus"].update(
        {
            "username": username,
            "password_env": "GRSTATS_TEST_BUS_PASSWORD",
            "tls": True,
            "ca_file": broker.ca_file,
        }
    )
    return config


def _health(d: DaemonProc) -> dict[str, Any]:
    _, body = d.get("/healthz")
    return dict(body)


def test_member_whose_writes_the_acl_drops_is_degraded_not_ok(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    good = spawn_daemon(
        tmp_path / "a",
        _config(secure_broker, MEMBER_A, MEMBER_A),
        env={"GRSTATS_TEST_BUS_PASSWORD": ACCOUNTS[MEMBER_A]},
    )
    wrong = spawn_daemon(
        tmp_path / "b",
        _config(secure_broker, MEMBER_B, MEMBER_A),  # B speaking with A's account
        env={"GRSTATS_TEST_BUS_PASSWORD": ACCOUNTS[MEMBER_A]},
    )
    try:
        wait_started(good)
        wait_started(wrong)
        degraded = wait_for(
            lambda: (h := _health(wrong))["status"] == "degraded" and h, 20, "B degraded"
        )
        assert "bus_echo" in degraded["reasons"]
        assert any("do not come back" in d for d in degraded["details"])
        healthy = wait_for(lambda: (h := _health(good))["status"] == "ok" and h, 20, "A ok")
        assert healthy["reasons"] == []
    finally:
        for d in (good, wrong):
            if d.alive():
                d.terminate()
