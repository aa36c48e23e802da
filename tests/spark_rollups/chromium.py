"""Test helper: Debian's headless Chromium on a report, and what a reader at 1400 px sees.

`measure` loads a copy of report.html with a script appended that writes,
into the DOM Chromium dumps, the page's scroll width against the window's,
every table wider than its box, and whether the rendered text shows a
literal `**` -- the layout as the browser computed it, not as we expect it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
_PROBE = """<script>
(function () {
  var wide = [];
  document.querySelectorAll("div.wrap").forEach(function (d) {
    if (d.scrollWidth > d.clientWidth) { wide.push(d.firstElementChild.id); }
  });
  var probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = JSON.stringify({
    scroll_width: document.documentElement.scrollWidth,
    client_width: document.documentElement.clientWidth,
    inner_width: window.innerWidth,
    wide_tables: wide,
    stars: document.body.innerText.indexOf("**") >= 0
  });
  document.body.appendChild(probe);
})();
</script>"""


def chromium(*args: str, timeout: float = 120) -> str:
    """Run headless Chromium with `args`; its stdout (skips when it is not installed)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make sysdeps-test installs it)")
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        *args,
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its helpers share our child's process group
    )
    try:
        out, _ = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return out


def measure(report_html: Path, scratch: Path, width: int = 1400) -> dict[str, Any]:
    """The page's layout at `width` px, as Chromium computed it (see the module)."""
    probed = report_html.parent / "probe-report.html"
    probed.write_text(
        report_html.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
        encoding="utf-8",
    )
    try:
        dom = chromium(
            f"--user-data-dir={scratch / 'profile-probe'}",
            f"--window-size={width},900",
            "--dump-dom",
            probed.resolve().as_uri(),
        )
    finally:
        probed.unlink()
    start = dom.index('<pre id="probe">') + len('<pre id="probe">')
    measured: dict[str, Any] = json.loads(dom[start : dom.index("</pre>", start)])
    return measured


def screenshot(report_html: Path, scratch: Path, shot: Path, width: int = 1400) -> None:
    """A PNG of the page's first 4000 px at `width` px."""
    chromium(
        f"--user-data-dir={scratch / 'profile-shot'}",
        f"--screenshot={shot}",
        f"--window-size={width},4000",
        report_html.resolve().as_uri(),
    )
