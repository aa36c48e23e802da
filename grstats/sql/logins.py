"""Failed logins slowed per client address, like MySQL's connection_control plugin.

Strategy: after `free_failures` consecutive failed logins from one address,
each further login attempt from it waits before its password is checked:
`first_delay` seconds, doubling per failure, at most `max_delay` (MySQL's
connection_control_failed_connections_threshold and _min/_max_connection_delay;
there the delay grows by a second per failure). A successful login forgets
the address. The wait is an `asyncio.sleep` on the connection's own task: it
slows the guesser, not the loop.

Bounds: at most `max_addresses` addresses are remembered (the least recently
failed is forgotten first), so a spread of addresses cannot grow the table.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    """How failed logins are slowed."""

    free_failures: int = 3
    first_delay: float = 0.25
    max_delay: float = 4.0
    max_addresses: int = 4096


class LoginThrottle:
    """Consecutive failed logins per client address, and the delay they earn.

    Args:
        policy: the thresholds and bounds.
    """

    def __init__(self, policy: ThrottlePolicy | None = None) -> None:
        self.policy = policy or ThrottlePolicy()
        self._failures: OrderedDict[str, int] = OrderedDict()
        self.delayed = 0  # login attempts that were made to wait
        self.forgotten = 0  # addresses dropped at max_addresses

    def delay(self, address: str) -> float:
        """Seconds the next login attempt from `address` waits (0 when it may go at once)."""
        failures = self._failures.get(address, 0)
        over = failures - self.policy.free_failures
        if failures == 0 or over < 0:
            return 0.0
        return min(self.policy.max_delay, self.policy.first_delay * 2.0 ** min(over, 32))

    def failed(self, address: str) -> int:
        """Record a failed login; returns the address's consecutive failures."""
        count = self._failures.pop(address, 0) + 1
        self._failures[address] = count  # most recent last
        while len(self._failures) > self.policy.max_addresses:
            self._failures.popitem(last=False)
            self.forgotten += 1
        return count

    def succeeded(self, address: str) -> None:
        """Forget `address`'s failures."""
        self._failures.pop(address, None)

    def __len__(self) -> int:
        return len(self._failures)
