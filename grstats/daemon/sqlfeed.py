"""The live tables on their way to the SQL endpoint's child, never making the loop wait.

Strategy: `offer` is O(1) on the event loop: it keeps the latest snapshot
(a newer one supersedes one not yet sent, counted). `run` sends it: encoded
in a thread (on the loop while the last frame was at most INLINE_BYTES: a
one-member daemon's 790-byte frame encodes in ~50 µs of CPU, a thread hop
costs ~150 µs; the publisher encodes its envelope on the loop too), written
only when the previous one has left the daemon's write buffer to the child's
input, else dropped and counted ("child_slow"), so at
most one snapshot is buffered. A snapshot past [sql] max_snapshot_bytes is
refused and counted, never cut; while they are refused, `unsent` says why
(/healthz "sql_stale"). The child in place may change at any await (the
supervisor restarts it): whatever was meant for a child that is gone is
counted "not_running".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from grstats.core.snapshot import DaemonSnapshot
from grstats.sql.channel import ChannelError, encode_frame, snapshot_message

log = structlog.get_logger("grstats.daemon")

DROP_REASONS = ("child_slow", "not_running", "too_large", "unencodable", "superseded")
# a frame this small (about a tenth of a millisecond to encode) is encoded on the loop
INLINE_BYTES = 8 * 1024


class SnapshotFeed:
    """Hands the child the latest snapshot; counts what was sent and dropped (by reason).

    Args:
        max_bytes: the largest encoded snapshot sent ([sql] max_snapshot_bytes).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.sent = 0
        self.dropped = dict.fromkeys(DROP_REASONS, 0)
        self.unsent = ""  # why the last snapshot could not be encoded ("" when it could)
        self.latest: DaemonSnapshot | None = None
        self._pending: DaemonSnapshot | None = None
        self._wake = asyncio.Event()
        self._last_bytes = INLINE_BYTES + 1  # the last frame's size: the first goes to a thread

    def offer(self, snapshot: DaemonSnapshot) -> None:
        """Keep `snapshot` as the next to send (O(1): the sending is `run`'s)."""
        if self._pending is not None:
            self.dropped["superseded"] += 1
        self._pending = self.latest = snapshot
        self._wake.set()

    def send_latest(self, stdin: asyncio.StreamWriter) -> None:
        """Write the latest snapshot at once to a child just started (its @@server_uuid)."""
        if self.latest is None:
            return
        self._pending = None
        try:
            stdin.write(encode_frame(snapshot_message(self.latest), self.max_bytes))
            self.sent += 1
        except ChannelError as exc:
            self.dropped[exc.reason] += 1

    async def run(self, child_input: Callable[[], asyncio.StreamWriter | None]) -> None:
        """Send each offered snapshot to `child_input()` (the running child's, or None)."""
        cap = self.max_bytes
        while True:
            await self._wake.wait()
            self._wake.clear()
            snapshot, self._pending = self._pending, None
            stdin = child_input()
            if snapshot is None:
                continue
            if stdin is None or stdin.is_closing():
                self.dropped["not_running"] += 1
                continue
            if stdin.transport.get_write_buffer_size() > 0:
                self.dropped["child_slow"] += 1
                continue
            try:
                frame = await self._encoded(snapshot, cap)
            except ChannelError as exc:
                self._last_bytes = cap  # too large or unencodable: the next one in a thread
                self.dropped[exc.reason] += 1
                if not self.unsent:  # once per episode, not every period
                    log.error("sql.snapshot_not_sent", reason=exc.reason, error=str(exc))
                self.unsent = f"the live tables are not sent ({exc})"
                continue
            self.unsent = ""
            if stdin is not child_input() or stdin.is_closing():
                self.dropped["not_running"] += 1
                continue
            try:
                stdin.write(frame)
            except (BrokenPipeError, ConnectionResetError):
                self.dropped["not_running"] += 1
                continue
            self.sent += 1

    async def _encoded(self, snapshot: DaemonSnapshot, cap: int) -> bytes:
        """The frame: on the loop when the last one was small, else in a thread."""
        if self._last_bytes <= INLINE_BYTES:
            frame = _frame(snapshot, cap)
        else:
            frame = await asyncio.to_thread(_frame, snapshot, cap)
        self._last_bytes = len(frame)
        return frame


def _frame(snapshot: DaemonSnapshot, cap: int) -> bytes:
    return encode_frame(snapshot_message(snapshot), cap)
