"""A member's ext.gtids parsed again only when its sets changed (core/gtid_reader.py)."""

from __future__ import annotations

import pytest

from grstats.core.gtid_reader import GtidStateReader
from protocol import GtidSet, ProtocolError, decode_gtid_state

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
KEY = ("g", "m")
SETS = f"{UUID}:1:3:5"


def test_a_repeated_set_is_not_parsed_again_but_its_time_is_new() -> None:
    reader = GtidStateReader()
    first = reader.read(KEY, [1, 10, SETS, ""])
    again = reader.read(KEY, [1, 20, SETS, ""])
    assert again.executed is first.executed  # the kept parse, not a new one
    assert again.at_us == 20
    assert again == decode_gtid_state([1, 20, SETS, ""])  # what a full decode says


def test_a_changed_set_is_parsed_again() -> None:
    reader = GtidStateReader()
    reader.read(KEY, [1, 10, SETS, ""])
    moved = reader.read(KEY, [1, 20, f"{UUID}:1:3:5:7", ""])
    assert moved.executed == GtidSet.parse(f"{UUID}:1:3:5:7")


def test_a_repeat_with_a_bad_version_or_time_is_still_refused() -> None:
    reader = GtidStateReader()
    reader.read(KEY, [1, 10, SETS, ""])
    with pytest.raises(ProtocolError):
        reader.read(KEY, [2, 20, SETS, ""])
    with pytest.raises(ProtocolError):
        reader.read(KEY, [1, 0, SETS, ""])


def test_the_texts_kept_are_bounded_in_bytes() -> None:
    reader = GtidStateReader(max_text_bytes=2 * len(SETS))
    first = reader.read(("g", "a"), [1, 10, SETS, ""])
    reader.read(("g", "b"), [1, 10, SETS, ""])
    reader.read(("g", "c"), [1, 10, SETS, ""])  # past the bound: "a" forgotten
    assert reader.read(("g", "a"), [1, 20, SETS, ""]).executed is not first.executed
