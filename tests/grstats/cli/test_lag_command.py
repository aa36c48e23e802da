"""`grstats lag` (table, --vertical, json, csv) from a real broker's retained envelopes."""

from __future__ import annotations

import asyncio
import csv
import io
import json

import pytest

from grstats.core.lag import ChannelLag, MemberLag, StageTrx, encode_member_lag
from protocol import Envelope, MemberInfo, PipelineStats, encode_envelope, encode_pipeline_stats
from tests.fixtures.broker import Broker
from tests.fixtures.bus_helpers import publish_retained
from tests.fixtures.cli import grstats

G = "dddddddd-0000-0000-0000-000000000000"
R1 = "dddddddd-0000-0000-0000-000000000001"
T = 1_700_000_000_000_000  # 2023-11-14 22:13:20 UTC
CHANNEL = ChannelLag(
    receiver_on=True,
    applier_on=True,
    last_queued=StageTrx(f"{G}:12", T, T, T + 100_000, T + 250_000),
    applying=StageTrx(f"{G}:11", T - 1_000_000, T - 1_000_000, T, None),
    workers=4,
    busy_workers=1,
)


def _envelope() -> bytes:
    info = MemberInfo(R1, "10.0.0.9", 3306, "ONLINE", "SECONDARY", "8.4.3", "10.0.0.9:33061")
    return encode_envelope(
        Envelope(
            group=G,
            member=info,
            view_id="17000000:7",
            incarnation=99,
            seq=5,
            sent_us=T + 2_250_000,
            stats=encode_pipeline_stats(PipelineStats()),
            # read at T+2.25 s; the applying transaction committed at T-1 s
            ext={"lag": encode_member_lag(MemberLag(T + 2_250_000, (CHANNEL,)))},
        )
    )


@pytest.fixture
def lagging(broker: Broker) -> Broker:
    asyncio.run(
        publish_retained(broker.host, broker.port, [(f"grstats/v1/{G}/{R1}/stats", _envelope())])
    )
    return broker


def test_lag_json_has_the_row_with_shells_figure(lagging: Broker) -> None:
    result = grstats("lag", "--bus", lagging.url, "--format", "json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["MEMBER_ID"] == R1
    assert row["REPLICATION_LAG"] == "00:00:03.250000"
    assert row["REPLICATION_LAG_SECONDS"] == 3.25
    assert row["QUEUE_LAG_SECONDS"] == 0.25
    assert row["LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP"] == "2023-11-14 22:13:20.250000"
    assert row["CLOCK_OFFSET_SECONDS"] is None  # a retained copy says nothing about clocks


def test_lag_vertical_and_csv(lagging: Broker) -> None:
    vertical = grstats("lag", "--bus", lagging.url, "--vertical")
    assert vertical.returncode == 0, vertical.stderr
    assert "REPLICATION_LAG: 00:00:03.250000" in vertical.stdout.replace("  ", "")
    table = grstats("lag", "--bus", lagging.url, "--group", G, "--format", "csv")
    (row,) = list(csv.DictReader(io.StringIO(table.stdout)))
    assert row["APPLYING_TRANSACTION"] == f"{G}:11"
