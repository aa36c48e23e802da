"""TLS on the SQL endpoint: real clients verify the server against a throw-away CA.

The CA and the server certificate are the broker tests' (`make_test_ca`:
openssl, EC P-256, CA:TRUE/keyCertSign on the CA, SAN IP:127.0.0.1 and
serverAuth on the leaf). PyMySQL, the Debian `mariadb` client and
`openssl s_client -starttls mysql` each verify the chain on their own.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from grstats.sql import SqlOptions, native_password_hash
from tests.fixtures.broker import make_test_ca
from tests.fixtures.daemons import wait_for
from tests.fixtures.sql_inprocess import LOCAL, REMOTE, Running, serve

PASSWORD = "s3cret"

needs_mariadb = pytest.mark.skipif(shutil.which("mariadb") is None, reason="needs mariadb")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    return make_test_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_ca(tmp_path_factory.mktemp("other-ca"))[0]


def _options(ca: tuple[Path, Path, Path] | None, *, required: bool = False) -> SqlOptions:
    cert = {"tls_cert_file": str(ca[1]), "tls_key_file": str(ca[2])} if ca else {}
    return SqlOptions(
        port=0, password_hash=native_password_hash(PASSWORD), tls_required=required, **cert
    )


@pytest.fixture
def tls(ca: tuple[Path, Path, Path]) -> Iterator[Running]:
    yield from serve(_options(ca))


@pytest.fixture
def plain() -> Iterator[Running]:
    yield from serve(_options(None))


@pytest.fixture
def tls_only(ca: tuple[Path, Path, Path]) -> Iterator[Running]:
    yield from serve(_options(ca, required=True))


def _connect(port: int, **kw: object) -> pymysql.Connection:  # type: ignore[type-arg]
    return pymysql.connect(
        host="127.0.0.1", port=port, user="grstats", password=PASSWORD, connect_timeout=10, **kw
    )


def _mariadb(
    port: int, *tls: str, sql: str = "SELECT @@server_uuid"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(port), "-u", "grstats",
         f"-p{PASSWORD}", *tls, "-B", "-N", "-e", sql],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_pymysql_verifies_the_server_against_the_ca_and_reads_every_member(
    tls: Running, ca: tuple[Path, Path, Path]
) -> None:
    # ssl={'ca': ...}: CERT_REQUIRED and the host name (here the IP SAN) checked
    with _connect(tls.port, ssl={"ca": str(ca[0])}) as conn, conn.cursor() as cur:
        sock = conn._sock
        assert isinstance(sock, ssl.SSLSocket)
        assert sock.getpeercert()["subjectAltName"] == (("IP Address", "127.0.0.1"),)
        cur.execute(
            "SELECT MEMBER_ID FROM performance_schema.replication_group_member_stats "
            "ORDER BY MEMBER_ID"
        )
        assert cur.fetchall() == ((LOCAL,), (REMOTE,))
    assert tls.figures().tls_handshake_failures == 0


def test_verification_without_the_ca_fails_as_the_last_session_saw_it(
    tls: Running, ca: tuple[Path, Path, Path]
) -> None:
    # The root cause of "unable to get local issuer certificate": asking PyMySQL to
    # verify without giving it the CA (ssl_verify_cert / ssl_verify_identity
    # without ssl_ca) verifies against the system store, which lacks a throw-away CA.
    with pytest.raises(pymysql.OperationalError) as info:
        _connect(tls.port, ssl_verify_cert=True)
    assert "unable to get local issuer certificate" in str(info.value)
    # the server saw the client's alert: counted, no error packet counted (none
    # can reach a client that broke off the handshake), the endpoint serves on
    wait_for(lambda: tls.figures().tls_handshake_failures == 1 or None, 10, "the count")
    assert tls.figures().errors == {}
    with _connect(tls.port, ssl_ca=str(ca[0])) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)


def test_a_certificate_from_another_ca_is_refused(tls: Running, other_ca: Path) -> None:
    with pytest.raises(pymysql.OperationalError) as info:
        _connect(tls.port, ssl={"ca": str(other_ca)})
    assert "certificate verify failed" in str(info.value)


def test_pymysql_requiring_tls_against_a_plain_server_fails_cleanly(
    plain: Running, ca: tuple[Path, Path, Path]
) -> None:
    with pytest.raises(pymysql.OperationalError) as info:
        _connect(plain.port, ssl_ca=str(ca[0]))
    assert info.value.args[0] == 2026  # CR_SSL_CONNECTION_ERROR
    # and the server is unharmed
    with _connect(plain.port, ssl_disabled=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,)


@needs_mariadb
def test_mariadb_client_verifies_the_server_certificate(
    tls: Running, ca: tuple[Path, Path, Path], other_ca: Path
) -> None:
    good = _mariadb(tls.port, f"--ssl-ca={ca[0]}", "--ssl-verify-server-cert")
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip() == LOCAL
    cipher = _mariadb(tls.port, f"--ssl-ca={ca[0]}", "--ssl-verify-server-cert", sql="\\s")
    assert "SSL:" in cipher.stdout and "Cipher in use" in cipher.stdout, cipher.stdout
    bad = _mariadb(tls.port, f"--ssl-ca={other_ca}", "--ssl-verify-server-cert")
    assert bad.returncode != 0
    assert "ERROR 2026" in bad.stderr


@needs_mariadb
def test_mariadb_client_requiring_tls_against_a_plain_server_fails_cleanly(
    plain: Running, ca: tuple[Path, Path, Path]
) -> None:
    out = _mariadb(plain.port, f"--ssl-ca={ca[0]}", "--ssl-verify-server-cert")
    assert out.returncode != 0
    assert "ERROR 2026" in out.stderr


def test_tls_required_refuses_a_plain_client_with_3159(
    tls_only: Running, ca: tuple[Path, Path, Path]
) -> None:
    with pytest.raises(pymysql.OperationalError) as info:
        _connect(tls_only.port, ssl_disabled=True)
    assert info.value.args[0] == 3159
    assert "require_secure_transport" in info.value.args[1]
    with _connect(tls_only.port, ssl={"ca": str(ca[0])}) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@server_uuid")
        assert cur.fetchone() == (LOCAL,)
    assert tls_only.figures().errors == {3159: 1}


@needs_mariadb
def test_tls_required_refuses_the_mariadb_client_without_tls(tls_only: Running) -> None:
    out = _mariadb(tls_only.port, "--skip-ssl")
    assert out.returncode != 0
    assert "ERROR 3159 (HY000)" in out.stderr, out.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_openssl_starttls_mysql_verifies_the_chain(
    tls: Running, ca: tuple[Path, Path, Path]
) -> None:
    out = subprocess.run(
        ["openssl", "s_client", "-starttls", "mysql", "-connect", f"127.0.0.1:{tls.port}",
         "-CAfile", str(ca[0]), "-verify_ip", "127.0.0.1", "-verify_return_error"],
        input="", capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert "Verify return code: 0 (ok)" in out.stdout, out.stdout + out.stderr


def _read_packet(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "the server closed the connection"
            data += chunk
        return data

    header = exactly(4)
    return exactly(int.from_bytes(header[:3], "little"))


def test_client_hello_sent_with_the_ssl_request_is_not_lost(
    tls: Running, ca: tuple[Path, Path, Path]
) -> None:
    # The race a loaded server loses: the client's SSLRequest and its TLS
    # ClientHello arrive in one segment. Sent here in one write, every time.
    ssl_request = (
        (0x800 | 0x200 | 0x8000 | 0x80000).to_bytes(4, "little")  # SSL, 4.1, secure, plugin
        + (1 << 24).to_bytes(4, "little")
        + bytes([45])  # utf8mb4
        + bytes(23)
    )
    context = ssl.create_default_context(cafile=str(ca[0]))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_client = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with socket.create_connection(("127.0.0.1", tls.port), timeout=15) as sock:
        _read_packet(sock)  # the server's greeting
        with pytest.raises(ssl.SSLWantReadError):
            tls_client.do_handshake()
        packet = len(ssl_request).to_bytes(3, "little") + bytes([1]) + ssl_request
        sock.sendall(packet + outgoing.read())  # SSLRequest + ClientHello together
        for _ in range(20):  # a TLS 1.3 handshake takes two round trips
            try:
                tls_client.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                data = sock.recv(65536)  # times out (15 s) if the server waits forever
                assert data, "the server closed the connection"
                incoming.write(data)
        sock.sendall(outgoing.read())
        assert tls_client.version() in ("TLSv1.2", "TLSv1.3")
        assert tls_client.getpeercert()["subjectAltName"] == (("IP Address", "127.0.0.1"),)
