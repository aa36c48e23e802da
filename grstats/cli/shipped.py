"""The files shipped with grstats beside the code: example config, units, broker, alerts.

Strategy: the files live once, in the checkout's `config/` and `systemd/`; a
wheel carries copies under `grstats/shipped/` (setup.py's build step), so an
installed grstats prints them without a checkout. The wheel's copy is
preferred; a checkout (editable install, tests) falls back to the originals.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["SHIPPED", "shipped_text"]

# name given to `grstats init --print` -> path in the checkout
SHIPPED: dict[str, str] = {
    "grstats.toml": "config/grstats.toml",
    "mosquitto.conf": "config/mosquitto.conf",
    "mosquitto.acl": "config/mosquitto.acl.example",
    "prometheus-rules.yml": "config/prometheus/grstats-rules.yml",
    "grafana-dashboard.json": "config/grafana-dashboard.json",
    "grstats.service": "systemd/grstats.service",
    "grstats-rollup.service": "systemd/grstats-rollup.service",
    "grstats-rollup.timer": "systemd/grstats-rollup.timer",
    "grstats-report.service": "systemd/grstats-report.service",
    "grstats-report.timer": "systemd/grstats-report.timer",
}
_CHECKOUT = Path(__file__).resolve().parents[2]


def shipped_text(name: str) -> str:
    """The text of one shipped file.

    Args:
        name: a key of SHIPPED.

    Returns:
        The file's text, from the installed package or else the checkout.

    Raises:
        KeyError: not a shipped file.
        FileNotFoundError: neither the package nor a checkout has it.
    """
    relative = SHIPPED[name]
    packaged = resources.files("grstats").joinpath("shipped", relative)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (_CHECKOUT / relative).read_text(encoding="utf-8")
