"""The pit view's pages, rendered on the server as plain HTML (every value escaped).

The floor reloads itself every two seconds and the alarm list every second (a meta refresh:
no script), so an alarm raised at a table is on the list within 2 s (the bridge's and the
pit's own delay are tens of milliseconds); the acknowledgement form is its own page, so a
reload never eats a note.
"""

from __future__ import annotations

from html import escape
from typing import Any

from views.display.state import DisplayState

CSS = """
body { margin: 0; background: #0f1720; color: #e8edf2; font: 18px "DejaVu Sans", Arial, sans-serif; }
header { display: flex; gap: 24px; align-items: baseline; padding: 10px 20px; background: #060b10; }
header a { color: #9cc4ff; } header .who { margin-left: auto; color: #9fb0c0; }
main { padding: 16px 20px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 12px; }
.tile { display: block; max-width: 420px; background: #1b2733; border-radius: 8px; padding: 10px 14px; border-left: 8px solid #3a4a5a; color: inherit; text-decoration: none; }
.tile[data-status="betting"] { border-color: #1ea35a; } .tile[data-status="paused"] { border-color: #e8b923; }
.tile[data-alarms]:not([data-alarms="0"]) { border-color: #e03a3a; }
.tile h2 { margin: 0; font-size: 24px; } .dim { color: #9fb0c0; }
table.list { border-collapse: collapse; width: 100%; } .list td, .list th { padding: 6px 10px; border-bottom: 1px solid #2a3845; text-align: left; }
.sev-supervisor { color: #ff8080; } .sev-warning { color: #e8b923; }
.error { background: #7a1c1c; padding: 10px 14px; border-radius: 6px; }
form.ack textarea { width: 40em; height: 5em; } button { font-size: 18px; padding: 6px 16px; }
"""


def page(title: str, body: str, user: Any, csrf: str, *, refresh: float = 0) -> str:
    who = ""
    if user is not None:
        who = (
            f'<span class="who" id="who" data-role="{escape(user.role)}">{escape(user.name)} '
            f"({escape(user.role)})</span>"
            f'<form method="post" action="/logout"><input type="hidden" name="csrf" '
            f'value="{escape(csrf)}"><button>log out</button></form>'
        )
    meta = f'<meta http-equiv="refresh" content="{refresh:g}">' if refresh else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
        f"<title>{escape(title)} · tabled pit</title><style>{CSS}</style></head><body>"
        f'<header><b>tabled pit</b><a href="/">floor</a><a href="/alarms">alarms</a>'
        f'<a href="/pace">pace</a>{who}</header>'
        f"<main><h1>{escape(title)}</h1>{body}</main></body></html>"
    )


def last_result(s: DisplayState) -> str:
    if not s.results:
        return ""
    r = s.results[0]
    if "pocket" in r:
        return f"{r['pocket']} {r['color']}"
    if "faces" in r:
        return f"{'-'.join(map(str, r['faces']))} = {r['total']}"
    if "winner" in r:
        return str(r["winner"])
    if "winners" in r:
        return "winners: " + (", ".join(r["winners"]) or "none")
    if "dealer" in r:
        return f"dealer {r['dealer'].get('total')}"
    return ""


def tile(s: DisplayState, last_time: str) -> str:
    snap = s.snapshot()
    where = " · ".join(
        x
        for x in (
            f"shoe {snap['shoe']}" if snap["shoe"] is not None else "",
            f"#{snap['hand']}" if snap["hand"] is not None else "",
        )
        if x
    )
    return (
        f'<a class="tile" href="/table/{escape(s.table)}" data-table="{escape(s.table)}" '
        f'data-status="{escape(snap["status"])}" data-alarms="{len(s.alarms)}">'
        f"<h2>{escape(s.table)}</h2><div class='dim'>{escape(snap['game'] or '?')} {escape(where)}</div>"
        f"<div>{escape(snap['status_text'])}</div>"
        f"<div>last: {escape(last_result(s))}</div>"
        f"<div class='dim'>alarms: {len(s.alarms)} · last event {escape(last_time)}</div></a>"
    )


def alarm_rows(alarms: list[dict[str, Any]], acks: Any, can_ack: bool) -> str:
    rows = []
    for a in alarms:
        ack = acks.get(a["table"], a["journal_id"], a["id"])
        if ack is not None:
            state = (
                f'<span class="acked">acknowledged by {escape(ack["by"])} at '
                f"{escape(ack['at'])}: {escape(ack['note'])}</span>"
            )
        elif can_ack:
            state = (
                f'<a class="ack" href="/alarms/ack?table={escape(a["table"])}&amp;alarm='
                f'{escape(a["id"])}">acknowledge</a>'
            )
        else:
            state = "not acknowledged"
        rows.append(
            f'<tr data-table="{escape(a["table"])}" data-alarm="{escape(a["id"])}">'
            f"<td>{escape(a['table'])}</td><td>{escape(a['id'])}</td>"
            f'<td class="sev-{escape(a.get("severity", ""))}">{escape(a.get("kind", ""))}</td>'
            f"<td>{escape(a.get('message', ''))}</td><td>{escape(a['at'])}</td><td>{state}</td></tr>"
        )
    head = "<tr><th>table</th><th>alarm</th><th>kind</th><th>what</th><th>raised</th><th></th></tr>"
    if not rows:
        return '<p id="no-alarms">No active alarms.</p>'
    return f'<table class="list" id="alarms">{head}{"".join(rows)}</table>'


def ack_form(a: dict[str, Any], csrf: str, error: str = "") -> str:
    err = f'<p class="error" id="error">{escape(error)}</p>' if error else ""
    return (
        f"{err}<p>{escape(a['table'])} {escape(a['id'])}: {escape(a.get('message', ''))}</p>"
        '<form class="ack" method="post" action="/alarms/ack">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        f'<input type="hidden" name="table" value="{escape(a["table"])}">'
        f'<input type="hidden" name="alarm" value="{escape(a["id"])}">'
        f'<input type="hidden" name="journal_id" value="{escape(a["journal_id"] or "")}">'
        '<p><label>note<br><textarea name="note" maxlength="500" required></textarea></label></p>'
        "<button id='acknowledge'>acknowledge</button></form>"
    )


def login_form(csrf: str, error: str = "") -> str:
    err = f'<p class="error" id="error">{escape(error)}</p>' if error else ""
    return (
        f'{err}<form method="post" action="/login">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<p><label>name <input name="name" autocomplete="username" required></label></p>'
        '<p><label>password <input name="password" type="password" '
        'autocomplete="current-password" required></label></p>'
        "<button id='login'>log in</button></form>"
    )


def pace_table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """Rounds per hour by table, and every table's rounds by UTC hour of day."""
    hours = sorted({h for _, p in rows for h in p["by_hour"]})
    head = "<tr><th>table</th><th>rounds</th><th>per hour</th>" + "".join(
        f"<th>{escape(h)}h</th>" for h in hours
    )
    body = "".join(
        f'<tr data-table="{escape(t)}"><td>{escape(t)}</td><td class="rounds">{p["rounds"]}</td>'
        f'<td class="per-hour">{"" if p["per_hour"] is None else p["per_hour"]}</td>'
        + "".join(f"<td>{p['by_hour'].get(h, 0)}</td>" for h in hours)
        + "</tr>"
        for t, p in rows
    )
    return (
        f'<table class="list" id="pace">{head}</tr>{body}</table>'
        '<p class="dim">By dealer: no event names the dealer on duty yet (docs/views.md).</p>'
    )


def wheel_page(table: str, st: dict[str, Any]) -> str:
    """A wheel's statistics (views/pit/wheel.py) as tables; ``data-`` values for machines."""

    def part(name: str, p: dict[str, Any]) -> str:
        x2 = "" if p["chi_square"] is None else f"{p['chi_square']:.4f}"
        verdict = {None: "", True: "uniform at 5 %", False: "NOT uniform at 5 %"}[p["uniform_at_5"]]
        cells = "".join(
            f'<td data-pocket="{i}">{"00" if i == 37 else i}<br>{c}</td>'
            for i, c in enumerate(p["counts"])
        )
        return (
            f'<section class="part" data-part="{escape(name)}"><h2>{escape(name)}: '
            f'{p["spins"]} spins</h2><p>chi-square <b class="chi2">{x2}</b> '
            f"({p['df']} degrees of freedom; 5 % critical value {p['critical_5']}): "
            f"{verdict} · hot {', '.join(map(str, p['hot']))} · cold "
            f"{', '.join(map(str, p['cold']))}</p>"
            f'<table class="list counts"><tr>{cells}</tr></table></section>'
        )

    out = [
        f'<form method="get"><label>window (spins) <input name="window" value="{st["window"]}">'
        "</label> <button>show</button></form>",
        part("all", st["all"]),
    ]
    out += [part(d, p) for d, p in st["by_direction"].items()]
    if "sectors" in st:
        rows = "".join(
            f'<tr data-sector="{escape(n)}"><td>{escape(n)}</td><td>{v["count"]}</td>'
            f"<td>{v['expected']}</td></tr>"
            for n, v in st["sectors"].items()
        )
        out.append(
            '<h2>Sectors</h2><table class="list" id="sectors"><tr><th>sector</th>'
            f"<th>spins</th><th>expected</th></tr>{rows}</table>"
        )
    return "".join(out)


def device_rows(devices: dict[str, tuple[str, str, str]]) -> str:
    rows = "".join(
        f'<tr data-device="{escape(n)}"><td>{escape(n)}</td><td class="health">{escape(h)}</td>'
        f"<td>{escape(at)}</td><td>{escape(why)}</td></tr>"
        for n, (h, at, why) in sorted(devices.items())
    )
    return f'<h2>Devices</h2><table class="list" id="devices">{rows}</table>'


def recent_rows(recent: list[tuple[int, str, str]]) -> str:
    rows = "".join(
        f"<tr><td>{seq}</td><td>{escape(at)}</td><td>{escape(t)}</td></tr>" for seq, at, t in recent
    )
    return f'<h2>Recent events</h2><table class="list" id="recent">{rows}</table>'
