"""The simulated group: a deterministic model every member's daemon computes identically.

GroupModel (model.py) is the façade; the other modules are its parts.
"""

from grstats.sources.simulated.gtids import GTID_BLOCK_SIZE
from grstats.sources.simulated.model import GroupModel
from grstats.sources.simulated.settings import (
    ACTIONS,
    DEFAULT_EPOCH_S,
    MODES,
    ScriptEvent,
    SimulationSettings,
)
from grstats.sources.simulated.source import SimulatedSource

__all__ = [
    "ACTIONS",
    "DEFAULT_EPOCH_S",
    "GTID_BLOCK_SIZE",
    "MODES",
    "GroupModel",
    "ScriptEvent",
    "SimulatedSource",
    "SimulationSettings",
]
