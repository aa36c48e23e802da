"""What the history stores of counters read only as increases: the last sample of each window.

Strategy: the applier's counters (`THINNED`) are read from the history only as
sums of increases per member and UTC hour or day (applier_member_hour/day; a
sample's step is its value minus that of the member's latest earlier sample
with figures, DESIGN.md section 7) and as the reading at the start of a
`grstats applier --explain --since` window.  A sum of steps telescopes: inside
a run of samples that share a window of `WINDOW_S` seconds of `sampled_at`,
only the run's last value matters, so the others are stored NULL (Parquet
stores a NULL in a bit).  Windows divide hours and days, so every hour's and
day's sums stay exact -- and they stay exact whatever the sampling period, late
or early samples included, because the rule looks at the next sample written,
not at the one expected.

Invariants (a sample with figures is one where any counter of the group is
non-NULL; samples without are not steps' predecessors and are left alone):
- A sample keeps its counters unless the member's previous and next samples
  with figures in the same table are "clean" neighbours -- same member and
  incarnation, the same counters NULL, none lower, a later `sampled_at` on the
  same UTC day -- and the next one lies in its window.  So the last sample of
  each window, both samples around a reset, a restart, a change of which
  counters are known or a gap of days, and the first and last samples of the
  member in the table are always kept.
- Between two kept samples the dropped ones all lie in the later one's window
  and every link is clean, so the one step between the kept samples equals
  the sum of the dropped steps, in the same hour and day; a reset is a step of
  its own, as before.  Keeping more samples than the rule asks (two writers
  cutting segments at different rows) keeps that true.
- Only rows in file order (member, sampled_at, seq) are thinned: `write_segments`
  calls this after it has sorted them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from grstats.core.records import APPLIER_HISTORY_COLUMNS, COMMIT_PATH_HISTORY_COLUMNS

__all__ = ["THINNED", "WINDOW_S", "dropped", "one_value", "thin_counters"]

#: seconds of `sampled_at` (UTC, aligned to the epoch) whose last sample keeps the counters
WINDOW_S: Final = 10
#: groups of counters thinned together (a group's samples with figures are one sequence).
#: The commit path's are kept by the daemon on the first sample of each 10 s of the
#: member's clock already (`core.rows.commit_path_due`): the rule leaves those as they
#: are (one per window), and would make the hours exact if the daemon kept them all.
THINNED: Final[tuple[tuple[str, ...], ...]] = (
    APPLIER_HISTORY_COLUMNS,
    COMMIT_PATH_HISTORY_COLUMNS,
)
_US = 1_000_000
_DAY_US = 86_400 * _US


def _shifted_equal(values: pa.Array) -> pa.Array:
    """Link i (between rows i and i+1): whether both are equal (NULL: not equal)."""
    return pc.fill_null(pc.equal(values[:-1], values[1:]), False)


def one_value(column: pa.ChunkedArray) -> bool:
    """Whether a column holds exactly one distinct value, NULL counting as one (as
    `count_distinct(mode="all") == 1`, by comparing with the first row, not hashing)."""
    if column.null_count:
        return bool(column.null_count == len(column))
    return len(column) > 0 and pc.all(pc.equal(column, column[0])).as_py() is True


def dropped(table: pa.Table, columns: Sequence[str]) -> pa.Array | None:
    """Over every row: True where the group's counters are stored NULL; None: none are."""
    # the identity of one member's incarnation (a member-day, a daemon's segment) makes
    # every link clean: compared here once, not carried through the filter
    identity = [
        name
        for name in ("member_id", "incarnation")
        if table[name].null_count or not one_value(table[name])  # one non-NULL value: clean
    ]
    names = [*identity, "sampled_at", *columns]
    if any(table[name].null_count == 0 for name in columns):
        has = None  # a counter known on every row: every row has figures
        figures = table.select(names)
    else:
        valid = [pc.is_valid(table[name]).combine_chunks() for name in columns]
        has = valid[0]
        for v in valid[1:]:
            has = pc.or_(has, v)
        figures = table.select(names).filter(has)
    if figures.num_rows < 3:
        return None
    at = figures["sampled_at"].combine_chunks().cast(pa.int64())
    clean = pc.fill_null(pc.less(at[:-1], at[1:]), False)
    for name in identity:
        clean = pc.and_(clean, _shifted_equal(figures[name].combine_chunks()))
    clean = pc.and_(clean, _shifted_equal(pc.divide(at, _DAY_US)))
    for name in columns:
        values = figures[name].combine_chunks()
        if values.null_count == 0:  # both known on every link: only the order to compare
            clean = pc.and_(clean, pc.greater_equal(values[1:], values[:-1]))
            continue
        known = pc.is_valid(values)
        clean = pc.and_(clean, pc.equal(known[:-1], known[1:]))
        # NULL where either is NULL: then both are (the line above), nothing to compare
        clean = pc.and_(clean, pc.fill_null(pc.greater_equal(values[1:], values[:-1]), True))
    window = _shifted_equal(pc.divide(at, WINDOW_S * _US))
    no = pa.array([False])
    after = pa.concat_arrays([no, clean])  # the link to the previous sample with figures
    before = pa.concat_arrays([pc.and_(clean, window), no])  # to the next, in its window
    drop = pc.and_(after, before)
    if not pc.any(drop).as_py():
        return None
    if has is None:  # the rows with figures are all the rows
        return drop
    return pc.replace_with_mask(pc.and_(has, False), has, drop)


def thin_counters(table: pa.Table) -> pa.Table:
    """The rows with each THINNED group's counters kept only where the rule keeps them.

    Args:
        table: history rows in file order (member_id, sampled_at, seq).

    Returns:
        The same rows; counters of the dropped samples NULL (the rest untouched).
    """
    for columns in THINNED:
        mask = dropped(table, columns)
        if mask is None:
            continue
        for name in columns:
            index = table.schema.get_field_index(name)
            column = table[name]
            nulled = pc.if_else(mask, pa.scalar(None, column.type), column.combine_chunks())
            table = table.set_column(index, table.field(index), nulled)
    return table
