"""grstats.core.flowcontrol against an independent reading of PROTOCOL.md section 9.

`reference_quotas` (tests/fixtures/flow_reference.py) was written from the
section's text only (not from the module): a list-of-dicts simulation of one
receiver. The scripted stats sequences exercise throttling, release to
unlimited, the 10-step expiry (and trap 17's purge during the first steps),
min/max quota, member quota percent, the overshoot subtraction and DISABLED mode.
"""

from __future__ import annotations

import pytest

from grstats.core.flowcontrol import (
    FlowControl,
    FlowControlSettings,
    FlowEntry,
    needs_flow_control,
)
from tests.fixtures.flow_reference import BIG, reference_quotas


def module_quotas(script: list[dict], cfg: dict) -> list[int]:
    settings = FlowControlSettings(
        certifier_threshold=cfg.get("cert", 25000),
        applier_threshold=cfg.get("apply", 25000),
        hold_percent=cfg.get("hold", 10),
        release_percent=cfg.get("release", 50),
        member_quota_percent=cfg.get("mqp", 0),
        min_quota=cfg.get("minq", 0),
        min_recovery_quota=cfg.get("minrq", 0),
        max_quota=cfg.get("maxq", 0),
    )
    fc = FlowControl(settings)
    out = []
    for period in script:
        for member, (wc, wa, dc, da, dl, mode) in period["msgs"].items():
            fc.receive(member, FlowEntry(wc, wa, dc, da, dl, mode))
        if period.get("disabled"):
            fc.settings = FlowControlSettings(mode="DISABLED")
            out.append(fc.step(period.get("used", 0)).quota)
            fc.settings = settings
            continue
        out.append(fc.step(period.get("used", 0)).quota)
    return out


def _normal(dl: int = 100) -> tuple:
    return (10, 20, 300, 300, dl, 1)


def _slow(wa: int = 30000, da: int = 90) -> tuple:
    return (10, wa, 300, da, 0, 1)


def _script_slow_then_recover(start_calm: int = 12) -> list[dict]:
    """Calm steps (past trap 17), a slow member throttles, then recovers and releases."""
    calm = {"a": _normal(), "b": _normal(), "c": _normal(0)}
    slow = {"a": _normal(), "b": _normal(), "c": _slow()}
    script = [{"msgs": calm, "used": 200} for _ in range(start_calm)]
    script += [{"msgs": slow, "used": u} for u in (90, 90, 700, 90, 90, 90)]  # 700: overshoot
    script += [{"msgs": calm, "used": 30} for _ in range(60)]  # release to unlimited
    return script


CASES = {
    "slow_then_release": (_script_slow_then_recover(), {}),
    "low_threshold": (_script_slow_then_recover(), {"apply": 1000}),
    "release_percent_0": (_script_slow_then_recover(), {"release": 0}),
    "release_tiny_plus_one": (_script_slow_then_recover(), {"release": 1}),
    "hold_50": (_script_slow_then_recover(), {"hold": 50}),
    "member_quota_percent": (_script_slow_then_recover(), {"mqp": 40}),
    "min_quota": (_script_slow_then_recover(), {"minq": 500}),
    "min_recovery_quota": (
        [{"msgs": {"a": _normal(), "c": _slow(da=0)}} for _ in range(15)],
        {"minrq": 77},
    ),
    "max_quota": (_script_slow_then_recover(), {"maxq": 40}),
    "certifier_bottleneck": (
        [{"msgs": {"a": (30000, 0, 50, 300, 10, 1), "b": _normal()}} for _ in range(14)],
        {},
    ),
    "trap17_early_hold_purges_all": (
        [{"msgs": {"a": _normal(), "c": _slow()}} for _ in range(3)],
        {},
    ),
    "disabled_sender_ignored": (
        [{"msgs": {"a": _normal(), "c": (10, 30000, 300, 5, 0, 0)}} for _ in range(14)],
        {},
    ),
    "thresholds_zero": (_script_slow_then_recover(), {"apply": 0, "cert": 0}),
    "disabled_mode_step": (
        [{"msgs": {"c": _slow()}} for _ in range(12)]
        + [{"msgs": {"c": _slow()}, "disabled": True}]
        + [{"msgs": {"c": _slow()}} for _ in range(3)],
        {},
    ),
}


def _expiry_script() -> list[dict]:
    """A slow member that goes silent: its entry is purged 11 steps after its last message."""
    script = [{"msgs": {"a": _normal(), "b": _normal(), "c": _slow()}} for _ in range(12)]
    # c silent from now on; a stays over threshold so holds keep coming
    over = (10, 26000, 300, 250, 100, 1)
    script += [{"msgs": {"a": over, "b": _normal()}} for _ in range(14)]
    return script


CASES["expiry_after_10_steps"] = (_expiry_script(), {"apply": 1000})


@pytest.mark.parametrize("name", sorted(CASES))
def test_quota_sequence_matches_independent_reading(name: str) -> None:
    script, cfg = CASES[name]
    assert module_quotas(script, cfg) == reference_quotas(script, cfg)


def test_slow_member_quota_values_by_hand() -> None:
    quotas = module_quotas(_script_slow_then_recover(), {})
    assert quotas[:12] == [0] * 12  # no holds, never throttled: unlimited
    # capacity min(90 applied/s, safe 90) is below the floor 5% of 25000 = 1250;
    # 1250 * 0.9 = 1125, two writers: 562
    assert quotas[12:14] == [562, 562]
    assert quotas[14] == 562 - (700 - 562)  # overshoot subtracted: 424
    assert quotas[15:18] == [562, 562, 562]
    assert quotas[18:21] == [843, 1264, 1896]  # released by 1.5 each calm step
    assert quotas[-1] == 0  # grew past MAXTPS / 1.5: unlimited again


def test_release_by_one_percent_adds_one_when_truncation_stalls() -> None:
    quotas = module_quotas(_script_slow_then_recover(), {"release": 1, "minq": 10})
    # min_quota 10: 10 * 0.9 = 9 // 2 writers = 4, minus the overshoot (used 90) -> 1;
    # then 1 * 1.01 and 2 * 1.01 truncate to themselves: + 1 each calm step
    assert quotas[17:20] == [1, 2, 3]


def test_expiry_drops_silent_member_after_ten_steps() -> None:
    quotas = module_quotas(_expiry_script(), {"apply": 1000})
    # floor 5% of 1000 = 50; capacity = c's 90 applied/s -> 81 // 2 writers = 40
    assert quotas[12] == 40
    # c's last stamp is 11; purged once 11 < step - 10, i.e. at step 22 (index 21)
    assert quotas[20] == 40
    assert quotas[21] == int(250 * 0.9) // 2  # a alone is the bottleneck: 112


def test_trap17_purges_everything_in_first_steps() -> None:
    fc = FlowControl()
    fc.receive("c", FlowEntry(0, 30000, 300, 90, 0))
    result = fc.step()
    assert result.purged == ("c",)
    # nothing left: capacity MAXTPS, quota MAXTPS * 0.9 truncated
    assert result.quota == int(BIG * 0.9)


def test_hold_uses_sender_mode_and_receiver_thresholds() -> None:
    settings = FlowControlSettings(applier_threshold=100)
    assert needs_flow_control(FlowEntry(0, 101, 0, 0, 0), settings)
    assert not needs_flow_control(FlowEntry(0, 100, 0, 0, 0), settings)
    assert not needs_flow_control(FlowEntry(0, 101, 0, 0, 0, mode=0), settings)


@pytest.mark.parametrize(
    ("field", "value"),
    [("mode", "ON"), ("period", 0), ("hold_percent", 101), ("min_quota", -1), ("max_quota", True)],
)
def test_settings_reject_out_of_range(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        FlowControlSettings(**{field: value})  # type: ignore[arg-type]
