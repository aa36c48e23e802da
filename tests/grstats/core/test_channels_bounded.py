"""ext.channels at its bounds: long texts sent as NULL, workers past the size cut, all counted.

Values by hand: a RECEIVED_TRANSACTION_SET of MAX_MIRRORED_TEXT + 1 bytes is
NULL on the wire (1 value); 400 worker rows of ~100 bytes are more than the
section's MAX_CHANNELS_SIZE: the last ones are cut until it fits, and the
values left out are exactly those of the cut rows plus the text. A value of
the wrong kind for its column arrives as NULL and is counted.
"""

from __future__ import annotations

from grstats.core.channels import bounded, channel_rows, channels_left_out, error_history
from grstats.core.columns import CONNECTION_STATUS
from protocol import (
    MAX_CHANNELS_SIZE,
    MAX_MIRRORED_TEXT,
    MirroredTable,
    MirroredTables,
    decode_channels,
    encode_channels,
    packed_size,
)

STATUS = MirroredTable(
    "replication_connection_status",
    ("CHANNEL_NAME", "RECEIVED_TRANSACTION_SET"),
    (("src", "x" * (MAX_MIRRORED_TEXT + 1)),),
)
WORKERS = MirroredTable(
    "replication_applier_status_by_worker",
    ("CHANNEL_NAME", "WORKER_ID", "LAST_ERROR_MESSAGE"),
    tuple(("src", i, "m" * 80) for i in range(1, 401)),
)


def test_a_text_over_the_bound_goes_as_null_and_rows_past_the_size_are_cut() -> None:
    tables = MirroredTables(1, (STATUS, WORKERS))
    cut = bounded(tables)
    assert cut.tables is not None
    assert cut.texts_nulled == 1
    sent = decode_channels(encode_channels(cut.tables))
    status = sent.table("replication_connection_status")
    workers = sent.table("replication_applier_status_by_worker")
    assert status is not None and status.rows == (("src", None),)
    assert workers is not None
    kept = len(workers.rows)
    assert 0 < kept < 400
    assert [r[1] for r in workers.rows] == list(range(1, kept + 1))  # the last ones were cut
    assert cut.rows_dropped == 400 - kept
    assert packed_size(encode_channels(cut.tables)) <= MAX_CHANNELS_SIZE
    values, left_out = channels_left_out(tables)
    assert values == 2 + 3 * 400
    assert left_out == 1 + 3 * (400 - kept)


def test_without_the_configuration_tables_they_are_not_sent() -> None:
    config = MirroredTable("replication_connection_configuration", ("HOST",), (("db2",),))
    cut = bounded(MirroredTables(1, (config, STATUS)), configuration=False)
    assert cut.tables is not None
    assert [t.name for t in cut.tables.tables] == ["replication_connection_status"]


def test_a_value_of_the_wrong_kind_is_null_and_counted() -> None:
    mirrored = MirroredTable(
        "replication_connection_status",
        ("CHANNEL_NAME", "THREAD_ID", "LAST_ERROR_TIMESTAMP", "SERVICE_STATE"),
        (("src", "not a number", "yesterday", 1),),
    )
    rows, refused = channel_rows(CONNECTION_STATUS, "m", mirrored)
    assert refused == 3
    assert rows[0]["THREAD_ID"] is None and rows[0]["LAST_ERROR_TIMESTAMP"] is None
    assert rows[0]["SERVICE_STATE"] is None and rows[0]["CHANNEL_NAME"] == "src"
    assert rows[0]["LAST_ERROR_NUMBER"] is None  # a column the server did not send


def test_the_history_block_is_the_newest_open_error() -> None:
    status = MirroredTable(
        "replication_connection_status",
        ("CHANNEL_NAME", "LAST_ERROR_NUMBER", "LAST_ERROR_TIMESTAMP"),
        (
            ("a", 2003, "2026-12-06 07:00:00.000000"),
            ("b", 0, "0000-00-00 00:00:00.000000"),
        ),
    )
    workers = MirroredTable(
        "replication_applier_status_by_worker",
        ("CHANNEL_NAME", "WORKER_ID", "LAST_ERROR_NUMBER", "LAST_ERROR_TIMESTAMP"),
        (("c", 2, 1062, "2026-12-06 07:05:00.000000"),),
    )
    assert error_history(MirroredTables(1, (status, workers))) == {
        "ch_error_channel": "c",
        "ch_error_thread": "worker 2",
        "ch_error_number": 1062,
    }
    assert error_history(None) == dict.fromkeys(
        ("ch_error_channel", "ch_error_thread", "ch_error_number")
    )
