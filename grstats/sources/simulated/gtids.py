"""The GTID ledger: which GNO each positively certified transaction received.

Strategy: GTIDs are handed out in blocks of 1000000 (GR's
group_replication_gtid_assignment_block_size default). Writer slot w (member
index in multi-primary, 0 for the primary in single-primary) starts in block
w (GNOs w*10**6 + 1 ..); a writer that uses up its block gets the next block
after all blocks handed out so far (GR's lowest free block), numbered in the
order writers begin them (within a second, by writer slot). So every block but
the writers' current ones is full, and the set of GTIDs certified by any
second is [1, end of the last block] minus the unused tails of the current
blocks: at most writers + 1 intervals, computed without listing transactions.

Invariants: a member's i-th positively certified transaction always has the
same GNO; GNOs are unique; texts are canonical (sorted, merged intervals);
rolled-back transactions receive no GTID.
"""

from __future__ import annotations

import numpy as np

from grstats.sources.simulated.hashing import I64, key, mix_py
from grstats.sources.simulated.workload import HOUR, Workload

__all__ = ["GTID_BLOCK_SIZE", "GtidLedger"]

GTID_BLOCK_SIZE = 1_000_000


def _started(count: int) -> int:
    """Blocks after its first that a writer with `count` GTIDs has begun."""
    return max(0, (count - 1) // GTID_BLOCK_SIZE)


class GtidLedger:
    """GNOs and GTID-set texts of the workload's transactions; cached, not thread-safe."""

    def __init__(self, workload: Workload) -> None:
        """Bind the ledger to the workload.

        Args:
            workload: the group's workload.
        """
        self._w = workload
        self._group = workload.settings.group
        self._writers: list[int] = workload.writers.tolist()
        self._pick_key = key(workload.settings.seed, self._group, "pick")
        self._blocks: dict[tuple[int, int], int] = {}  # (member, j) -> block number

    def _block(self, m: int, j: int, upper: int) -> int:
        """Block number of member m's j-th block, begun by second `upper` at the latest."""
        w = self._w
        if j == 0:
            return w.slot[m]
        got = self._blocks.get((m, j))
        if got is None:
            unit = np.zeros(w.n, dtype=np.int64)
            unit[m] = 1
            t = w.first_exceeding(unit, j * GTID_BLOCK_SIZE, upper)
            before, now = w.ok_at(t - 1), w.ok_at(t)
            rank = 0
            for x in self._writers:
                rank += _started(int(before[x]))
                if w.slot[x] < w.slot[m]:
                    rank += _started(int(now[x])) - _started(int(before[x]))
            got = self._blocks[(m, j)] = len(self._writers) + rank
        return got

    def gno(self, m: int, i: int, upper: int) -> int:
        """GNO of member m's i-th (0-based) positively certified transaction, done by `upper`."""
        j, rest = divmod(i, GTID_BLOCK_SIZE)
        return self._block(m, j, upper) * GTID_BLOCK_SIZE + rest + 1

    def set_text(self, ok: I64, upper: int) -> str:
        """Canonical text of every GTID certified by `upper`, where `ok` = ok_at(upper)."""
        b = GTID_BLOCK_SIZE
        counts = ok.tolist()  # plain ints, converted once
        end = (len(self._writers) + sum(_started(counts[x]) for x in self._writers)) * b
        holes = []
        for x in self._writers:
            j = _started(counts[x])
            used = counts[x] - j * b
            if used < b:
                block = self._block(x, j, upper)
                holes.append((block * b + used + 1, (block + 1) * b))
        ivs: list[tuple[int, int]] = []
        pos = 1
        for lo, hi in sorted(holes):
            if lo > pos:
                ivs.append((pos, lo - 1))
            pos = hi + 1
        if pos <= end:
            ivs.append((pos, end))
        if not ivs:
            return ""
        return "".join([self._group] + [f":{a}" if a == z else f":{a}-{z}" for a, z in ivs])

    def last_conflict_free(self, s: int) -> str:
        """GTID of the last positively certified transaction through second s ("" if none)."""
        w = self._w
        h, k = divmod(s, HOUR)
        if h < w.h0:
            return ""
        hour = w.hour(h)
        if k > 0 and hour.ok_tot[k] > hour.ok_tot[k - 1]:  # fast path: certified this second
            ok_h = hour.ok[:, k]
            cands = np.flatnonzero(ok_h > hour.ok[:, k - 1]).tolist()
            pa, pc = w.base(h)
            ok = pa - pc + ok_h
            last = s
        else:
            ok = w.ok_at(s)
            total = int(ok.sum())
            if total == 0:
                return ""
            last = w.first_exceeding(np.ones_like(ok), total - 1, s)
            ok = w.ok_at(last)
            cands = np.flatnonzero(ok > w.ok_at(last - 1)).tolist()
        # several members may certify in the same second: which one was last is hashed
        m = cands[mix_py(self._pick_key ^ last) % len(cands)]
        return f"{self._group}:{self.gno(m, int(ok[m]) - 1, last)}"
