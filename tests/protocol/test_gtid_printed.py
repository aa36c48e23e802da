"""GtidSet.parse's fast path for MySQL's printed form reads exactly as the general path.

The general path is the transcription of ``Gtid_set::add_gtid_text`` that the
golden vectors check; the fast path must give the same set for every text it
takes, take what MySQL prints (the vectors' normalized texts), and leave
everything else (whitespace, upper case, octal or hex GNOs, empty elements)
to the general path.
"""

from __future__ import annotations

import re

import pytest

from protocol import GtidSet, gtid_text
from tests.fixtures.paths import load_vectors

GTID_TEXT = "pipeline_stats_gtid_text.json"
A = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
B = "b8f3a0d3-b50b-dc85-6329-e6e8e52c8de9"


def _general(text: str, monkeypatch: pytest.MonkeyPatch) -> GtidSet:
    with monkeypatch.context() as m:
        m.setattr(gtid_text, "_parse_printed", lambda s: None)
        return GtidSet.parse(text)


def test_what_mysql_prints_takes_the_fast_path_and_reads_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    printed = [c["normalized"] for c in load_vectors(GTID_TEXT) if c["valid"] and c["normalized"]]
    printed += [f"{A}:1-5:7,\n{B}:9", f"{A}:1-5:blue:1-3:red:4,\n{B}:blue:2", f"{A}:5-3:7"]
    for text in printed:
        # GNOs of 19 digits may pass GNO_MAX: the general path checks them
        if re.search(r"[0-9]{19}", text) is None:
            assert gtid_text._parse_printed(text) is not None, text
        assert GtidSet.parse(text) == _general(text, monkeypatch), text


@pytest.mark.parametrize(
    "text",
    [
        "",
        f" {A}:1-5",
        f"{A.upper()}:1-5",
        f"{A}:010",
        f"{A}:0x10",
        f"{A}:1-5,,{B}:2",
        f"{A}:1-5 ,{B}:2",
        f"{A}:BLUE:1",
        f"{A}:1234567890123456789",
        f"{A}:1-",
        f"{A}:0",
    ],
)
def test_other_texts_take_the_general_path(text: str) -> None:
    assert gtid_text._parse_printed(text) is None


def test_the_fast_path_drops_a_reversed_interval_as_mysql_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = f"{A}:5-3:7,\n{A}:1-2"
    assert str(GtidSet.parse(text)) == f"{A}:1-2:7" == str(_general(text, monkeypatch))
