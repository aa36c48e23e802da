"""What a simulated member of each `[simulated] version` shows, as a server of it does.

Expected values by hand from MySQL's source (cited in commitpath.py): the Gr_*
counters from 8.1.0; replication_group_communication_information from 8.0.23,
its first four columns and protocol 8.0.16 up to 8.0.26, five and 8.0.27 from
8.0.27.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from grstats.core.records import COMMIT_PATH_HISTORY_COLUMNS
from grstats.history.writer import read_history
from grstats.offline.backfill import member_ids, simulate_history
from grstats.sources.simulated import GroupModel, SimulatedSource, SimulationSettings
from grstats.sources.simulated.commithistory import commit_path_columns
from protocol import GroupCommunication

M1, M2, M3 = (f"{d * 8}-{d * 4}-{d * 4}-{d * 4}-{d * 12}" for d in "123")
LEADERS = (M1, M2, M3)
T_US = (SimulationSettings().epoch_s + 3_600) * 1_000_000  # an hour after GR started


async def _sample(version: str) -> tuple[object, GroupCommunication | None]:
    source = SimulatedSource(GroupModel(SimulationSettings(members=LEADERS, version=version)), M2)
    sample = await source.sample(T_US)
    await source.close()
    return sample.commit_path, sample.communication


@pytest.mark.parametrize("version", ["8.0.22", "8.0.23", "8.0.27", "8.0.40"])
async def test_a_server_before_8_1_0_shows_no_commit_path_counters(version: str) -> None:
    commit_path, _ = await _sample(version)
    assert commit_path is None


@pytest.mark.parametrize("version", ["8.1.0", "8.4.3", "9.1.0"])
async def test_a_server_of_8_1_0_on_shows_the_counters(version: str) -> None:
    commit_path, _ = await _sample(version)
    assert commit_path is not None
    # one control round a second since GR started, plus M2's own transactions
    assert getattr(commit_path, "control_messages", None) == 3_600


@pytest.mark.parametrize("version", ["5.7.44", "8.0.21", "8.0.22"])
async def test_a_server_before_8_0_23_has_no_communication_table(version: str) -> None:
    _, communication = await _sample(version)
    assert communication is None


@pytest.mark.parametrize("version", ["8.0.23", "8.0.26"])
async def test_8_0_23_to_8_0_26_show_four_columns_and_protocol_8_0_16(version: str) -> None:
    _, communication = await _sample(version)
    assert communication == GroupCommunication(10, "8.0.16", LEADERS, LEADERS, None)


@pytest.mark.parametrize("version", ["8.0.27", "8.4.3", "9.1.0"])
async def test_8_0_27_on_show_the_single_leader_column(version: str) -> None:
    _, communication = await _sample(version)
    assert communication == GroupCommunication(10, "8.0.27", LEADERS, LEADERS, False)


def test_the_bulk_history_of_an_8_0_server_has_no_commit_path_columns() -> None:
    settings = SimulationSettings(members=LEADERS, version="8.0.40")
    secs = np.arange(settings.epoch_s, settings.epoch_s + 10, dtype=np.int64)
    assert commit_path_columns(settings, M1, secs, np.zeros(10, dtype=np.int64)) == {}


def test_simulate_writes_null_commit_path_columns_for_an_8_0_group(tmp_path: Path) -> None:
    ids = member_ids(3, 1)
    simulate_history(
        tmp_path,
        group="g",
        members=ids,
        days=1,
        seed=3,
        start=dt.date(2026, 11, 20),
        version="8.0.22",
    )
    table = read_history(tmp_path)
    assert table.num_rows == 86_400
    assert len(COMMIT_PATH_HISTORY_COLUMNS) == 14  # cp_*: seven (count, µs) pairs
    for name in COMMIT_PATH_HISTORY_COLUMNS:
        assert table[name].null_count == 86_400, name
    assert pc.all(pc.equal(table["member_version"], "8.0.22")).as_py()
