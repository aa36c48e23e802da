"""The simulated group: a deterministic model every member's daemon computes identically.

GroupModel (model.py) is the façade; the other modules are its parts.
The names are loaded on first use: the config reads `settings` (no numpy)
for every daemon, and only a simulated daemon needs the model (numpy).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "ACTIONS": "settings",
    "DEFAULT_EPOCH_S": "settings",
    "GTID_BLOCK_SIZE": "gtids",
    "MODES": "settings",
    "GroupModel": "model",
    "ScriptEvent": "settings",
    "SimulatedSource": "source",
    "SimulationSettings": "settings",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
