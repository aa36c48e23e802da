"""Logging through one sink: structlog events and stdlib records, one stream, one format."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from grstats.logs import configure_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def test_structlog_and_stdlib_records_are_json_lines_on_one_stream() -> None:
    stream = io.StringIO()  # not a terminal: "auto" means JSON lines
    configure_logging("info", "auto", stream=stream)
    structlog.get_logger("grstats.bus").info("bus.connected", broker="127.0.0.1:1883", attempt=2)
    logging.getLogger("paho.mqtt.client").warning("socket %s closed", "x\ny")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2, lines
    first, second = (json.loads(line) for line in lines)
    assert (first["event"], first["level"]) == ("bus.connected", "info")
    assert (first["broker"], first["attempt"]) == ("127.0.0.1:1883", 2)
    assert (second["event"], second["level"]) == ("socket x\ny closed", "warning")
    assert second["logger"] == "paho.mqtt.client"
    assert first["timestamp"].endswith("Z") and second["timestamp"].endswith("Z")


def test_third_party_info_is_dropped_but_our_info_is_kept() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    logging.getLogger("paho.mqtt.client").info("chatter")
    logging.getLogger("grstats.bus.mqtt").debug("more chatter")
    structlog.get_logger().info("daemon.started")
    events = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    assert events == ["daemon.started"]


def test_level_filters_structlog_events() -> None:
    stream = io.StringIO()
    configure_logging("error", "json", stream=stream)
    log = structlog.get_logger()
    log.warning("bus.disconnected")
    log.error("daemon.start_failed", error="boom")
    events = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    assert events == ["daemon.start_failed"]


def test_configuring_again_leaves_one_handler() -> None:
    configure_logging("info", "json", stream=io.StringIO())
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    logging.getLogger("asyncmy").error("lost")
    assert len(logging.getLogger().handlers) == 1
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["lost"]
