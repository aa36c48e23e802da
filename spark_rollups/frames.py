"""A small result DataFrame's rows as Python dicts, through Arrow, on pyspark 3.5 and 4.x.

Strategy: pyspark 4.0 added `DataFrame.toArrow()`; pyspark 3.5 has the same
Arrow collection only behind `toPandas` (`_collect_as_arrow`, the method
`toArrow` itself calls in 4.x). Arrow batches rather than pickled `Row`
objects: the same Python values on both versions, and timestamps never pass
through the driver's local time zone.

Invariants: only for the few hundred rows a report section collects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame

__all__ = ["rows"]


def rows(frame: DataFrame) -> list[dict[str, Any]]:
    """Every row of `frame` as a dict (column name -> Python value).

    Args:
        frame: a small DataFrame (it is collected to the driver).

    Returns:
        The rows, in the frame's order.
    """
    to_arrow = getattr(frame, "toArrow", None)
    if to_arrow is not None:  # pyspark >= 4.0
        out: list[dict[str, Any]] = to_arrow().to_pylist()
        return out
    # pyspark 3.5: what its toPandas collects (an attribute to the type checker's
    # pyspark 4 stubs would be a column, hence getattr)
    collect: Callable[[], list[Any]] = getattr(frame, "_collect_as_arrow")  # noqa: B009
    return [row for batch in collect() for row in batch.to_pylist()]
