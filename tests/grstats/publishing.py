"""Moved to tests/fixtures/publishing.py (issue 25): this name stays for the modules still here."""

from tests.fixtures.publishing import *  # noqa: F403
