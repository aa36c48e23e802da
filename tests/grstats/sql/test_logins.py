"""The failed-login throttle: delays by hand, and the address table's bound."""

from __future__ import annotations

from grstats.sql.logins import LoginThrottle, ThrottlePolicy


def test_delay_starts_after_the_free_failures_and_doubles_to_the_cap() -> None:
    throttle = LoginThrottle(ThrottlePolicy(free_failures=3, first_delay=0.25, max_delay=4.0))
    delays = []
    for _ in range(10):
        delays.append(throttle.delay("10.0.0.1"))
        throttle.failed("10.0.0.1")
    assert delays == [0.0, 0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert throttle.delay("10.0.0.2") == 0.0  # per address


def test_a_successful_login_forgets_the_address() -> None:
    throttle = LoginThrottle(ThrottlePolicy(free_failures=0))
    throttle.failed("10.0.0.1")
    assert throttle.delay("10.0.0.1") > 0
    throttle.succeeded("10.0.0.1")
    assert throttle.delay("10.0.0.1") == 0.0
    assert len(throttle) == 0


def test_the_address_table_is_bounded_least_recent_failure_forgotten_first() -> None:
    throttle = LoginThrottle(ThrottlePolicy(free_failures=0, max_addresses=3))
    for i in range(10):
        throttle.failed(f"10.0.0.{i}")
    throttle.failed("10.0.0.7")  # now the most recent
    throttle.failed("10.0.0.100")
    assert len(throttle) == 3
    assert throttle.forgotten == 8
    assert throttle.delay("10.0.0.7") > 0 and throttle.delay("10.0.0.100") > 0
    assert throttle.delay("10.0.0.8") == 0.0
