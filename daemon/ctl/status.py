"""``tablectl status`` and ``tablectl devices``: the running table as its daemon reports it."""

from __future__ import annotations

import argparse
from typing import Any

from daemon.ctl.shared import EXIT_ATTENTION, EXIT_OK, call, print_json


def cmd_status(a: argparse.Namespace) -> int:
    rc, st = call(a, "status")
    if rc:
        return rc
    attention = (
        bool(st["alarms"])
        or not st["journal_ok"]
        or any(d["health"] != "ok" for d in st["devices"])
    )
    recent = recent_warnings(st["journal"], st["last_seq"])
    if a.json:
        print_json({**st, "recent_warnings": recent})
        return EXIT_ATTENTION if attention else EXIT_OK
    g = st.get("state", {})
    print(f"table {st['table']} ({st['game']})  tabled {st['version']}  up {st['uptime']:.0f} s")
    fields, labels = _where(st["game"])
    where = ", ".join(
        f"{labels.get(k, k.replace('_', ' '))} {g[k]}"
        + (f" ({g[k + '_name']})" if g.get(k + "_name") else "")  # wheel state 4 (no more bets)
        for k in fields
        if g.get(k) is not None
    )
    print(
        f"  game:    {g.get('text') or g.get('phase') or '-'}" + (f"  ({where})" if where else "")
    )
    if (g.get("expects") or {}).get("text"):  # a table that says what it waits for
        print(f"  next:    {g['expects']['text']}")
    _session(st.get("session"))
    print(
        f"  journal: seq {st['last_seq']}  {'ok' if st['journal_ok'] else 'FAILING: ' + str(st['journal_error'])}"
        f"  {st['journal']}"
    )
    print(f"  bus:     publish {st['publish']}  replay {st['replay']}")
    _devices_table(st["devices"])
    if st["alarms"]:
        print("  alarms:")
        for al in st["alarms"]:
            print(f"    {al['id']} [{al['severity']}] {al['message']}")
            print(f"        rule: {al['rule']}")
            print(f"        next: {al['action']}")
    else:
        print("  alarms:  none")
    if isinstance(recent, str):
        print(f"  recent:  {recent}")
    elif recent:
        print("  recent warnings:")  # as `systemctl status` ends with the last log lines
        for w in recent:
            print(f"    {w['time'][:19].replace('T', ' ')}  seq {w['seq']:<7} {w['text']}")
    else:
        print("  recent warnings: none")
    return EXIT_ATTENTION if attention else EXIT_OK


#: how far back (events) ``status`` looks for warnings: a primary-key range, never a scan
RECENT_SPAN = 5000
#: the events that are warnings to a technician (``journalctl -p warning`` has their lines)
WARNINGS = ("alarm.raised", "alarm.repeated", "device.stale", "device.disconnected")


def recent_warnings(journal: str, last_seq: int, n: int = 5) -> list[dict[str, Any]] | str:
    """The last ``n`` warnings of the journal's last :data:`RECENT_SPAN` events: alarms,
    devices lost, voids, an unclean start; a sentence instead when the journal cannot be
    read here (it is the daemon's user's: a role socket's user reads the socket only)."""
    import json
    import sqlite3

    from daemon.tools.describe import summary

    try:
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT seq, type, body FROM events WHERE seq > ? ORDER BY seq DESC",
                (last_seq - RECENT_SPAN,),
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error as e:
        return f"the journal {journal} cannot be read here ({e}): `journalctl -p warning`"
    out: list[dict[str, Any]] = []
    for seq, type_, body in rows:
        if not (type_ in WARNINGS or type_.endswith(".void") or type_ == "daemon.started"):
            continue
        ev = json.loads(body)
        if type_ == "daemon.started" and ev["data"].get("clean", True):
            continue
        text = f"{type_} {summary(type_, ev['data'])}"
        out.append({"seq": seq, "time": ev["time"], "type": type_, "text": text[:100]})
        if len(out) == n:
            break
    return out[::-1]


def _where(game: str) -> tuple[tuple[str, ...], Any]:
    """The fields of the game's summary that say where it is and their labels, as its
    describer names them."""
    from daemon import games

    cls = games.find(game)
    if cls is None:  # a daemon of a game this PC has not installed: its phase only
        return (), {}
    return cls.describe.where or cls.describe.key, cls.describe.labels


def _devices_table(devs: list[dict[str, Any]]) -> None:
    print(
        f"  {'device':<10} {'driver':<13} {'health':<13} {'frames':>7} {'malformed':>9} "
        f"{'unknown':>7} {'reconn':>6} {'last frame':>10}  port"
    )
    for d in devs:
        age = d.get("last_frame_age")
        age_text = "-" if age is None else f"{age:.1f} s"
        print(
            f"  {d['name']:<10} {d['driver']:<13} {d['health']:<13} {d['frames']:>7} "
            f"{d['malformed']:>9} {d['unknown']:>7} {d['reconnects']:>6} {age_text:>10}  "
            f"{d.get('port') or '-'}"
        )
        if d["health"] != "ok":
            print(f"  {'':<10} {d['reason']}")


def cmd_devices(a: argparse.Namespace) -> int:
    rc, res = call(a, "devices")
    if rc:
        return rc
    bad = any(d["health"] != "ok" for d in res["devices"])
    if a.json:
        print_json(res)
    else:
        _devices_table(res["devices"])
    return EXIT_ATTENTION if bad else EXIT_OK


def _session(s: dict[str, Any] | None) -> None:
    """The dealer on duty, whether the table is open, its limits (``daemon/table/sessions.py``)."""
    if not s:  # an older daemon
        return
    dealer = s["dealer"] or "none signed in"
    if s["dealer"]:
        dealer += f" ({s['dealer_rounds']} rounds)"
    lim = s.get("limits") or {}
    limits = (
        "none set"
        if not lim
        else f"{lim.get('min', '-')}–{lim.get('max', '-')}"
        + "".join(f", {k} {v[0]}–{v[1]}" for k, v in sorted((lim.get("spots") or {}).items()))
    )
    print(f"  dealer:  {dealer}  table {s['table']}  limits {limits}")
