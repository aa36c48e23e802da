"""The simulated group in bulk and through the Source: history columns, identities, settings.

The bulk history columns must equal the per-second `stats_at` and `member_at`;
member identities and setting errors are written by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from grstats.core.records import (
    APPLIER_HISTORY_COLUMNS,
    COMMIT_PATH_HISTORY_COLUMNS,
    FLOW_HELD_HISTORY_COLUMNS,
    FLOW_HISTORY_COLUMNS,
    GTID_HISTORY_COLUMNS,
    HISTORY_COLUMNS,
    LAG_HISTORY_COLUMNS,
)
from grstats.core.sample import LocalSample
from grstats.sources.simulated import GroupModel, ScriptEvent, SimulatedSource, SimulationSettings
from grstats.sources.simulated.commitpath import commit_path_at, communication_of
from protocol import FLOW_CONTROL_QUOTA
from tests.fixtures.simulated_group import (
    GROUP,
    MEMBERS,
    T0,
    US,
    A,
    B,
    C,
    multi_primary,
    single_primary,
)


def test_history_columns_equal_stats_at_and_member_at() -> None:
    settings = multi_primary(
        slow_member=B,
        script=(ScriptEvent(T0 + 3590, C, "set_state", state="RECOVERING", duration_s=20),),
    )
    model = GroupModel(settings)
    start, n = T0 + 3600 - 95, 130  # across an hour boundary and two GC boundaries
    expected_columns = {name for name, _ in HISTORY_COLUMNS} - {"incarnation", "seq"}
    for member in MEMBERS:
        cols = model.history_columns(member, start, n)
        # the lag figures and applier counters come in bulk from their own methods,
        # the flow-control figures from the replay over every member (offline.flowfill)
        flow = {name for name, _ in (*FLOW_HISTORY_COLUMNS, *FLOW_HELD_HISTORY_COLUMNS)}
        optional = set(LAG_HISTORY_COLUMNS) | set(APPLIER_HISTORY_COLUMNS) | flow
        optional |= {name for name, _ in GTID_HISTORY_COLUMNS}  # a daemon's verdict only
        optional |= set(COMMIT_PATH_HISTORY_COLUMNS)  # in bulk from simulated.commithistory
        assert expected_columns - optional <= set(cols) <= expected_columns
        assert all(len(values) == n for values in cols.values())
        for i in range(n):
            s = start + i
            stats = model.stats_at(member, s * US)
            info = model.member_at(member, s * US)
            assert cols["sampled_at"][i] == s * US
            assert (
                cols["count_transactions_in_queue"][i] == stats.transactions_waiting_certification
            )
            assert cols["count_transactions_checked"][i] == stats.transactions_certified
            assert cols["count_conflicts_detected"][i] == stats.transactions_negative_certified
            assert (
                cols["count_transactions_rows_validating"][i] == stats.transactions_rows_validating
            )
            assert (
                cols["count_transactions_remote_in_applier_queue"][i]
                == stats.transactions_waiting_apply
            )
            assert cols["count_transactions_remote_applied"][i] == stats.transactions_applied
            assert cols["count_transactions_local_proposed"][i] == stats.transactions_local
            assert cols["count_transactions_local_rollback"][i] == stats.transactions_local_rollback
            assert cols["flow_control_mode"][i] == stats.flow_control_mode == FLOW_CONTROL_QUOTA
            if s % 30 == 0:
                assert cols["transactions_committed_all_members"][i] == (
                    stats.transactions_committed_all_members.decode()
                )
                assert cols["last_conflict_free_transaction"][i] == (
                    stats.transaction_last_conflict_free.decode()
                )
            else:
                assert cols["transactions_committed_all_members"][i] is None
                assert cols["last_conflict_free_transaction"][i] is None
            row_member = (
                cols["group_name"][i],
                cols["member_id"][i],
                cols["member_host"][i],
                cols["member_port"][i],
                cols["member_state"][i],
                cols["member_role"][i],
                cols["member_version"][i],
                cols["view_id"][i],
            )
            assert row_member == (
                info.group_name,
                info.member_id,
                info.host,
                info.port,
                info.state,
                info.role,
                info.version,
                info.view_id,
            )
    states = model.history_columns(C, T0 + 3585, 30)["member_state"]
    assert states == ["ONLINE"] * 5 + ["RECOVERING"] * 20 + ["ONLINE"] * 5


def test_member_identity_defaults_and_overrides() -> None:
    model = GroupModel(single_primary(hosts={C: ("db3.example", 3310)}, version="8.0.36"))
    a, b, c = (model.member_at(m, T0 * US) for m in MEMBERS)
    assert (a.host, a.port, a.role, a.state) == ("127.0.0.1", 3306, "PRIMARY", "ONLINE")
    assert (b.host, b.port, b.role) == ("127.0.0.1", 3307, "SECONDARY")
    assert (c.host, c.port, c.version, c.gcs_id) == (
        "db3.example",
        3310,
        "8.0.36",
        "db3.example:3310",
    )
    assert a.view_id == b.view_id == c.view_id != ""
    assert a.group_name == GROUP


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"members": ()}, "members"),
        ({"members": (A, A)}, "members"),
        ({"members": ("not-a-uuid",)}, "members"),
        ({"mode": "multi"}, "mode"),
        ({"conflict_probability": 1.5}, "conflict_probability"),
        ({"hot_hours": (24,)}, "hot_hours"),
        ({"slow_member": C}, "slow_member"),
        ({"script": (ScriptEvent(T0, A, "explode"),)}, "script"),
        ({"script": (ScriptEvent(T0, C, "commit"),)}, "script"),
        ({"mode": "single-primary", "script": (ScriptEvent(T0, B, "commit"),)}, "script"),
        ({"mode": "single-primary", "script": (ScriptEvent(T0, A, "conflict"),)}, "script"),
    ],
)
def test_invalid_settings_name_the_key(kwargs: dict[str, Any], key: str) -> None:
    base: dict[str, Any] = {"group": GROUP, "members": (A, B)}
    with pytest.raises(ValueError, match=f"^{key}: "):
        SimulationSettings(**{**base, **kwargs})


def test_unknown_member_is_an_error() -> None:
    model = GroupModel(multi_primary())
    with pytest.raises(ValueError, match=r"^member_id: "):
        model.stats_at("44444444-4444-4444-4444-444444444444", T0 * US)


async def test_source_samples_the_model() -> None:
    model = GroupModel(multi_primary())
    source = SimulatedSource(model, B.upper())
    await source.start()
    sample = await source.sample(T0 * US + 5)
    await source.close()
    assert sample == LocalSample(
        member=model.member_at(B, T0 * US),
        stats=model.stats_at(B, T0 * US),
        sampled_at_us=T0 * US + 5,
        lag=model.lag_at(B, T0 * US),
        applier=model.applier_at(B, T0 * US + 5),
        gtid_state=model.gtid_state_at(B, T0 * US + 5),
        commit_path=commit_path_at(
            model.settings, B, T0, model.stats_at(B, T0 * US).transactions_local
        ),
        communication=communication_of(model.settings),
        view=frozenset(MEMBERS),  # every member in the group's view: nothing scripted
    )
    assert sample.gtid_state is not None and sample.gtid_state.executed
    assert sample.lag[0].last_applied.gtid  # B applies A's and C's transactions
    assert sample.stats.sent_timestamp is None
    assert sample.stats.transaction_gtids_present is False
