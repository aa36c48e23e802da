"""The live tables on their way to the SQL child (grstats.daemon.sqlfeed), over a real pipe.

The "child" is a process echoing its input back, so what the feed wrote is
read and decoded as the endpoint would. Expected counts follow the documented
rule: a snapshot offered before the previous one was sent supersedes it
(counted); one meant for no running child is counted "not_running".
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from grstats.core.snapshot import DaemonSnapshot
from grstats.daemon.sqlfeed import INLINE_BYTES, SnapshotFeed
from grstats.sql.channel import read_frame
from tests.fixtures.bus_helpers import until

_ECHO = "import os\nwhile (b := os.read(0, 65536)):\n    os.write(1, b)\n"
CAP = 1 << 20


def _snapshot(n: int) -> DaemonSnapshot:
    return DaemonSnapshot(taken_at_us=n, group_name="g", local_member_id="m")


async def test_offers_faster_than_the_sending_keep_the_latest_and_count_the_rest() -> None:
    echo = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert echo.stdin is not None and echo.stdout is not None
    feed = SnapshotFeed(CAP)
    for n in (1, 2, 3):  # three ticks before the sender runs once
        feed.offer(_snapshot(n))
    sender = asyncio.create_task(feed.run(lambda: echo.stdin))
    try:
        message = await asyncio.wait_for(read_frame(echo.stdout, CAP), 10)
    finally:
        sender.cancel()
        echo.stdin.close()
        await echo.wait()
    assert message is not None and message["taken_at_us"] == 3
    assert (feed.sent, feed.dropped["superseded"]) == (1, 2)


async def test_a_snapshot_for_no_running_child_is_counted_not_running() -> None:
    feed = SnapshotFeed(CAP)
    sender = asyncio.create_task(feed.run(lambda: None))
    try:
        feed.offer(_snapshot(1))
        await until(lambda: feed.dropped["not_running"] == 1)
    finally:
        sender.cancel()
    assert feed.sent == 0


async def test_a_small_frame_is_encoded_on_the_loop_a_large_one_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a thread hop costs more CPU than encoding a one-member daemon's ~1 KB frame;
    # the first frame's size is unknown and a large one keeps the next in a thread
    hops: list[object] = []
    to_thread = asyncio.to_thread

    async def counting(func: Callable[..., Any], /, *args: Any) -> Any:
        hops.append(func)
        return await to_thread(func, *args)

    monkeypatch.setattr(asyncio, "to_thread", counting)
    echo = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert echo.stdin is not None and echo.stdout is not None
    feed = SnapshotFeed(CAP)
    sender = asyncio.create_task(feed.run(lambda: echo.stdin))
    names = ["g" * (INLINE_BYTES + 1), "g", "g", "g"]  # large, small (after large), small, small
    got = []
    try:
        for n, name in enumerate(names):
            feed.offer(DaemonSnapshot(taken_at_us=n, group_name=name, local_member_id="m"))
            got.append(await asyncio.wait_for(read_frame(echo.stdout, CAP), 10))
    finally:
        sender.cancel()
        echo.stdin.close()
        await echo.wait()
    assert [(m["taken_at_us"], m["group_name"]) for m in got if m] == list(enumerate(names))
    assert len(hops) == 2  # the first (large) and the one after it
