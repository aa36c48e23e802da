"""Raw bytes from the operator: pasted hex, hex on stdin, or a file (`decode`, `binlog decode`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

_HEX_NOISE = re.compile(r"[\s:]+")
F = TypeVar("F", bound=Callable[..., object])


class InputError(Exception):
    """The bytes to decode could not be obtained; the message is for the user."""


def parse_hex(text: str) -> bytes:
    """Turn pasted hex into bytes, tolerating whitespace, colons and a 0x prefix.

    Args:
        text: hex digits as copied from a capture or a log.

    Returns:
        The bytes.

    Raises:
        InputError: not an even number of hex digits.
    """
    cleaned = _HEX_NOISE.sub("", text)
    if cleaned[:2].lower() == "0x":
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        odd = " (odd number of digits)" if len(cleaned) % 2 else ""
        raise InputError(f"not valid hex{odd}: {_preview(cleaned)}") from None


def _preview(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def read_input(hex_args: tuple[str, ...], file: Path | None) -> bytes:
    """The bytes named by HEX arguments ('-': hex on stdin) or --file.

    Raises:
        InputError: both or neither given, unreadable file, bad hex.
    """
    if file is not None:
        if hex_args:
            raise InputError("give either HEX or --file, not both")
        try:
            return file.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {file}: {exc.strerror or exc}") from None
    if not hex_args:
        raise InputError("nothing to decode: give HEX, '-' for hex on stdin, or --file PATH")
    if hex_args == ("-",):
        return parse_hex(sys.stdin.read())
    return parse_hex("".join(hex_args))


def raw_input_options(file_help: str) -> Callable[[F], F]:
    """The `[HEX | -]` argument and `--file/-f PATH` option; the command gets
    `hex_text` and `file` for `read_input`."""

    def decorate(func: F) -> F:
        func = click.option(
            "--file",
            "-f",
            "file",
            type=click.Path(dir_okay=False, path_type=Path),
            help=file_help,
        )(func)
        return click.argument("hex_text", metavar="[HEX | -]", nargs=-1)(func)

    return decorate
