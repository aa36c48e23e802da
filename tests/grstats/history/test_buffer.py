"""The writer's bounded buffer of recorded rows: order, bound, drops counted."""

from __future__ import annotations

from grstats.history.buffer import RowBuffer
from grstats.history.stats import Counters
from tests.grstats.history.rows import sample_row


def _seqs(buffer: RowBuffer) -> list[int]:
    return [row.seq for row in buffer.take()]


def test_at_the_bound_the_oldest_rows_are_dropped_and_counted() -> None:
    counters = Counters()
    buffer = RowBuffer(3, counters)
    for seq in range(1, 6):
        buffer.add(sample_row(seq))
    assert _seqs(buffer) == [3, 4, 5]
    assert (counters.rows_recorded, counters.buffer_full) == (5, 2)
    assert counters.recent_faults(60.0) == ["2 row(s) dropped: buffer full"]


def test_a_requeued_batch_goes_before_rows_recorded_meanwhile_and_the_bound_holds() -> None:
    counters = Counters()
    buffer = RowBuffer(4, counters)
    for seq in (1, 2, 3):
        buffer.add(sample_row(seq))
    batch = buffer.take()
    assert (buffer.waiting(), buffer.held()) == (0, 3)  # taken rows still count as buffered
    buffer.add(sample_row(4))
    buffer.add(sample_row(5))  # one over the bound: the oldest waiting row (4) goes
    buffer.requeue(batch)  # 1 2 3 5
    buffer.done()
    assert (buffer.waiting(), buffer.held(), counters.buffer_full) == (4, 4, 1)
    assert _seqs(buffer) == [1, 2, 3, 5]


def test_rows_given_up_at_close_are_counted_as_lost() -> None:
    counters = Counters()
    buffer = RowBuffer(10, counters)
    buffer.add(sample_row(1))
    buffer.add(sample_row(2))
    assert buffer.lose(OSError("ENOSPC")) == 2
    assert (buffer.held(), counters.disk_full) == (0, 2)
    assert counters.recent_faults(60.0) == ["2 row(s) lost at close: ENOSPC"]


def test_rows_in_flight_count_against_the_bound() -> None:
    # a writer thread stuck in write() holds the batch it took: what waits behind
    # it must not grow to another `bound` rows (twice the memory the operator set)
    counters = Counters()
    buffer = RowBuffer(3, counters)
    for seq in (1, 2, 3):
        buffer.add(sample_row(seq))
    batch = buffer.take()  # 1 2 3 in flight: the buffer is full
    buffer.add(sample_row(4))  # only a waiting row can go: this one
    assert (buffer.waiting(), buffer.held(), counters.buffer_full) == (0, 3, 1)
    buffer.add(sample_row(5))
    buffer.requeue(batch[1:])  # 1 was written, 2 and 3 failed: back in front
    buffer.add(sample_row(6))  # 2 3 6
    buffer.done()
    assert (buffer.held(), counters.buffer_full, counters.rows_recorded) == (3, 2, 6)
    assert _seqs(buffer) == [2, 3, 6]
