"""The six channel tables, per MySQL version: what the server serves is what another daemon shows.

Member 1's mysql source reads a fake MySQL of each version (its tables as
MySQL declares them, tests/fixtures/mysql_definitions.json) holding channel
rows in every state (tests/fixtures/channel_rows.py: ON, OFF, CONNECTING, an
error on each thread, the recovery channel that appears and disappears). Its
rows go through the wire (ext.channels encoded, packed, unpacked, decoded as
another daemon's receiver does) into another daemon's tables; each table's
rows are compared with the served ones column by column, for every column
MySQL's definition of that version has -- the expected values are the
fixture's, timestamps printed by the fixture's own formatter.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from grstats.core.channels import channel_rows as grstats_rows
from grstats.core.columns import CHANNEL_TABLES
from grstats.core.tables import MemberTables
from protocol import MirroredTables, decode_channels, encode_channels
from tests.fixtures import mysql_definitions as defs
from tests.fixtures.channel_rows import CHANNEL_TABLES as TABLE_NAMES
from tests.fixtures.channel_rows import serve_channels, shown
from tests.fixtures.fake_mysql import UUID, FakeMySQL
from tests.fixtures.mysql_source import T0, make_source, online_84, versioned

__all__ = ["make_source", "versioned"]  # fixtures, used by name


def _over_the_wire(tables: MirroredTables | None) -> MirroredTables:
    assert tables is not None
    packed = msgpack.packb(encode_channels(tables), use_bin_type=True)
    return decode_channels(msgpack.unpackb(packed, raw=False))


def _expected(version: str, table: str, row: dict[str, Any]) -> dict[str, Any]:
    columns = {c.name: c for c in defs.columns(table, version) or ()}
    return {
        name: shown(value) if columns[name].family == "timestamp" else value
        for name, value in row.items()
    }


def _compare(version: str, served: dict[str, list[dict[str, Any]]], tables: MirroredTables) -> None:
    by_name = {t.name: t for t in CHANNEL_TABLES}
    assert set(TABLE_NAMES) == set(by_name)
    for table in TABLE_NAMES:
        mirrored = tables.table(table)
        assert mirrored is not None, table
        shown_rows, refused = grstats_rows(by_name[table], UUID, mirrored)
        assert refused == 0, table
        expected = [_expected(version, table, r) for r in served[table]]
        assert len(shown_rows) == len(expected), table
        for mine, theirs in zip(shown_rows, expected, strict=True):
            assert mine["MEMBER_ID"] == UUID
            for column in defs.names(table, version):  # MySQL's definition, not grstats'
                assert mine[column] == theirs[column], (version, table, column)


async def test_every_table_and_column_of_each_version_arrives_as_served(
    versioned: FakeMySQL, make_source: Any
) -> None:
    fake = versioned
    online_84(fake)
    served = serve_channels(fake, fake.version, recovering=True)
    source = make_source(fake.port)
    sample = await source.sample(T0)
    _compare(fake.version, served, _over_the_wire(sample.channels))


async def test_the_recovery_channel_appears_and_disappears(
    versioned: FakeMySQL, make_source: Any
) -> None:
    fake = versioned
    online_84(fake)
    source = make_source(fake.port)
    tables = MemberTables(group=None, local_member_id=None)  # another daemon's episodes
    recovering = serve_channels(fake, fake.version, recovering=True)
    first = _over_the_wire((await source.sample(T0)).channels)
    _compare(fake.version, recovering, first)
    status = first.table("replication_connection_status")
    assert status is not None
    assert "group_replication_recovery" in [r[0] for r in status.rows]
    watch = tables.channel_errors
    watch.observe(
        {
            t.name: grstats_rows(t, UUID, m)[0]
            for t in CHANNEL_TABLES
            if (m := first.table(t.name)) is not None
        }
    )
    key = (UUID, "group_replication_recovery", "receiver")
    assert watch.episodes[key].number == 1045
    assert watch.episodes[key].open
    # each thread's error is an episode: the receiver's 2003, the coordinator's and worker's 1062
    assert {(k[1], k[2], e.number) for k, e in watch.episodes.items()} == {
        ("src_connecting", "receiver", 2003),
        ("src_stopped", "coordinator", 1062),
        ("src_stopped", "worker 1", 1062),
        ("group_replication_recovery", "receiver", 1045),
    }

    online = serve_channels(fake, fake.version, recovering=False)
    second = _over_the_wire((await source.sample(T0 + 1_000_000)).channels)
    _compare(fake.version, online, second)
    status = second.table("replication_connection_status")
    assert status is not None
    assert "group_replication_recovery" not in [r[0] for r in status.rows]
    watch.observe(
        {
            t.name: grstats_rows(t, UUID, m)[0]
            for t in CHANNEL_TABLES
            if (m := second.table(t.name)) is not None
        }
    )
    assert not watch.episodes[key].open


@pytest.mark.parametrize("version", defs.VERSIONS)
def test_no_configuration_table_of_any_version_has_a_password_column(version: str) -> None:
    for table in ("replication_connection_configuration", "replication_applier_configuration"):
        assert not [n for n in defs.names(table, version) if "PASSWORD" in n]
