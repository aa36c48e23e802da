"""protocol.frozen: a builder makes the very object the dataclass's __init__ makes."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from protocol import ApplierChannel, CommitPathCounters, LagStage, PipelineStats
from protocol.frozen import builder


@dataclasses.dataclass(frozen=True, slots=True)
class _Pair:
    left: int
    right: tuple[str, ...] = ()


def test_built_object_equals_the_init_one_in_every_way() -> None:
    made = _Pair(1, ("a",))
    built = builder(_Pair)(1, ("a",))
    assert type(built) is _Pair
    assert built == made
    assert hash(built) == hash(made)
    assert repr(built) == repr(made)
    assert dataclasses.asdict(built) == {"left": 1, "right": ("a",)}
    assert dataclasses.replace(built, left=2) == _Pair(2, ("a",))
    assert pickle.loads(pickle.dumps(built)) == made


def test_built_object_stays_frozen() -> None:
    built = builder(_Pair)(1, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.left = 2  # type: ignore[misc]


def test_every_field_is_required_and_positional() -> None:
    with pytest.raises(TypeError):
        builder(_Pair)(1)


@pytest.mark.parametrize(
    "cls", [LagStage, ApplierChannel, CommitPathCounters, PipelineStats], ids=lambda c: c.__name__
)
def test_protocol_sections_build_alike(cls: type) -> None:
    values = [f"v{i}" for i in range(len(dataclasses.fields(cls)))]
    assert builder(cls)(*values) == cls(*values)


def test_refuses_what_it_cannot_build_alike() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclasses.dataclass(slots=True)
    class NotFrozen:
        x: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    for cls in (NoSlots, NotFrozen, Checked, int):
        with pytest.raises(TypeError):
            builder(cls)
