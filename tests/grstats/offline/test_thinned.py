"""simulate thins the applier's counters itself: exactly what the history writer's rule keeps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from grstats.core.records import APPLIER_HISTORY_COLUMNS
from grstats.history.cadence import thin_counters
from grstats.history.parquet import history_schema
from grstats.offline.dayfill import _thinned

DAY_S = 86_400


def _table(at_us: np.ndarray, counters: dict[str, np.ndarray | pa.Array]) -> pa.Table:
    n = len(at_us)
    schema = history_schema()
    columns = {
        "member_id": pa.array(["m1"] * n, pa.string()),
        "incarnation": pa.array(np.full(n, 7, dtype=np.uint64)),
        "sampled_at": pa.array(at_us, pa.int64()).cast(schema.field("sampled_at").type),
        "seq": pa.array(np.arange(1, n + 1), pa.int64()),
        **counters,
    }
    return pa.table(
        {f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in schema}, schema=schema
    )


def test_the_simulators_thinning_is_the_writers_rule() -> None:
    rng = np.random.default_rng(29)
    n = 400
    day = 20_000 * DAY_S  # ends 120 s into the next UTC day: the day boundary is in it
    secs = day + DAY_S - 280 + np.arange(n)
    at_us = secs * 1_000_000 + rng.integers(0, 900_000, n)  # jitter inside each second
    at_us[50] = at_us[49]  # a repeated time: not a clean link
    counters = {}
    for k, name in enumerate(APPLIER_HISTORY_COLUMNS):
        values = np.cumsum(rng.integers(0, 5, n))
        if k == 1:
            values[200:] -= values[200] + 1  # a reset: falls below zero's neighbourhood
        if k == 2:
            values[123] = values[122]  # equal is not lower
        counters[name] = values.astype(np.int64)
    full = _table(at_us, {k: pa.array(v, pa.int64()) for k, v in counters.items()})
    expected = thin_counters(full)  # the writer's rule, on the full cadence
    ours = _thinned({"sampled_at": at_us, **counters}, APPLIER_HISTORY_COLUMNS)
    thinned = _table(at_us, ours)
    for name in APPLIER_HISTORY_COLUMNS:
        assert thinned[name].combine_chunks().equals(expected[name].combine_chunks()), name
    kept = pa.compute.is_valid(thinned[APPLIER_HISTORY_COLUMNS[0]]).to_numpy(zero_copy_only=False)
    assert 40 < kept.sum() < 80  # about one sample in ten, plus the reset's and the ends'
    # and the writer, given the thinned rows, keeps them as they are
    again = thin_counters(thinned)
    for name in APPLIER_HISTORY_COLUMNS:
        assert again[name].combine_chunks().equals(thinned[name].combine_chunks()), name
