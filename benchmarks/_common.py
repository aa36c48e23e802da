"""Helpers shared by the benchmark scripts (run as `python benchmarks/bench_*.py`)."""

from __future__ import annotations

import os
import platform


def machine(*extra: str) -> str:
    """The machine line every benchmark prints with its figures.

    Args:
        extra: further " | "-separated facts (library versions, load average).

    Returns:
        "machine: <platform> | <arch> | <Python> | <n> CPUs[ | extra...]".
    """
    parts = [
        platform.platform(),
        platform.machine(),
        f"{platform.python_implementation()} {platform.python_version()}",
        f"{os.cpu_count()} CPUs",
        *extra,
    ]
    return "machine: " + " | ".join(parts)
