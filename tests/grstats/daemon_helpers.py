"""Moved to tests/fixtures/daemons.py (issue 25): this name stays for the modules still here."""

from tests.fixtures.daemons import *  # noqa: F403
