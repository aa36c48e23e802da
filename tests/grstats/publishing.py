"""A Publisher on a fixed list of samples, recording into a list: the history-row tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grstats.config import load_config
from grstats.core.records import HistoryRow
from grstats.core.tables import MemberTables
from grstats.daemon.publisher import Publisher
from tests.grstats.core.test_tables import GROUP, LOCAL, make_tables


class Sink:
    """The history writer's `record`, into a list."""

    def __init__(self) -> None:
        self.rows: list[HistoryRow] = []

    def record(self, row: HistoryRow) -> None:
        self.rows.append(row)


class ScriptedSource:
    """Gives the samples in order, then the last one again."""

    def __init__(self, *samples: Any) -> None:
        self.samples = list(samples)

    async def sample(self, now_us: int) -> Any:
        return self.samples.pop(0) if len(self.samples) > 1 else self.samples[0]


def make_publisher(
    tmp_path: Path, sink: Sink, *samples: Any, tables: MemberTables | None = None
) -> Publisher:
    """A Publisher of LOCAL in GROUP (simulated source kind) over `samples`."""
    config = tmp_path / "grstats.toml"
    config.write_text(
        f'[member]\ngroup = "{GROUP}"\nid = "{LOCAL}"\n[source]\nkind = "simulated"\n',
        encoding="utf-8",
    )
    source = ScriptedSource(*samples)
    return Publisher(load_config(config), source, tables or make_tables(), sink)  # type: ignore[arg-type]
