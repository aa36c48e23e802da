"""ext.channels on the bus: on a change of state at once, else only with the GTID sets.

A publisher over scripted samples (gtid_interval 30 ticks): tick 0 carries
the GTID sets (and the channels); ticks 1-2 change only a worker's applied
transaction (workload, not state: not sent); tick 3 shows an error on the
recovery channel (sent at once); tick 4 the same (not sent). With
[publish] channel_configuration = false the bus never carries the two
configuration tables, while the local tables still show them. A receiving
MemberTables keeps the last ext.channels until the next.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from grstats.core.tables import MemberTables
from protocol import MirroredTable, MirroredTables, decode_envelope
from tests.fixtures.member_tables import LOCAL, local_sample
from tests.fixtures.publishing import RecordingBus, Sink, make_publisher

T0 = 1_800_000_000_000_000
CONFIG = MirroredTable(
    "replication_connection_configuration",
    ("CHANNEL_NAME", "HOST", "PORT", "USER"),
    (("group_replication_recovery", "db2", 3307, "rpl_user"),),
)


def _status(error: int, applied: str) -> tuple[MirroredTable, MirroredTable]:
    receiver = MirroredTable(
        "replication_connection_status",
        ("CHANNEL_NAME", "SERVICE_STATE", "LAST_ERROR_NUMBER", "LAST_ERROR_TIMESTAMP"),
        (
            (
                "group_replication_recovery",
                "CONNECTING" if error else "ON",
                error,
                "2027-01-15 08:00:00.000000" if error else "0000-00-00 00:00:00.000000",
            ),
        ),
    )
    worker = MirroredTable(
        "replication_applier_status_by_worker",
        ("CHANNEL_NAME", "WORKER_ID", "SERVICE_STATE", "LAST_APPLIED_TRANSACTION"),
        (("group_replication_applier", 1, "ON", applied),),
    )
    return receiver, worker


def _sample(tick: int, error: int, applied: str) -> object:
    tables = MirroredTables(T0 + tick, (CONFIG, *_status(error, applied)))
    return dataclasses.replace(local_sample(), sampled_at_us=T0 + tick, channels=tables)


SAMPLES = [
    _sample(0, 0, "g:1"),
    _sample(1, 0, "g:2"),
    _sample(2, 0, "g:3"),
    _sample(3, 2003, "g:3"),
    _sample(4, 2003, "g:4"),
]


def _run(
    tmp_path: Path, *, configuration: bool, sink: Sink | None = None
) -> tuple[list[dict[str, object]], object]:
    publisher = make_publisher(tmp_path, sink or Sink(), *SAMPLES)
    if not configuration:
        publish = dataclasses.replace(publisher.settings.publish, channel_configuration=False)
        publisher.settings = dataclasses.replace(publisher.settings, publish=publish)
    bus = RecordingBus()

    async def ticks() -> None:
        for tick in range(len(SAMPLES)):
            await publisher.tick(tick, bus)  # type: ignore[arg-type]  # records what is sent

    asyncio.run(ticks())
    stats = [decode_envelope(p) for t, p in bus.sent if t.endswith("/stats")]
    return [dict(e.ext) for e in stats], publisher


def test_channels_go_out_on_a_change_of_state_and_with_the_gtid_sets(tmp_path: Path) -> None:
    exts, _ = _run(tmp_path, configuration=True)
    assert ["channels" in ext for ext in exts] == [True, False, False, True, False]


def test_the_configuration_tables_can_be_kept_off_the_bus(tmp_path: Path) -> None:
    exts, publisher = _run(tmp_path, configuration=False)
    sent = [ext["channels"] for ext in exts if "channels" in ext]
    names = {t[0] for wire in sent for t in wire[2]}  # type: ignore[index]
    assert names == {"replication_connection_status", "replication_applier_status_by_worker"}
    local = publisher.tables.snapshot(T0 + 5).table("replication_connection_configuration")  # type: ignore[attr-defined]
    assert [(r["MEMBER_ID"], r["HOST"], r["PORT"]) for r in local] == [(LOCAL, "db2", 3307)]


def test_a_receiver_keeps_the_last_channels_until_the_next(tmp_path: Path) -> None:
    publisher = make_publisher(tmp_path, Sink(), *SAMPLES)
    bus = RecordingBus()
    receiver = MemberTables(group=None, local_member_id=None)  # a collector: every member

    async def ticks() -> None:
        for tick in range(len(SAMPLES)):
            await publisher.tick(tick, bus)  # type: ignore[arg-type]

    asyncio.run(ticks())
    for topic, payload in bus.sent:
        if topic.endswith("/stats"):
            receiver.receive(topic, payload, T0 + 10)
    rows = receiver.snapshot(T0 + 10).table("replication_connection_status")
    assert [(r["MEMBER_ID"], r["LAST_ERROR_NUMBER"]) for r in rows] == [(LOCAL, 2003)]
    errors = receiver.snapshot(T0 + 10).table("grstats_channel_errors")
    assert [(e["CHANNEL_NAME"], e["ERROR_NUMBER"], e["OPEN"]) for e in errors] == [
        ("group_replication_recovery", 2003, 1)
    ]


def test_each_history_row_keeps_the_members_newest_open_channel_error(tmp_path: Path) -> None:
    sink = Sink()
    _run(tmp_path, configuration=True, sink=sink)
    assert [(r.ch_error_channel, r.ch_error_thread, r.ch_error_number) for r in sink.rows] == [
        (None, None, None)
    ] * 3 + [("group_replication_recovery", "receiver", 2003)] * 2
