"""GtidSet against an independent model, and fuzzing: only ProtocolError or a GtidSet.

The model is a Python set of GTIDs over small GNO ranges; expected values never
come from the code under test.
"""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import Gtid, GtidSet, ProtocolError
from tests.fixtures.gtid_text import Z

# --- property tests against an independent model ------------------------------

UUIDS = [Z, "3e11fa47-71ca-11e1-9e33-c80aa9429562", "ffffffff-0000-0000-0000-000000000000"]
TAGS = ["a", "B_2", "zz"]
Model = set[tuple[str, str, int]]


def _model_text(model: Model) -> str:
    """MySQL's printed form of a model, written independently of protocol.gtid."""
    blocks = []
    for uuid in sorted({u for u, _, _ in model}):
        out = uuid
        for tag in sorted({t for u, t, _ in model if u == uuid}):
            out += f":{tag}" if tag else ""
            gnos = sorted(g for u, t, g in model if u == uuid and t == tag)
            start = prev = gnos[0]
            for g in [*gnos[1:], None]:
                if g is not None and g == prev + 1:
                    prev = g
                    continue
                out += f":{start}" if start == prev else f":{start}-{prev}"
                if g is not None:
                    start = prev = g
        blocks.append(out)
    return ",\n".join(blocks)


def _expand(s: GtidSet) -> Model:
    return {(u, t, g) for u, t, first, last in s.intervals() for g in range(first, last + 1)}


@st.composite
def gno_text(draw: st.DrawFn, n: int) -> str:
    fmt = draw(st.sampled_from(["{}", "0x{:x}", "0X{:X}", "0{:o}", "+{}"]))
    return fmt.format(n)


@st.composite
def set_text(draw: st.DrawFn) -> tuple[str, Model]:
    """Random MySQL-acceptable text with the set it denotes, built side by side."""
    model: Model = set()
    elements = []
    for _ in range(draw(st.integers(0, 4))):
        uuid = draw(st.sampled_from(UUIDS))
        text = uuid.upper() if draw(st.booleans()) else uuid
        tag = ""
        for _ in range(draw(st.integers(0, 4))):
            ws = draw(st.sampled_from(["", "", " ", "\t", "\n "]))
            if draw(st.integers(0, 3)) == 0:
                tag = draw(st.sampled_from(TAGS))
                text += f"{ws}:{ws}{tag}"
                tag = tag.lower()
                continue
            first, last = draw(st.integers(1, 30)), draw(st.integers(0, 30))
            if draw(st.booleans()):
                text += f":{ws}{draw(gno_text(first))}"
                model |= {(uuid, tag, first)}
            else:
                text += f":{draw(gno_text(first))}{ws}-{ws}{draw(gno_text(last))}"
                model |= {(uuid, tag, g) for g in range(first, last + 1)}
        elements.append(text)
    separator = draw(st.sampled_from([",", ", ", ",\n", " ,, "]))
    return separator.join(elements), model


@settings(max_examples=200)
@given(set_text())
def test_parse_and_print_match_the_model(case: tuple[str, Model]) -> None:
    text, model = case
    s = GtidSet.parse(text)
    assert _expand(s) == model
    assert str(s) == _model_text(model)
    assert s.count() == len(s) == len(model)
    assert GtidSet.parse(str(s)) == s


@settings(max_examples=200)
@given(set_text(), set_text())
def test_algebra_matches_the_model(left: tuple[str, Model], right: tuple[str, Model]) -> None:
    x, y = GtidSet.parse(left[0]), GtidSet.parse(right[0])
    mx, my = left[1], right[1]
    assert _expand(x | y) == mx | my
    assert _expand(x & y) == mx & my
    assert _expand(x - y) == mx - my
    assert str(x - y) == _model_text(mx - my)
    assert (x <= y) == (mx <= my)
    assert (x < y) == (mx < my)
    assert (x == y) == (mx == my)
    for uuid in UUIDS:
        for tag in ["", "a", "b_2"]:
            for gno in range(1, 32):
                assert ((uuid, tag, gno) in x) == ((uuid, tag, gno) in mx)


# --- fuzzing: only ProtocolError or a GtidSet ---------------------------------

ALPHABET = "0123456789abcdefABCDEFxX:-, \n_tTgz+\t"


def _parse_or_protocol_error(text: str | bytes) -> None:
    try:
        s = GtidSet.parse(text)
    except ProtocolError as err:
        assert isinstance(err.offset, int)
        return
    assert GtidSet.parse(str(s)) == s


@settings(max_examples=1000)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_fuzz_random_text(text: str) -> None:
    _parse_or_protocol_error(text)


@settings(max_examples=600)
@given(set_text(), st.data())
def test_fuzz_mutated_valid_text(case: tuple[str, Model], data: st.DataObject) -> None:
    text = case[0] or Z
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        if data.draw(st.booleans()) and at < len(text):
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + data.draw(st.sampled_from(ALPHABET)) + text[at:]
    _parse_or_protocol_error(text)


@settings(max_examples=400)
@given(st.binary(max_size=60))
def test_fuzz_random_bytes(data: bytes) -> None:
    _parse_or_protocol_error(data)
    with contextlib.suppress(ProtocolError):
        Gtid.parse(data)
