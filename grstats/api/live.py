"""The live page's routes: `/`, `/group/<name>`, `/v1/live/<name>` and the static files.

Strategy: a page and its live JSON are made once per snapshot (and per
point of `core.recent`) and group, then sent as they are to every reader
of that snapshot, as /metrics is: twenty browsers refreshing every period
cost one rendering a period, not twenty. The cache holds the bodies of the
current snapshot only, so it is bounded by the number of groups the
snapshot has (the registry's caps bound those). The static files are read
once, from the package's data, and named by a hash of their bytes (a cached
copy is never stale).

`/v1/live/<group>` carries what no table holds: the findings, each member's
rates and sparklines (already formatted and drawn, so the script adds no
rule of its own), and the snapshot's time and health.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from urllib.parse import unquote

from grstats.api.page import (
    NOTHING_DRAWN,
    Drawn,
    GroupPage,
    draw,
    render_group,
    render_index,
    render_missing,
)
from grstats.core.labels import member_labels
from grstats.core.pagefindings import group_findings
from grstats.core.pageview import group_rows, groups
from grstats.core.recent import RecentSeries
from grstats.core.snapshot import MEMBERS_TABLE, DaemonSnapshot

__all__ = ["HTML", "LivePage", "PageOptions", "StaticFile", "static_files"]

HTML = "text/html; charset=utf-8"
_STATIC = {
    "page.css": "text/css; charset=utf-8",
    "page.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}

Response = tuple[int, str, tuple[bytes, ...]]
Findings = Callable[[DaemonSnapshot, str], Sequence[str]]


@dataclass(frozen=True, slots=True)
class StaticFile:
    """One file the page loads: its bytes, content type and versioned URL."""

    body: bytes
    ctype: str
    url: str


def static_files() -> dict[str, StaticFile]:
    """The page's CSS, script and icon from the package's data (`grstats/api/static/`)."""
    root = resources.files("grstats.api").joinpath("static")
    out = {}
    for name, ctype in _STATIC.items():
        body = root.joinpath(name).read_bytes()
        digest = hashlib.sha256(body).hexdigest()[:12]
        out[name] = StaticFile(body, ctype, f"/static/{name}?v={digest}")
    return out


@dataclass(frozen=True, slots=True)
class PageOptions:
    """What the page needs to know of the daemon.

    Attributes:
        period_s: the publishing period (the script polls at this pace).
        recent: the daemon's recent series (None: no sparklines, no rates).
        findings: (snapshot, group) -> the finding lines of that group
            (`core.pagefindings`: the `--explain` verdicts that name a problem).
    """

    period_s: float = 1.0
    recent: RecentSeries | None = None
    findings: Findings = group_findings


class LivePage:
    """Answers the page's paths from the current snapshot (None for any other path).

    Args:
        get_snapshot: returns the current snapshot; never blocks.
        options: the daemon's period, recent series and findings.
    """

    def __init__(self, get_snapshot: Callable[[], DaemonSnapshot], options: PageOptions) -> None:
        self._get_snapshot = get_snapshot
        self._options = options
        self.recent = options.recent
        self._static = static_files()
        self._urls = {
            "css": self._static["page.css"].url,
            "js": self._static["page.js"].url,
            "icon": self._static["icon.svg"].url,
        }
        self._held: tuple[DaemonSnapshot | None, int] = (None, -1)  # what the cache is of
        self._cache: dict[tuple[str, str], Response] = {}
        self._groups: dict[str, int] = {}  # the held snapshot's groups -> members
        # group -> its members' rates and sparklines, for one point of the recent series
        self._drawn: tuple[int, dict[str, dict[str, Drawn]]] = (-1, {})
        self.renders = 0  # pages and live bodies made (the rest were shared)

    @property
    def bodies_held(self) -> int:
        """The pages and live bodies kept for the current snapshot."""
        return len(self._cache)

    def answer(self, path: str) -> Response | None:
        """The answer to GET `path`, or None when it is not one of the page's paths."""
        if path.startswith("/static/"):
            found = self._static.get(path.removeprefix("/static/"))
            return None if found is None else (200, found.ctype, (found.body,))
        if path == "/":
            snapshot = self._get_snapshot()
            if snapshot.group_name:
                return self._cached(snapshot, "page", snapshot.group_name)
            return self._cached(snapshot, "index", "")
        for prefix, kind in (("/group/", "page"), ("/v1/live/", "live")):
            if path.startswith(prefix):
                group = unquote(path.removeprefix(prefix).strip("/"))
                return self._cached(self._get_snapshot(), kind, group)
        return None

    def _cached(self, snapshot: DaemonSnapshot, kind: str, group: str) -> Response:
        recent = self._options.recent
        version = -1 if recent is None else recent.version
        if self._held[0] is not snapshot or self._held[1] != version:
            self._held, self._cache = (snapshot, version), {}
            self._groups = groups(snapshot)
            if snapshot.group_name:
                self._groups.setdefault(snapshot.group_name, 0)
        if kind != "index" and group not in self._groups:
            # not cached: a name the daemon does not know costs nothing to keep
            if kind == "live":
                body = json.dumps({"error": "unknown group", "group": group}).encode()
                return 404, "application/json", (body,)
            return 404, HTML, (render_missing(group, self._urls),)
        answer = self._cache.get((kind, group))
        if answer is None:  # at most an index, and a page and a live body per known group
            answer = self._cache[(kind, group)] = self._make(snapshot, kind, group)
            self.renders += 1
        return answer

    def _make(self, snapshot: DaemonSnapshot, kind: str, group: str) -> Response:
        if kind == "index":
            return 200, HTML, (render_index(snapshot, self._groups, self._urls),)
        page = self._page(snapshot, group)
        if kind == "live":
            return 200, "application/json", (_live_json(page),)
        back = "" if snapshot.group_name else "/"
        live = f"/v1/live/{group}"
        return 200, HTML, (render_group(page, live_path=live, back=back),)

    def _page(self, snapshot: DaemonSnapshot, group: str) -> GroupPage:
        recent = self._options.recent
        members = group_rows(snapshot, group)
        here = ""
        if snapshot.local_member_id:
            labels = member_labels(snapshot.table(MEMBERS_TABLE))
            here = labels.get(snapshot.local_member_id, snapshot.local_member_id)
        return GroupPage(
            snapshot=snapshot,
            group=group,
            members=members,
            drawn=self._draw(group),
            findings=tuple(self._options.findings(snapshot, group)),
            period_s=self._options.period_s,
            step_s=0.0 if recent is None else recent.step_s,
            window_s=0.0 if recent is None else recent.window_s,
            here=here,
            static=self._urls,
        )

    def _draw(self, group: str) -> dict[str, Drawn]:
        """The group's rates and sparklines: drawn once a point of the recent series.

        Their right edge is the newest point, not the snapshot's time, so they
        change only with a new point (every `step_s`), not with every snapshot.
        """
        recent = self._options.recent
        if recent is None:
            return {}
        version, groups_drawn = self._drawn
        if version != recent.version:
            version, groups_drawn = recent.version, {}
            self._drawn = (version, groups_drawn)
        drawn = groups_drawn.get(group)
        if drawn is None:
            edge, window = recent.last_observed, recent.window_s
            drawn = groups_drawn[group] = {
                member: draw(series, edge, window)
                for member, series in recent.group_series(group).items()
            }
        return drawn


def _live_json(page: GroupPage) -> bytes:
    members = {}
    for member in page.members:
        drawn = page.drawn.get(member.member_id, NOTHING_DRAWN)
        members[member.member_id] = {
            "figures": dict(drawn.figures),
            "sparks": {
                name: {"paths": list(s.paths), "top": s.top} for name, s in drawn.sparks.items()
            },
        }
    health = page.snapshot.health
    body = {
        "taken_at_us": page.snapshot.taken_at_us,
        "health": {"ok": health.ok, "details": list(health.details())},
        "findings": list(page.findings),
        "members": members,
    }
    return json.dumps(body, separators=(",", ":")).encode()
