"""Every reason /healthz can give is explained to the operator in docs/probes.md.

The codes come from grstats.core.health (the one place they are declared);
the documented ones from the table under "The reasons `/healthz` gives". A
new code without a line there, or a line for a code that no longer exists,
fails here.
"""

from __future__ import annotations

import re

from grstats.core import health
from tests.fixtures.paths import REPO_ROOT


def _declared() -> set[str]:
    return {
        value
        for name, value in vars(health).items()
        if name.isupper() and isinstance(value, str) and name in health.__all__
    }


def _documented() -> set[str]:
    text = (REPO_ROOT / "docs" / "probes.md").read_text(encoding="utf-8")
    table = text.split("## The reasons `/healthz` gives", 1)[1]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE))


def test_every_health_reason_is_documented_and_nothing_else() -> None:
    declared = _declared()
    assert len(declared) >= 13  # the codes of this version; fewer means the reading broke
    assert _documented() == declared
