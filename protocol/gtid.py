"""GTID sets: MySQL's parser and printer, and set algebra.

CONTRACT STUB: being implemented.
"""

from __future__ import annotations


class GtidSet:
    @classmethod
    def parse(cls, text: str | bytes) -> GtidSet:
        raise NotImplementedError
