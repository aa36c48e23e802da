"""The configs `grstats demo` and `grstats demo --keep` write, read as the daemon reads them.

The group model is built from each config exactly as `grstats run` builds it
(`grstats.config.load_config`, `GroupModel(settings.source_settings)`), so
what is checked is what the members would publish. Expected figures are
bounds worked out by hand from the configs' rates.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from grstats.cli.demo import playground as pg
from grstats.cli.demo.steps import MEMBERS, member_config
from grstats.config import load_config
from grstats.sources.simulated import GroupModel


def _model(path: Path, text: str) -> tuple[GroupModel, str]:
    path.write_text(text, encoding="utf-8")
    settings = load_config(path)
    return GroupModel(settings.source_settings), settings.member.id


def test_the_demos_fresh_group_counts_from_its_start(tmp_path: Path) -> None:
    """13 s after the demo starts its members, CHECKED is what 3 writers at 30 tx/s
    (hot hour: x3) can certify in 13 s -- at most 3 * 30 * 3 * 13 = 3510 -- not the
    billions counted since the model's default epoch (2026-01-01)."""
    now_s = 1_796_000_000  # 2026-11-30, long after 2026-01-01
    text = member_config(0, 1883, 8437, [0, 1], now_s)
    model, member = _model(tmp_path / "member1.toml", text)
    stats = model.stats_at(member, (now_s + 13) * 1_000_000)
    assert 0 < stats.transactions_certified <= 3510, stats
    assert member == MEMBERS[0]


def test_every_playground_member_shares_the_backfills_model(tmp_path: Path) -> None:
    """The three members' models are the same (one group), with the backfill's epoch:
    a week after it, CHECKED is at most a week of 3 writers at 20 tx/s x3."""
    first, epoch_s = pg.epoch_of(dt.date(2026, 12, 6))
    assert first == dt.date(2026, 11, 29)
    assert epoch_s == int(dt.datetime(2026, 11, 29, tzinfo=dt.UTC).timestamp())
    members = [
        "9de8e28e-3550-5edd-99b4-a05fdb8b86db",
        "abdfeef0-99c3-51cc-af07-4543705b4afc",
        "db507f39-07da-58cb-928e-e440c9b03736",
    ]
    texts = pg.member_configs(
        group="dddddddd-0000-4000-8000-000000000042",
        members=members,
        epoch_s=epoch_s,
        broker_port=1883,
        api_ports=[8437, 8438, 8439],
        sql_port=3307,
        out=tmp_path,
    )
    (tmp_path / "sql.password").write_text("playground\n", encoding="utf-8")
    at_us = (epoch_s + 7 * 86400) * 1_000_000
    checked = set()
    for index, text in enumerate(texts):
        model, member = _model(tmp_path / f"m{index}.toml", text)
        assert member == members[index]
        assert model.settings.slow_member == members[-1]
        checked.add(model.stats_at(members[0], at_us).transactions_certified)
    assert len(checked) == 1, checked  # every daemon computes the same group
    assert 0 < checked.pop() <= 3 * 20 * 3 * 7 * 86400
