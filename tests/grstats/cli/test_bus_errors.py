"""`--bus` says what the broker said, as soon as it says it (the shipped secure Mosquitto).

Each mistake of a first CLI session against config/mosquitto.conf + the
shipped ACL: a wrong password, no CA to verify the broker with, a name the
certificate does not carry, plain text to the TLS port. The timeout is long
(60 s): an answer that only came at the deadline would say "no answer within
60 s" instead of the reason, so the reason itself shows it came at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures.broker import ACCOUNTS, READER, SecureBroker

GRSTATS = str(Path(sys.executable).parent / "grstats")


def _members(
    broker: SecureBroker, *args: str, password: str = ACCOUNTS[READER], host: str = "127.0.0.1"
) -> str:
    done = subprocess.run(
        [GRSTATS, "members", "--bus", f"{host}:{broker.port}", "--bus-user", READER,
         "--bus-password-env", "TEST_BUS_PW", "--timeout", "60", *args],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "TEST_BUS_PW": password},
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr and "no answer within" not in done.stderr, done.stderr
    return done.stderr


def test_a_wrong_password_is_the_brokers_refusal(secure_broker: SecureBroker) -> None:
    err = _members(secure_broker, "--bus-tls", "--bus-ca-file", secure_broker.ca_file,
                   password="wrong")  # fmt: skip
    assert "Bad user name or password" in err or "Not authorized" in err, err


def test_a_missing_ca_is_a_verification_error(secure_broker: SecureBroker) -> None:
    err = _members(secure_broker, "--bus-tls")  # the system CAs do not know the test CA
    assert "CERTIFICATE_VERIFY_FAILED" in err, err
    assert "self-signed certificate in certificate chain" in err or "local issuer" in err, err


def test_a_name_the_certificate_lacks_is_named(secure_broker: SecureBroker) -> None:
    # the broker's certificate is for IP 127.0.0.1 only
    err = _members(secure_broker, "--bus-tls", "--bus-ca-file", secure_broker.ca_file,
                   host="localhost")  # fmt: skip
    assert "CERTIFICATE_VERIFY_FAILED" in err and "'localhost'" in err, err


def test_plain_text_to_the_tls_port_says_so(secure_broker: SecureBroker) -> None:
    err = _members(secure_broker, "--bus-no-tls")
    assert f"127.0.0.1:{secure_broker.port}" in err and "try TLS" in err, err
