"""The live page over real loopback connections: what it shows, its headers, its bounds.

The page is parsed with the standard library's HTML parser, the way a
browser's tokenizer sees it: a hostile member name must arrive as text, and
the only script is the page's own file.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from grstats.api.live import PageOptions
from grstats.core.recent import RecentSeries, points_of
from tests.fixtures.http import api_server, raw_get, raw_request
from tests.fixtures.page_snapshot import (
    GROUP,
    OTHER_GROUP,
    T_US,
    Member,
    group_snapshot,
    uuid,
)

HOSTILE = "<script>alert(1)</script>"
PAGE_WEIGHT = 100 * 1024
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "link", "script", "body", "header", "h1", "h2", "code",
    "p", "a", "time", "span", "section", "ul", "li", "main", "table", "thead", "tbody", "tr",
    "th", "td", "svg", "path", "template", "footer",
}  # fmt: skip


_VOID = {"meta", "link", "br", "img", "input"}


class _Page(HTMLParser):
    """What a browser's tokenizer finds in the page: tags, attributes, script bodies, and
    the text shown (none of a `hidden` element or a `<template>`)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.script_bodies: list[str] = []
        self._open: list[tuple[str, bool]] = []  # (tag, shown)
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if tag not in _VOID:
            shown = "hidden" not in found and tag != "template"
            self._open.append((tag, shown and all(s for _, s in self._open)))

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        where = self._open[-1] if self._open else ("", True)
        if where[0] == "script":
            self.script_bodies.append(data)
        elif where[1]:
            self.text.append(data)


def _three(**hostile: str) -> list[Member]:
    return [
        Member(uuid(1), host="db1", port=3306, local=True, role="PRIMARY"),
        Member(uuid(2), host="db2", port=3306, applier_queue=1355, lag_s=9.62,
               bottleneck="applier", throttling=1, catch_up="23.1 s", failover_ready=0),
        Member(uuid(3), host=hostile.get("host", "db3"), port=3306,
               state=hostile.get("state", "UNREACHABLE"), role=hostile.get("role", "SECONDARY")),
    ]  # fmt: skip


def _filled(members: list[Member], points: int = 181) -> RecentSeries:
    """A recent series with `points` points of every member (a full 15 minutes)."""
    recent = RecentSeries()
    for step in range(points):
        at = T_US + 5_000_000 * (step - points + 1)
        for m in members:
            m.applied += 50 * step
            m.applier_queue = 100 + step
            m.lag_s = 0.5 + step / 10
        recent.observe(at / 1e6, points_of(group_snapshot(members, taken_at_us=at)))
    return recent


async def test_the_page_shows_every_member_host_port_first_with_its_figures() -> None:
    snapshot = group_snapshot(_three())
    async with api_server(snapshot) as server:
        status, headers, body = await raw_get(server.port, "/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    page = _Page(body.decode())
    rows = [a for tag, a in page.tags if tag == "tr" and a.get("data-member")]
    assert [r["data-member"] for r in rows] == [uuid(1), uuid(2), uuid(3)]
    text = " ".join(" ".join(page.text).split())
    assert "db1:3306 this daemon ONLINE PRIMARY" in text
    assert "applier 1,355" in text and "9.6 s" in text
    assert "bottleneck applier throttling yes" in text
    assert "23.1 s not ready" in text
    assert "db3:3306 UNREACHABLE SECONDARY" in text


@pytest.mark.parametrize(
    "hostile",
    [
        {"host": HOSTILE},
        {"host": 'x"><img src=x onerror=alert(1)>'},
        {"state": "<img src=x onerror=alert(1)>"},
        {"role": "\x1b[2J\x1b[31mPWNED\u202e"},
        {"host": "<script>" * 8192},  # 64 KiB
    ],
)
async def test_hostile_text_from_the_bus_is_text_and_runs_nothing(hostile: dict[str, str]) -> None:
    snapshot = group_snapshot(_three(**hostile))
    async with api_server(snapshot) as server:
        _, _, body = await raw_get(server.port, "/")
    page = _Page(body.decode())
    assert {tag for tag, _ in page.tags} <= ALLOWED_TAGS
    scripts = [a for tag, a in page.tags if tag == "script"]
    assert len(scripts) == 1 and str(scripts[0]["src"]).startswith("/static/page.js?v=")
    assert page.script_bodies == []
    attributes = {name for _, a in page.tags for name in a}
    assert [name for name in attributes if name.startswith("on") or name == "style"] == []
    value = next(iter(hostile.values()))
    shown = value.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    assert shown[:120] in " ".join(page.text)
    assert len(body) < PAGE_WEIGHT


@pytest.mark.parametrize(
    "path", ["/", "/v1/live/" + GROUP, "/static/page.css", "/v1/tables", "/healthz", "/nowhere"]
)
async def test_every_answer_forbids_inline_script_other_origins_and_sniffing(path: str) -> None:
    async with api_server(group_snapshot(_three())) as server:
        _, headers, _ = await raw_get(server.port, path)
    csp = headers["content-security-policy"]
    assert csp.startswith("default-src 'self';")
    assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
async def test_nothing_changes_state_the_page_answers_only_get_and_head(method: str) -> None:
    async with api_server(group_snapshot(_three())) as server:
        status, _, _ = await raw_request(
            server.port, f"{method} / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode()
        )
        head, headers, body = await raw_request(server.port, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 405
    assert (head, body) == (200, b"") and int(headers["content-length"]) > 0


async def test_page_weight_of_a_nine_member_group_with_full_sparklines() -> None:
    members = [Member(uuid(i), host=f"db{i}.example.internal", port=3306) for i in range(1, 10)]
    recent = _filled(members)
    snapshot = group_snapshot(members, local_member_id=uuid(1), taken_at_us=T_US)
    async with api_server(snapshot, PageOptions(recent=recent)) as server:
        _, _, page = await raw_get(server.port, "/")
        parsed = _Page(page.decode())
        links = [a.get("href") or a.get("src") for t, a in parsed.tags if t in ("link", "script")]
        parts = [(await raw_get(server.port, str(url)))[2] for url in links]
    assert all(parts)
    weight = len(page) + sum(len(p) for p in parts)
    print(f"page weight: {weight} bytes (page {len(page)})")
    assert weight <= PAGE_WEIGHT, weight
    paths = [a["d"] for t, a in parsed.tags if t == "path" and a.get("d")]
    assert len(paths) == 9 * 4  # two queues, applied/s and lag per member


async def test_the_page_is_made_once_per_snapshot_whoever_asks() -> None:
    async with api_server(group_snapshot(_three())) as server:
        bodies = {(await raw_get(server.port, "/"))[2] for _ in range(20)}
        await raw_get(server.port, "/v1/live/" + GROUP)
        await raw_get(server.port, "/v1/live/" + GROUP)
        assert server.page.renders == 2  # the page once, its live JSON once
    assert len(bodies) == 1


async def test_static_files_are_named_by_their_hash_and_cached() -> None:
    async with api_server(group_snapshot(_three())) as server:
        _, _, page = await raw_get(server.port, "/")
        (src,) = [a["src"] for t, a in _Page(page.decode()).tags if t == "script"]
        status, headers, body = await raw_get(server.port, str(src))
        missing, _, _ = await raw_get(server.port, "/static/../routes.py")
    assert status == 200 and headers["content-type"] == "text/javascript; charset=utf-8"
    assert b"textContent" in body and b"innerHTML" not in body
    assert "immutable" in headers["cache-control"]
    assert missing == 404


async def test_the_page_and_its_live_json_carry_rates_sparklines_and_health() -> None:
    members = _three()
    recent = RecentSeries()
    recent.observe(1000.0, points_of(group_snapshot(members, taken_at_us=1_000_000_000)))
    members[1].applied += 500  # 500 more over 5 s
    recent.observe(1005.0, points_of(group_snapshot(members, taken_at_us=1_005_000_000)))
    snapshot = group_snapshot(members, taken_at_us=1_005_000_000)
    async with api_server(snapshot, PageOptions(recent=recent)) as server:
        status, _, body = await raw_get(server.port, "/v1/live/" + GROUP)
        _, _, page = await raw_get(server.port, "/")
    # the first paint (no script) shows the same rates
    shown = " ".join(" ".join(_Page(page.decode()).text).split())
    assert "checked 0.0 conflicts 0.0 applied 100" in shown
    live = json.loads(body)
    assert status == 200 and live["health"] == {"ok": True, "details": []}
    assert live["findings"] == []
    second = live["members"][uuid(2)]
    rates = {"checked_rate": "0.0", "conflicts_rate": "0.0", "applied_rate": "100"}
    assert second["figures"] == rates
    assert second["sparks"]["applied"]["top"] == "max 100/s"
    # 1355 at both points, x = floor(90 * (t - 105) / 900): the top, columns 89 and 90
    assert second["sparks"]["queues"]["paths"][1] == "M89 0L90 0"


async def test_a_collector_lists_its_groups_each_linking_to_its_page() -> None:
    snapshot = group_snapshot(
        [Member(uuid(1), host="one"), Member(uuid(2), host="two", group=OTHER_GROUP)],
        group_name="",
    )
    async with api_server(snapshot) as server:
        _, _, index = await raw_get(server.port, "/")
        status, _, other = await raw_get(server.port, f"/group/{OTHER_GROUP}")
        unknown, _, _ = await raw_get(server.port, "/group/cccccccc-cccc-cccc-cccc-cccccccccccc")
        no_live, _, _ = await raw_get(server.port, "/v1/live/nope")
        held = server.page.bodies_held
        for n in range(50):  # names the collector does not know are answered, never kept
            await raw_get(server.port, f"/group/{n:08d}-<i>")
            await raw_get(server.port, f"/v1/live/{n:08d}")
        assert server.page.bodies_held == held == 2  # the index and the other group's page
    links = [a["href"] for t, a in _Page(index.decode()).tags if t == "a"]
    assert f"/group/{GROUP}" in links and f"/group/{OTHER_GROUP}" in links
    text = " ".join(_Page(other.decode()).text)
    assert status == 200 and "two:3306" in text and "one:3306" not in text
    assert (unknown, no_live) == (404, 404)


async def test_members_past_the_series_bound_are_counted_on_metrics() -> None:
    members = _three()
    probe = RecentSeries()
    recent = RecentSeries(max_bytes=2 * probe.member_bytes)  # room for two of three
    recent.observe(1000.0, points_of(group_snapshot(members, taken_at_us=1_000_000_000)))
    snapshot = group_snapshot(members, taken_at_us=1_005_000_000)
    recent.observe(1005.0, points_of(snapshot))
    async with api_server(snapshot, PageOptions(recent=recent)) as server:
        _, _, metrics = await raw_get(server.port, "/metrics")
        _, _, page = await raw_get(server.port, "/")
    lines = metrics.decode().splitlines()
    assert "grstats_page_series_refused_total 2.0" in lines
    assert f"grstats_page_series_bytes {2 * probe.member_bytes}.0" in lines
    paths = [a.get("d") for t, a in _Page(page.decode()).tags if t == "path"]
    assert sum(1 for d in paths if d) == 2 * 4  # the third member has no sparkline


async def test_the_findings_are_at_the_top_of_the_page_and_in_its_live_json() -> None:
    finding = "db2:3306: <b>1</b> errant \x1b[31m"
    shown = "db2:3306: <b>1</b> errant \\x1b[31m"  # escaped as every text is

    def findings(snapshot: object, group: str) -> list[str]:
        return [finding] if group == GROUP else []

    async with api_server(group_snapshot(_three()), PageOptions(findings=findings)) as server:
        _, _, page = await raw_get(server.port, "/")
        _, _, live = await raw_get(server.port, "/v1/live/" + GROUP)
    parsed = _Page(page.decode())
    text = " ".join(" ".join(parsed.text).split())
    assert text.index(f"Findings {shown}") < text.index("Member State")
    assert "Nothing to report" not in text
    assert "b" not in {tag for tag, _ in parsed.tags}
    assert json.loads(live)["findings"] == [finding]


async def test_the_page_shows_the_explain_verdicts_that_name_a_problem() -> None:
    gtids = [
        {"MEMBER_ID": uuid(2), "ERRANT_TRANSACTIONS": f"{uuid(2)}:7", "ERRANT_COUNT": 1,
         "ERRANT_SINCE": "2026-12-06 07:00:00.000000", "MISSING_COUNT": 0,
         "RECOVERY_METHOD": "REPROVISION", "DONORS": ""},
    ]  # fmt: skip
    snapshot = group_snapshot(_three(), extra_tables={"grstats_member_gtids": gtids})
    async with api_server(snapshot) as server:  # the daemon's wiring: core.pagefindings
        _, _, live = await raw_get(server.port, "/v1/live/" + GROUP)
    (finding,) = json.loads(live)["findings"]
    assert finding.startswith("db2:3306: 1 errant, 0 missing; recovery: REPROVISION: ")
