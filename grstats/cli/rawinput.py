"""Raw bytes from the operator: pasted hex, hex on stdin, or a file (`decode`, `binlog decode`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from grstats.config import LocalInputError, read_local_file

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


def read_input(hex_args: tuple[str, ...], file: Path | None, max_bytes: int) -> bytes:
    """The bytes named by HEX arguments ('-': hex on stdin) or --file.

    Args:
        hex_args: the HEX arguments.
        file: --file.
        max_bytes: the most bytes decoded: a larger file (or a device, a FIFO:
            not a regular file) is refused unread, hex on stdin is read only up
            to what that many bytes take with separators.

    Raises:
        InputError: both or neither given, unreadable or refused file, bad hex.
    """
    if file is not None:
        if hex_args:
            raise InputError("give either HEX or --file, not both")
        try:
            return read_local_file(file, max_bytes)
        except LocalInputError as exc:
            raise InputError(f"{file}: {exc}") from None
    if not hex_args:
        raise InputError("nothing to decode: give HEX, '-' for hex on stdin, or --file PATH")
    if hex_args == ("-",):
        cap = 4 * max_bytes + 64  # two digits a byte, a separator, a prefix
        text = sys.stdin.read(cap + 1)
        if len(text) > cap:
            raise InputError(f"hex on stdin past {cap} characters: at most {max_bytes} bytes")
        return parse_hex(text)
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
