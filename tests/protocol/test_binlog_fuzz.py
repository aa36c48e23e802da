"""Fuzzing the binlog decoders: only ProtocolError may leave them.

Two loops keep `make test` fast: hypothesis with a few thousand examples, and
a seeded loop of 100 000 mutated inputs per decoder (bit flips, truncations,
byte substitutions and random bytes seeded from real events), which runs in
seconds. Memory stays bounded because every length read from the input is
checked against the bytes present before anything is allocated from it.
"""

from __future__ import annotations

import contextlib
import json
import random
import struct
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import BinlogScanner, ProtocolError, decode_body, decode_event

VECTORS = Path(__file__).parent / "binlog_vectors"
ROUNDS = 100_000


def _seeds() -> dict[int, list[bytes]]:
    """Real bodies per event type, and whole real events (key -1)."""
    seeds: dict[int, list[bytes]] = {33: [], 34: [], 35: [], 42: [], 15: [], -1: []}
    for vector in json.loads((VECTORS / "bodies.json").read_text()):
        seeds[vector["event_type"]].append(bytes.fromhex(vector["body_hex"]))
    for path in sorted((VECTORS / "files").iterdir()):
        data = path.read_bytes()
        pos = 4
        while pos + 19 <= len(data):
            event_type = data[pos + 4]
            size = struct.unpack_from("<I", data, pos + 9)[0]
            if size < 19 or pos + size > len(data):
                break
            event = data[pos : pos + size]
            if event_type in seeds:
                seeds[-1].append(event)
                seeds[event_type].append(event[19:-4] if event_type != 15 else event[19:])
            pos += size
    return seeds


SEEDS = _seeds()


def _mutate(rng: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    kind = rng.randrange(5)
    if kind == 0 and data:  # bit flips
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncation
        del data[rng.randint(0, len(data)) :]
    elif kind == 2 and data:  # byte substitution with edge values
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.choice(
                (0, 1, 0x7F, 0x80, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF)
            )
    elif kind == 3:  # trailing garbage
        data += rng.randbytes(rng.randint(1, 16))
    else:  # random bytes of a similar length
        data = bytearray(rng.randbytes(rng.randint(0, len(seed) + 8)))
    return bytes(data)


def _fuzz(decoder: Callable[[bytes], object], seeds: list[bytes], salt: int) -> int:
    rng = random.Random(7319 + salt)
    errors = 0
    for _ in range(ROUNDS):
        try:
            decoder(_mutate(rng, rng.choice(seeds)))
        except ProtocolError:
            errors += 1
    return errors


def test_seeded_mutations_of_classic_gtid_bodies_raise_only_protocol_error() -> None:
    seeds = SEEDS[33] + SEEDS[34]
    assert 0 < _fuzz(lambda b: decode_body(33, b), seeds, 1) < ROUNDS


def test_seeded_mutations_of_anonymous_gtid_bodies_raise_only_protocol_error() -> None:
    assert 0 < _fuzz(lambda b: decode_body(34, b), SEEDS[34], 2) < ROUNDS


def test_seeded_mutations_of_tagged_gtid_bodies_raise_only_protocol_error() -> None:
    assert 0 < _fuzz(lambda b: decode_body(42, b), SEEDS[42], 3) < ROUNDS


def test_seeded_mutations_of_previous_gtids_bodies_raise_only_protocol_error() -> None:
    assert 0 < _fuzz(lambda b: decode_body(35, b), SEEDS[35], 4) < ROUNDS


def test_seeded_mutations_of_format_description_bodies_raise_only_protocol_error() -> None:
    assert 0 < _fuzz(lambda b: decode_body(15, b), SEEDS[15], 5) < ROUNDS


def test_seeded_mutations_of_whole_events_raise_only_protocol_error() -> None:
    assert 0 < _fuzz(decode_event, SEEDS[-1], 6) < ROUNDS


def _scan_all(data: bytes) -> None:
    scanner = BinlogScanner()
    scanner.feed(data[:7])
    scanner.feed(data[7:])
    scanner.finish()


def test_seeded_mutations_of_real_logs_raise_only_protocol_error_from_the_scanner() -> None:
    logs = [
        p.read_bytes() for p in sorted((VECTORS / "files").iterdir()) if p.stat().st_size < 4096
    ]
    rng = random.Random(42)
    for _ in range(ROUNDS // 20):  # logs are ~40x longer than events
        with contextlib.suppress(ProtocolError):
            _scan_all(_mutate(rng, rng.choice(logs)))


_FUZZ_SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))


@_FUZZ_SETTINGS
@given(st.sampled_from([15, 33, 34, 35, 42]), st.binary(max_size=200))
def test_random_bodies_raise_only_protocol_error(event_type: int, body: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_body(event_type, body)


@_FUZZ_SETTINGS
@given(st.binary(max_size=120), st.sampled_from(["auto", "crc32", "none"]))
def test_random_events_raise_only_protocol_error(data: bytes, mode: str) -> None:
    with contextlib.suppress(ProtocolError):
        decode_event(data, mode)


@_FUZZ_SETTINGS
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=64))
def test_random_streams_raise_only_protocol_error(data: bytes, chunk: int) -> None:
    scanner = BinlogScanner(max_event_size=4096)
    try:
        for start in range(0, len(data) + 4, chunk):
            scanner.feed((b"\xfebin" + data)[start : start + chunk])
        scanner.finish()
    except ProtocolError:
        pass
