"""A raw MySQL-protocol client for the endpoint's fault tests: packets as an attacker sends them.

Framing and the handshake follow MySQL's client/server protocol (3-byte
length, 1-byte sequence; Protocol::HandshakeV10 and HandshakeResponse41); the
password scramble is PyMySQL's own `scramble_native_password`. Nothing here is
taken from grstats' server code.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from dataclasses import dataclass

from pymysql._auth import scramble_native_password

CLIENT_LONG_PASSWORD = 1
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_SSL = 1 << 11
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_PLUGIN_AUTH = 1 << 19
BASE_CAPABILITIES = (
    CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
)
COM_QUERY = 3
# the longest the server's loop may stall under an attack: the issue measured 5-39 s; a
# shared, loaded test machine alone stalls a thread for a few hundred ms at times
STALL_BOUND_S = 1.0


class Closed(Exception):
    """The server ended the connection."""


@dataclass
class Raw:
    """One raw client connection."""

    sock: socket.socket
    salt: bytes = b""
    seq: int = 0

    def recv_exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Closed(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def read_packet(self) -> bytes:
        header = self.recv_exact(4)
        length = int.from_bytes(header[:3], "little")
        self.seq = header[3] + 1
        return self.recv_exact(length)

    def send_packet(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack("<I", len(payload) | (self.seq << 24))[:4] + payload)
        self.seq = (self.seq + 1) % 256

    def handshake(self, data: bytes | None = None) -> None:
        """Read the server's HandshakeV10 (or take it read) and keep its 20-byte auth data."""
        data = self.read_packet() if data is None else data
        version_end = data.index(b"\0", 1)
        pos = version_end + 1 + 4
        part1 = data[pos : pos + 8]
        pos += 8 + 1 + 2 + 1 + 2 + 2
        auth_len = data[pos]
        pos += 1 + 10
        part2 = data[pos : pos + max(13, auth_len - 8)].rstrip(b"\0")
        self.salt = part1 + part2

    def login_packet(self, user: str, password: str, capabilities: int) -> bytes:
        auth = scramble_native_password(password.encode(), self.salt) if password else b""
        return (
            struct.pack("<IIB", capabilities, 1 << 24, 33)
            + b"\0" * 23
            + user.encode()
            + b"\0"
            + bytes([len(auth)])
            + auth
            + b"mysql_native_password\0"
        )

    def login(self, user: str, password: str, capabilities: int = BASE_CAPABILITIES) -> bytes:
        """Send a HandshakeResponse41; return the server's reply (OK or ERR payload)."""
        self.send_packet(self.login_packet(user, password, capabilities))
        return self.read_packet()

    def query(self, sql: str) -> bytes:
        """Send COM_QUERY; return the first reply packet."""
        self.seq = 0
        self.send_packet(bytes([COM_QUERY]) + sql.encode())
        return self.read_packet()

    def close(self) -> None:
        self.sock.close()


def connect(port: int, timeout: float = 10.0, source: str = "127.0.0.1") -> Raw:
    # `source`: the client's own loopback address (the endpoint caps logins per address)
    sock = socket.create_connection(
        ("127.0.0.1", port), timeout=timeout, source_address=(source, 0)
    )
    return Raw(sock)


def error_code(packet: bytes) -> int | None:
    """The MySQL error number of an ERR packet, None for any other packet."""
    if packet[:1] != b"\xff":
        return None
    code: int = struct.unpack("<H", packet[1:3])[0]
    return code


def wait_closed(raw: Raw, deadline_s: float) -> bool:
    """True when the server ends the connection within the deadline (any packets read first)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        raw.sock.settimeout(max(0.05, end - time.monotonic()))
        try:
            if not raw.sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class LoopWatch:
    """The longest gap between ticks of a 10 ms heartbeat on the server's own loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.max_gap = 0.0
        self._stop = threading.Event()
        self._future = asyncio.run_coroutine_threadsafe(self._beat(), loop)

    async def _beat(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            last = now

    def stop(self) -> float:
        self._stop.set()
        self._future.result(60)
        return self.max_gap
