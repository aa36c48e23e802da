"""simulate's text columns: the model's hourly lists as Arrow arrays, whatever shortcut
builds them (one value repeated, texts on every n-th second only), hold the same rows as
the lists converted item by item."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from grstats.offline.dayfill import _text_array


def _plain(parts: list[list[Any]], type_: pa.DataType) -> pa.Array:
    return pa.array([value for part in parts for value in part], type_)


def test_one_value_repeated_is_built_once_for_the_members_that_share_it() -> None:
    # equal texts, distinct objects (as the model's next hour may hand them)
    parts = [["ONLINE" + ""] * 3, ["".join(["ON", "LINE"])] * 2]
    repeated: dict[tuple[type, Any, Any], Any] = {}
    first = _text_array(parts, pa.string(), 0, 30, repeated)
    assert first.to_pylist() == ["ONLINE"] * 5
    assert first.equals(_plain(parts, pa.string()))
    again = _text_array([["ONLINE"] * 5], pa.string(), 0, 30, repeated)
    assert again is first
    # 3306 and 3306.0 are equal, but not one column's value for the other
    assert _text_array([[3306] * 5], pa.int32(), 0, 30, repeated).to_pylist() == [3306] * 5
    assert len(repeated) == 2


def test_texts_on_every_third_second_only() -> None:
    # seconds 7..14 then 15..19: the texts on 9, 12, 15 and 18 (divisible by 3)
    parts = [[None, None, "a:1-5", None, None, "", None, None], ["a:1-9", None, None, "é", None]]
    got = _text_array(parts, pa.string(), 7, 3, {})
    first_hour = [None, None, "a:1-5", None, None, "", None, None]
    assert got.to_pylist() == [*first_hour, "a:1-9", None, None, "é", None]
    assert got.null_count == 9
    assert got.equals(_plain(parts, pa.string()))


def test_a_null_on_the_cadence_and_a_text_off_it() -> None:
    on = [["x", None, None, None, None, None, "y"]]  # seconds 0..6, every 3: 0, 3 and 6
    got = _text_array(on, pa.string(), 0, 3, {})
    assert got.to_pylist() == ["x", None, None, None, None, None, "y"]
    off = [["x", "z", None, None], [None, None, "y"]]  # "z" at second 1
    got = _text_array(off, pa.string(), 0, 3, {})
    assert got.to_pylist() == ["x", "z", None, None, None, None, "y"]
    numbers = [[5, None, None, 6]]  # not a text column: converted item by item
    assert _text_array(numbers, pa.int64(), 0, 3, {}).to_pylist() == [5, None, None, 6]
