"""The mysql source's fixtures (tests/fixtures/mysql_source.py) for every module here."""

from tests.fixtures.mysql_source import fake, make_source, versioned

__all__ = ["fake", "make_source", "versioned"]  # fixtures, used by name
