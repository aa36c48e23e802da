"""The configs `grstats demo` and `grstats demo --keep` write, read as the daemon reads them.

The group model is built from each config exactly as `grstats run` builds it
(`grstats.config.load_config`, `GroupModel(settings.source_settings)`), so
what is checked is what the members would publish. Expected figures are
bounds worked out by hand from the configs' rates; a fault's explanation is
`grstats channels --explain`'s over the members' channel rows as a daemon
receives them, its numbers worked out by hand from the fault's script.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from grstats.cli.demo import playground as pg
from grstats.cli.demo.steps import MEMBERS, member_config
from grstats.config import load_config
from grstats.core.channel_errors import ChannelErrorWatch
from grstats.core.channel_explain import explain_channels
from grstats.core.channels import member_channel_rows
from grstats.core.columns import CHANNEL_TABLES
from grstats.core.labels import member_labels
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
    # `--keep --days 1`: the day before, six days after the week's epoch
    assert pg.epoch_of(dt.date(2026, 12, 6), 1) == (dt.date(2026, 12, 5), epoch_s + 6 * 86_400)
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


PLAYGROUND = [
    "9de8e28e-3550-5edd-99b4-a05fdb8b86db",
    "abdfeef0-99c3-51cc-af07-4543705b4afc",
    "db507f39-07da-58cb-928e-e440c9b03736",
]
FAULT_AT = 1_796_540_000  # when `grstats demo --fault` runs; its event starts 3 s later


def _faulted(tmp_path: Path, kind: str, member: str) -> list[GroupModel]:
    """Each playground member's model with `kind` on `member`, as its daemon loads it."""
    texts = pg.member_configs(
        group="dddddddd-0000-4000-8000-000000000042",
        members=PLAYGROUND,
        epoch_s=FAULT_AT - 600,  # a group of ten minutes: the fault does not depend on it
        broker_port=1883,
        api_ports=[8437, 8438, 8439],
        sql_port=3307,
        out=tmp_path,
        fault=(kind, member, FAULT_AT),
    )
    (tmp_path / "sql.password").write_text("playground\n", encoding="utf-8")
    return [_model(tmp_path / f"m{i}.toml", text)[0] for i, text in enumerate(texts)]


def _explained(models: list[GroupModel], seconds: list[int]) -> list[str]:
    """`grstats channels --explain` over the members' rows as a daemon receives them, its
    error episodes seen at each of `seconds` after the fault."""
    watch = ChannelErrorWatch()
    for s in seconds:
        at_us = (FAULT_AT + s) * 1_000_000
        sent = [(m, models[i].channels_at(m, at_us)) for i, m in enumerate(PLAYGROUND)]
        tables: dict[str, Any] = {t.name: member_channel_rows(t, sent) for t in CHANNEL_TABLES}
        watch.observe(tables)
    shown = [models[i].member_at(m, at_us) for i, m in enumerate(PLAYGROUND)]
    tables["replication_group_members"] = [
        {"MEMBER_ID": m.member_id, "MEMBER_HOST": m.host, "MEMBER_PORT": m.port,
         "MEMBER_STATE": m.state}
        for m in shown
    ]  # fmt: skip
    tables["grstats_channel_errors"] = watch.rows()
    labels = member_labels(tables["replication_group_members"])
    return explain_channels(tables, labels, at_us)


def test_a_recovery_error_fault_is_a_donor_the_recovery_cannot_reach(tmp_path: Path) -> None:
    """Member 3 RECOVERING from +3 s, its donor the first other ONLINE member (member 1,
    127.0.0.1:3306); GR tries every 60 s: at +3 and +63, so at +70 s it is 2 tries, the
    first 67 s ago, the last 7 s ago; connected for the fault's last minute; ONLINE after."""
    models = _faulted(tmp_path, "recovery-error", PLAYGROUND[2])
    assert _explained(models, [2]) == []
    (line,) = _explained(models, [10, 70])
    assert line.startswith(
        "127.0.0.1:3308 (RECOVERING): its recovery channel (group_replication_recovery) "
        "cannot connect to its donor 127.0.0.1:3306: error 2003 (CR_CONN_HOST_ERROR: "
    )
    assert "first seen 1 min 7 s ago, 2 tries, the last 7.0 s ago" in line
    last_minute = 3 + pg.FAULT_S - 30
    assert _explained(models, [last_minute]) == [
        "127.0.0.1:3308 is RECOVERING and none of its channels shows an error: check its "
        "error log and `grstats members` for why it left or is not reachable."
    ]
    assert _explained(models, [3 + pg.FAULT_S]) == []


def test_an_applier_error_fault_stops_worker_1_and_the_applier(tmp_path: Path) -> None:
    models = _faulted(tmp_path, "applier-error", PLAYGROUND[1])
    (line,) = _explained(models, [10])
    assert line.startswith(
        "127.0.0.1:3307 (ONLINE): the coordinator of its applier channel "
        "(group_replication_applier) stopped on transaction "
    )
    assert "; and the worker 1 of its applier channel" in line
    assert line.count("error 1062 (ER_DUP_ENTRY") == 2
    # the applier is stopped too: the other two members' writes queue up
    queued = [
        models[1].stats_at(PLAYGROUND[1], (FAULT_AT + s) * 1_000_000).transactions_waiting_apply
        for s in (2, 70)
    ]
    assert queued[0] < 100 < queued[1], queued


def test_no_fault_is_no_script(tmp_path: Path) -> None:
    models = _faulted(tmp_path, "none", PLAYGROUND[1])
    assert {m.settings.script for m in models} == {()}
