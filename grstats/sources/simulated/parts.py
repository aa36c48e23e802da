"""GroupParts: the parts of a simulated group, wired together once per model.

Strategy: every part (model.py lists them) reads the workload and the applier
queues; with flow control on (QUOTA), those are the throttled ones, so the
parts are built in two rounds: an unthrottled workload, queues and certifier
feed `FlowModel`, and every part the model shows is then built over
`ThrottledWorkload` and `ThrottledQueues`. Building is cheap: each part
computes lazily, on its first evaluation. `GroupModel` (model.py) is the
façade over these parts.
"""

from __future__ import annotations

import numpy as np

from grstats.sources.simulated.applier import ApplierQueues
from grstats.sources.simulated.certifier import Certification
from grstats.sources.simulated.channels import MemberChannels
from grstats.sources.simulated.counts import PipelineCounts
from grstats.sources.simulated.flow import FlowModel, ThrottledQueues, ThrottledWorkload
from grstats.sources.simulated.gtids import GtidLedger
from grstats.sources.simulated.gtidstate import GtidStates
from grstats.sources.simulated.hashing import I64
from grstats.sources.simulated.lag import StageLag
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.settings import SimulationSettings
from grstats.sources.simulated.texts import MemberTexts
from grstats.sources.simulated.workers import AppliersModel
from grstats.sources.simulated.workload import HOUR, Workload

__all__ = ["GroupParts"]


def _background_in_queue(raw: Workload, m: int, start: int) -> I64:
    """Member m's unthrottled background certifier queue in the hour starting at `start`."""
    h = start // HOUR
    if h < raw.h0:
        return np.zeros(HOUR, dtype=np.int64)
    got: I64 = raw.hour(h).in_queue[m]
    return got


class GroupParts:
    """The simulated group's parts over its settings, and its members by index."""

    def __init__(self, settings: SimulationSettings, *, hours_cached: int | None = None) -> None:
        """Prepare the model (cheap; work happens lazily on first evaluation).

        Args:
            settings: the knobs, identical on every member of the group.
            hours_cached: workload hours kept (at least the default of a few; ~1 MB
                each for 9 members): a reader of whole days member by member
                (`grstats simulate`) keeps a day instead of building each hour
                once per member. None: the default, for a daemon's one member.
        """
        self.settings = settings
        self._index = {m: i for i, m in enumerate(settings.members)}
        self._membership = Membership(settings)
        self._workload = raw = Workload(settings)
        if hours_cached is not None:
            raw.hours_cached = max(raw.hours_cached, hours_cached)
        self._queues = ApplierQueues(raw)
        self._flow: FlowModel | None = None
        if settings.flow_control.mode == "QUOTA":
            raw_cert = Certification(raw, self._queues, GtidLedger(raw), self._membership)
            self._flow = FlowModel(
                raw,
                self._queues,
                lambda m, start: raw_cert.in_queue(m, start, _background_in_queue(raw, m, start)),
            )
            self._workload = ThrottledWorkload(raw, self._flow)
            self._workload.hours_cached = max(self._workload.hours_cached, raw.hours_cached)
            self._queues = ThrottledQueues(self._workload, self._queues, self._flow)
        self._ledger = GtidLedger(self._workload)
        self._cert = cert = Certification(
            self._workload, self._queues, self._ledger, self._membership
        )
        self._counts = PipelineCounts(self._workload, self._queues, cert, self._membership)
        self._texts = MemberTexts(settings, self._membership, cert, self._ledger)
        self._lag = StageLag(self._workload, self._queues, self._ledger, self._membership)
        self._appliers = AppliersModel(settings, self._workload, self._queues)
        self._channels = MemberChannels(settings, self._membership)
        self._gtid_states = GtidStates(
            settings, self._workload, self._ledger, self._queues.queue_at
        )

    def _member(self, member_id: str) -> int:
        try:
            return self._index[member_id.lower()]
        except KeyError:
            raise ValueError(f"member_id: {member_id!r} is not a member of the model") from None
