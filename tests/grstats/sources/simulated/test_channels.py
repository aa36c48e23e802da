"""The simulated members' WL#3656 channel tables: scripted recovery and applier errors.

Expected rows by hand from the script: member 3 RECOVERING for 300 s from
+100 s with its recovery unable to reach its donor (member 1, 127.0.0.1:3306)
for 130 s; member 2's applier worker 1 stops on a duplicate key at +500 s.
"""

from __future__ import annotations

from grstats.sources.simulated.model import GroupModel
from grstats.sources.simulated.settings import ScriptEvent, SimulationSettings
from protocol import MirroredTables

E = 1_767_225_600
M1, M2, M3 = (
    "11111111-1111-1111-1111-111111111111",
    "22222222-2222-2222-2222-222222222222",
    "33333333-3333-3333-3333-333333333333",
)
SETTINGS = SimulationSettings(
    members=(M1, M2, M3),
    script=(
        ScriptEvent(E + 100, M3, "set_state", duration_s=300, state="RECOVERING"),
        ScriptEvent(E + 100, M3, "recovery_error", duration_s=130),
        ScriptEvent(E + 500, M2, "applier_error"),
    ),
)
MODEL = GroupModel(SETTINGS)


def _rows(tables: MirroredTables | None, name: str) -> list[dict[str, int | float | str | None]]:
    assert tables is not None
    table = tables.table(name)
    assert table is not None
    return table.dicts()


def _channels(member: str, at_s: int) -> MirroredTables | None:
    return MODEL.channels_at(member, (E + at_s) * 1_000_000)


def test_a_healthy_member_has_only_the_applier_channel_all_on() -> None:
    tables = _channels(M1, 50)
    status = _rows(tables, "replication_connection_status")
    assert [(r["CHANNEL_NAME"], r["SERVICE_STATE"], r["LAST_ERROR_NUMBER"]) for r in status] == [
        ("group_replication_applier", "ON", 0)
    ]
    config = _rows(tables, "replication_connection_configuration")
    assert (config[0]["HOST"], config[0]["PORT"], config[0]["USER"]) == ("<NULL>", 0, "")
    workers = _rows(tables, "replication_applier_status_by_worker")
    assert [w["WORKER_ID"] for w in workers] == [1, 2, 3, 4]
    assert {w["SERVICE_STATE"] for w in workers} == {"ON"}


def test_the_recovery_channel_appears_while_recovering_and_goes_after() -> None:
    assert len(_rows(_channels(M3, 99), "replication_connection_status")) == 1
    assert len(_rows(_channels(M3, 100), "replication_connection_status")) == 2
    assert len(_rows(_channels(M3, 399), "replication_connection_status")) == 2
    assert len(_rows(_channels(M3, 400), "replication_connection_status")) == 1


def test_a_recovery_that_cannot_reach_its_donor_is_connecting_with_2003_then_connects() -> None:
    failing = _rows(_channels(M3, 170), "replication_connection_status")[1]
    assert failing["CHANNEL_NAME"] == "group_replication_recovery"
    assert failing["SERVICE_STATE"] == "CONNECTING"
    assert failing["LAST_ERROR_NUMBER"] == 2003
    # GR retries every 60 s from +100 s: the attempt at +160 s is the last before +170 s
    assert failing["LAST_ERROR_TIMESTAMP"] == "2026-01-01 00:02:40.000000"
    assert failing["LAST_ERROR_MESSAGE"] == (
        "Error connecting to source 'rpl_user@127.0.0.1:3306'. This was attempt 1/1, with a "
        "delay of 60 seconds between attempts. Message: Can't connect to MySQL server on "
        "'127.0.0.1:3306' (111)"
    )
    config = _rows(_channels(M3, 170), "replication_connection_configuration")[1]
    assert (config["HOST"], config["PORT"], config["USER"]) == ("127.0.0.1", 3306, "rpl_user")
    connected = _rows(_channels(M3, 230), "replication_connection_status")[1]
    assert (connected["SERVICE_STATE"], connected["LAST_ERROR_NUMBER"]) == ("ON", 0)
    assert connected["SOURCE_UUID"] == M1


def test_an_applier_error_stops_worker_1_the_coordinator_and_the_applier_on_1062() -> None:
    before = _rows(_channels(M2, 499), "replication_applier_status")[0]
    assert before["SERVICE_STATE"] == "ON"
    tables = _channels(M2, 520)
    assert _rows(tables, "replication_applier_status")[0]["SERVICE_STATE"] == "OFF"
    worker = _rows(tables, "replication_applier_status_by_worker")[0]
    assert (worker["SERVICE_STATE"], worker["LAST_ERROR_NUMBER"]) == ("OFF", 1062)
    assert worker["LAST_ERROR_TIMESTAMP"] == "2026-01-01 00:08:20.000000"
    assert str(worker["LAST_ERROR_MESSAGE"]).startswith(
        f"Worker 1 failed executing transaction '{SETTINGS.group}:"
    )
    coordinator = _rows(tables, "replication_applier_status_by_coordinator")[0]
    assert coordinator["LAST_ERROR_NUMBER"] == 1062
    assert str(coordinator["LAST_ERROR_MESSAGE"]).startswith(
        "Coordinator stopped because there were error(s) in the worker(s)."
    )
    others = _rows(tables, "replication_applier_status_by_worker")[1:]
    assert {w["LAST_ERROR_NUMBER"] for w in others} == {0}


def test_every_daemon_computes_the_same_rows() -> None:
    again = GroupModel(SETTINGS)
    at = (E + 170) * 1_000_000
    assert again.channels_at(M3, at) == MODEL.channels_at(M3, at)


def test_a_member_outside_the_group_has_no_channel_rows() -> None:
    model = GroupModel(
        SimulationSettings(
            members=(M1, M2), script=(ScriptEvent(E + 10, M2, "set_state", state="OFFLINE"),)
        )
    )
    assert model.channels_at(M2, (E + 20) * 1_000_000) is None
