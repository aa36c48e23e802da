"""The live page (`GET /`): the whole group at a glance, rendered on the server.

Strategy: one HTML document per group from the snapshot, its columns from
`core.pageview`'s declarations, its sparklines from `core.recent` through
`core.sparkline` as inline SVG paths, its findings as the `--explain` texts'
lines. It reads fully without JavaScript (a refresh link; a reload is a
GET); the one script (`static/page.js`) then updates it every period from
`/v1/tables/<name>` and `/v1/live/<group>` (`grstats.api.live`). Each
figure carries its table, column and format as data attributes, so the
script needs no list of its own.

Invariants: every text is escaped here (`html.escape`, attributes quoted)
after `core.visible` made control characters visible: a member named
`<script>` is text. No inline script or style (the API's
Content-Security-Policy forbids both): the look is `static/page.css`'s
classes, the colours of states and verdicts always beside their words.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from grstats.core.pageview import (
    NULL_TEXT,
    PAGE_COLUMNS,
    RECENT,
    MemberRow,
    PageColumn,
    error_tables,
    field_text,
    page_tables,
)
from grstats.core.recent import MemberSeries
from grstats.core.snapshot import DaemonSnapshot
from grstats.core.sparkline import HEIGHT, VIEWBOX, WIDTH, Spark, sparks_of
from grstats.core.visible import visible

__all__ = ["NOTHING_DRAWN", "Drawn", "GroupPage", "draw", "render_group", "render_index"]
__all__ += ["render_missing"]

# the figures of `core.recent` (rates), in page order
RATES: Final = tuple(f for c in PAGE_COLUMNS for f in c.fields if f.table == RECENT)


@dataclass(frozen=True, slots=True)
class Drawn:
    """What one member's recent series show: its rates as text, its sparklines."""

    figures: Mapping[str, str]  # rate column -> its text
    sparks: Mapping[str, Spark]  # sparkline name -> it


def draw(series: MemberSeries | None, now_s: float, window_s: float) -> Drawn:
    """The rates and sparklines of one member's series (`core.recent`), right edge `now_s`."""
    row = {} if series is None else {f.column: series.last(f.column) for f in RATES}
    figures = {f.column: field_text(f, row)[0] for f in RATES}
    return Drawn(figures, sparks_of(series, now_s, window_s))


NOTHING_DRAWN: Final = draw(None, 0.0, 1.0)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _head(title: str, static: Mapping[str, str]) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)}</title>"
        f'<link rel="icon" href="{_e(static["icon"])}">'
        f'<link rel="stylesheet" href="{_e(static["css"])}">'
        f'<script src="{_e(static["js"])}" defer></script>'
        "</head>"
    )


def _time(taken_at_us: int) -> str:
    at = dt.datetime.fromtimestamp(taken_at_us / 1e6, dt.UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def _health(snapshot: DaemonSnapshot) -> str:
    if snapshot.health.ok:
        return '<p class="health ok" id="health">this daemon: ok</p>'
    details = "; ".join(_e(visible(d)) for d in snapshot.health.details())
    return f'<p class="health bad" id="health">this daemon: degraded: {details}</p>'


def _findings(findings: Sequence[str]) -> str:
    items = "".join(f"<li>{_e(visible(line))}</li>" for line in findings)
    quiet = " hidden" if findings else ""
    return (
        '<section class="findings"><h2>Findings</h2>'
        f'<ul id="findings">{items}</ul>'
        f'<p id="no-findings"{quiet}>Nothing to report: no verdict names a problem.</p>'
        "</section>"
    )


def _figure(column: PageColumn, member: MemberRow | None, drawn: Drawn) -> str:
    out = []
    for field in column.fields:
        row = None if member is None else member.rows.get(field.table)
        if field.table == RECENT:
            text, tone = drawn.figures.get(field.column, NULL_TEXT), ""
        elif member is None:
            text, tone = NULL_TEXT, ""
        else:
            text, tone = field_text(field, row)
        label = f'<span class="k">{_e(field.label)}</span> ' if field.label else ""
        out.append(
            f'<span class="f">{label}<span class="v {tone}" data-t="{_e(field.table)}" '
            f'data-c="{_e(field.column)}" data-f="{field.fmt}">{_e(text)}</span></span>'
        )
    return "".join(out)


def _spark(name: str, drawn: Spark) -> str:
    paths = "".join(f'<path class="s{i}" d="{_e(d)}"></path>' for i, d in enumerate(drawn.paths))
    return (
        f'<span class="spark" data-spark="{_e(name)}">'
        f'<svg viewBox="{VIEWBOX}" width="{WIDTH}" height="{HEIGHT}" '
        f'preserveAspectRatio="none" aria-hidden="true">{paths}</svg>'
        f'<span class="top">{_e(drawn.top)}</span></span>'
    )


def _errors(member: MemberRow | None) -> str:
    errors = () if member is None else member.errors
    items = "".join(f"<li>{_e(e)}</li>" for e in errors)
    hidden = " hidden" if errors else ""
    return f'<ul class="errors">{items}</ul><span class="noerr"{hidden}>none</span>'


def _row(member: MemberRow | None, drawn: Drawn, with_errors: bool) -> str:
    if member is None:
        head = '<tr data-member="">'
        who = (
            '<th scope="row"><span class="label"></span>'
            '<span class="local" hidden>this daemon</span></th>'
        )
    else:
        head = f'<tr data-member="{_e(member.member_id)}">'
        local = "" if member.local else " hidden"
        who = (
            f'<th scope="row"><span class="label" title="{_e(member.member_id)}">'
            f'{_e(member.label)}</span><span class="local"{local}>this daemon</span></th>'
        )
    cells = [head, who]
    for column in PAGE_COLUMNS:
        spark = _spark(column.spark, drawn.sparks[column.spark]) if column.spark else ""
        cells.append(
            f'<td class="{column.key}" data-label="{_e(column.header)}">'
            f"{_figure(column, member, drawn)}{spark}</td>"
        )
    if with_errors:
        cells.append(f'<td class="errs" data-label="Channel errors">{_errors(member)}</td>')
    cells.append("</tr>")
    return "".join(cells)


@dataclass(frozen=True, slots=True)
class GroupPage:
    """What one group's page is made of (see `render_group`).

    Attributes:
        snapshot: the snapshot shown.
        group: the group's name.
        members: `core.pageview.group_rows` of it.
        drawn: member id -> its rates and sparklines (`draw`).
        findings: one line per finding, in order.
        period_s: the daemon's period (the script refreshes at this pace).
        step_s, window_s: the sparklines' step and span (`core.recent`).
        here: the member this daemon speaks for, as host:port ("" for a collector).
        static: "css" / "js" -> the URL of each static file.
    """

    snapshot: DaemonSnapshot
    group: str
    members: Sequence[MemberRow]
    drawn: Mapping[str, Drawn]
    findings: Sequence[str]
    period_s: float
    step_s: float
    window_s: float
    here: str
    static: Mapping[str, str]


def render_group(page: GroupPage, *, live_path: str, back: str = "") -> bytes:
    """The group's page as UTF-8 HTML.

    Args:
        page: what it shows.
        live_path: the URL of the group's `/v1/live/<group>` JSON.
        back: the URL of the collector's index ("" on a member daemon).
    """
    snapshot = page.snapshot
    with_errors = bool(error_tables())
    headers = "".join(f'<th scope="col">{_e(c.header)}</th>' for c in PAGE_COLUMNS)
    if with_errors:
        headers += '<th scope="col">Channel errors</th>'
    rows = "".join(
        _row(m, page.drawn.get(m.member_id, NOTHING_DRAWN), with_errors) for m in page.members
    )
    template = _row(None, NOTHING_DRAWN, with_errors)
    seen_from = f" seen from {_e(page.here)}" if page.here else " seen by this collector"
    up = f'<a href="{_e(back)}">all groups</a> \u00b7 ' if back else ""
    body = (
        f'<body data-group="{_e(page.group)}" data-period="{page.period_s:g}" '
        f'data-tables="{_e(" ".join(page_tables()))}" '
        f'data-errors="{_e(" ".join(error_tables()))}" data-live="{_e(live_path)}">'
        f"<header><h1>Group <code>{_e(page.group)}</code></h1>"
        f'<p class="meta">{up}{len(page.members)} members,{seen_from} \u00b7 as of '
        f'<time id="asof">{_time(snapshot.taken_at_us)}</time> \u00b7 '
        '<a href="" id="refresh">refresh</a> <span id="live"></span></p>'
        f"{_health(snapshot)}</header>"
        f"{_findings(page.findings)}"
        '<main><table id="members"><thead><tr><th scope="col">Member</th>'
        f"{headers}</tr></thead><tbody>{rows}</tbody></table>"
        f'<template id="member-row">{template}</template></main>'
        "<footer><p>"
        f"{NULL_TEXT} not known (NULL). {_recent_note(page)}"
        'JSON: <a href="/v1/tables">/v1/tables</a> \u00b7 '
        '<a href="/healthz">/healthz</a> \u00b7 <a href="/metrics">/metrics</a></p></footer>'
        "</body></html>\n"
    )
    title = f"grstats \u00b7 {page.here or 'collector'} \u00b7 group {page.group}"
    return (_head(title, page.static) + body).encode("utf-8", "replace")


def _recent_note(page: GroupPage) -> str:
    if not page.window_s:
        return ""
    return (
        f"Per second: the increase between the last two points, {page.step_s:g} s apart. "
        f"Sparklines: the last {page.window_s / 60:g} minutes, a point every {page.step_s:g} s "
        "(queues: certifier grey, applier blue). "
    )


def render_index(
    snapshot: DaemonSnapshot, groups: Mapping[str, int], static: Mapping[str, str]
) -> bytes:
    """A collector's `/`: its groups, each linking to its page.

    Args:
        snapshot: the collector's snapshot.
        groups: group name -> members (`core.pageview.groups`).
        static: "css" / "js" -> the URL of each static file.
    """
    items = "".join(
        f'<li><a href="/group/{_e(name)}"><code>{_e(name)}</code></a> '
        f"{count} member{'s' if count != 1 else ''}</li>"
        for name, count in groups.items()
    )
    body = (
        "<body><header><h1>grstats collector</h1>"
        f'<p class="meta">{len(groups)} groups \u00b7 as of '
        f"<time>{_time(snapshot.taken_at_us)}</time> \u00b7 "
        '<a href="">refresh</a></p>'
        f"{_health(snapshot)}</header>"
        f'<main><ul class="groups">{items}</ul></main></body></html>\n'
    )
    return (_head("grstats \u00b7 collector", static) + body).encode("utf-8", "replace")


def render_missing(group: str, static: Mapping[str, str]) -> bytes:
    """The page of a group the daemon does not know (answered 404)."""
    body = (
        f"<body><header><h1>No group <code>{_e(group)}</code> here</h1>"
        '<p class="meta"><a href="/">all groups</a></p></header></body></html>\n'
    )
    return (_head("grstats \u00b7 unknown group", static) + body).encode("utf-8", "replace")
