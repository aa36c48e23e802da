"""The CLI's user-facing failures: one line on stderr, a meaningful exit status.

`ReadError` is raised by the readers (`apiread`, `busread`), which know nothing
of click; `UserError` / `BadArgument` are what the commands raise, so click
prints `Error: <one line>` and exits 1 (could not read) or 2 (a mistake in the
arguments or the config file). No traceback reaches a user for either.
"""

from __future__ import annotations

import click

__all__ = ["BadArgument", "ReadError", "UserError", "user_error"]


class ReadError(Exception):
    """A failure the user can fix; `str()` is one line for the terminal.

    Attributes:
        exit_code: 1 for "could not read" (daemon down, broker unreachable),
            2 for a mistake in the arguments or the config file.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UserError(click.ClickException):
    """Could not read: one line on stderr (`Error: ...`), exit status 1."""

    exit_code = 1


class BadArgument(UserError):
    """A mistake in the arguments or the config file: one line, exit status 2."""

    exit_code = 2


def user_error(message: str, exit_code: int = 1) -> UserError:
    """The exception for a user-caused failure with this exit status (1 or 2)."""
    return BadArgument(message) if exit_code == 2 else UserError(message)
