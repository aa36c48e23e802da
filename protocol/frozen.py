"""Building frozen, slotted dataclasses at the cost of a plain object: the decoders' hot path.

A frozen dataclass's generated `__init__` sets each field through
`object.__setattr__`, looked up again for every field to get past the frozen
guard; for the 24-field sections that is most of a decode's building cost.
`builder(cls)` returns a function of the fields, positional and in
declaration order, that creates the instance with `object.__new__` and fills
each slot through its member descriptor -- where `__init__`'s detour ends --
so the result is the same object `cls(*values)` makes. It takes no defaults:
every field is passed.

Invariants: only for frozen dataclasses with `__slots__`, no `__post_init__`
and no `InitVar` (checked when the builder is made, at import). The code is
generated from field indexes only (no name reaches the source text), as
dataclasses generates `__init__`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def builder(cls: type[T]) -> Callable[..., T]:
    """A fast `cls(*values)` for a frozen, slotted dataclass (see the module docstring).

    Args:
        cls: the dataclass.

    Returns:
        A function taking every field positionally, in declaration order.

    Raises:
        TypeError: `cls` is not a frozen dataclass with slots, or it has a
            `__post_init__` (a programming error, raised at import).
    """
    params = getattr(cls, "__dataclass_params__", None)
    if (
        params is None
        or not params.frozen
        or "__slots__" not in cls.__dict__
        or hasattr(cls, "__post_init__")
    ):
        raise TypeError(f"{cls.__name__}: not a frozen, slotted dataclass without __post_init__")
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type] # a dataclass
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for i, name in enumerate(names):
        namespace[f"_set{i}"] = cls.__dict__[name].__set__
    args = ", ".join(f"a{i}" for i in range(len(names)))
    lines = [f"def build({args}):", "    obj = _new(_cls)"]
    lines += [f"    _set{i}(obj, a{i})" for i in range(len(names))]
    lines.append("    return obj")
    exec("\n".join(lines), namespace)  # generated from indexes only, as dataclasses does
    build: Callable[..., T] = namespace["build"]
    build.__qualname__ = f"build_{cls.__name__}"
    return build
