"""/metrics for grstats_member_gtids: errant and missing counts, recovery method by method."""

from __future__ import annotations

from grstats.core import columns as col
from grstats.core.snapshot import with_tables
from tests.fixtures.metrics_snapshot import (
    GROUP,
    M1,
    M2,
    metric_samples,
    metric_types,
    sample_snapshot,
)


def _row(
    member: str, errant: int | None, missing: int | None, method: str | None
) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(col.MEMBER_GTIDS.names)
    row.update(
        {
            col.MEMBER_ID: member,
            col.ERRANT_COUNT: errant,
            col.MISSING_COUNT: missing,
            col.RECOVERY_METHOD: method,
        }
    )
    return row


def _labels(member: str, **extra: str) -> frozenset[tuple[str, str]]:
    return frozenset({"group": GROUP, "member_id": member, **extra}.items())


def _gtid_snapshot():  # type: ignore[no-untyped-def]
    rows = (_row(M1, 3, 0, "CLONE"), _row(M2, 0, 120, "INCREMENTAL"))
    return with_tables(sample_snapshot(), {"grstats_member_gtids": rows})


def test_errant_and_missing_counts_per_member() -> None:
    got = metric_samples(_gtid_snapshot())
    assert got[("grstats_member_errant_transactions", _labels(M1))] == 3.0
    assert got[("grstats_member_errant_transactions", _labels(M2))] == 0.0
    assert got[("grstats_member_missing_transactions", _labels(M2))] == 120.0
    assert metric_types(_gtid_snapshot())["grstats_member_errant_transactions"] == "gauge"


def test_recovery_method_is_one_series_per_method() -> None:
    got = metric_samples(_gtid_snapshot())
    assert got[("grstats_member_recovery_method", _labels(M1, method="CLONE"))] == 1.0
    assert got[("grstats_member_recovery_method", _labels(M1, method="INCREMENTAL"))] == 0.0
    assert got[("grstats_member_recovery_method", _labels(M2, method="INCREMENTAL"))] == 1.0


def test_null_cells_are_no_series() -> None:
    snap = with_tables(sample_snapshot(), {"grstats_member_gtids": (_row(M1, None, None, None),)})
    got = metric_samples(snap)
    assert not any(name.startswith("grstats_member_errant") for name, _ in got)
    assert not any(name == "grstats_member_recovery_method" for name, _ in got)
