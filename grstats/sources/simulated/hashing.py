"""Counter-based pseudo-randomness: every draw is a hash of its coordinates.

Strategy: nothing in the model keeps a random state. A draw is
splitmix64 applied to (key, coordinate, ...), where the key is a blake2b digest
of (seed, group, purpose). So a value depends only on where it is (member,
hour, second), never on what was computed before: every daemon, evaluating in
any order, draws the same numbers.

Invariants: uint64 arithmetic wraps (numpy) or is masked to 64 bits (Python);
the vectorised and the scalar finaliser agree bit for bit.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["I64", "U64", "key", "mix", "mix_py", "rand", "uniform"]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]

_MASK64 = (1 << 64) - 1


def key(*parts: object) -> int:
    """64-bit key of the parts (blake2b of their '|'-joined text)."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def mix(x: U64) -> U64:
    """splitmix64 finaliser, vectorised (uint64 arithmetic wraps)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def mix_py(x: int) -> int:
    """splitmix64 finaliser of one Python int (same result as `mix`)."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def rand(k: int, *coords: Any) -> U64:
    """Hash of (k, coords...) broadcast over the coordinate arrays."""
    x: U64 = np.asarray(np.uint64(k), dtype=np.uint64)
    for c in coords:
        x = mix(x ^ np.asarray(c, dtype=np.int64).astype(np.uint64))
    return x


def uniform(r: U64) -> npt.NDArray[np.float64]:
    """Uniform [0, 1) doubles from the top 53 bits of the hashes."""
    return (r >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
