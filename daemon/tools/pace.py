"""``tablectl pace``: rounds per hour by dealer and by hour, from the journal alone.

A round is one of the game's results (its describer's ``results``); a result names its
dealer in ``dealer_on_duty`` (``daemon/table/sessions.py``). A dealer's time on duty runs from
``dealer.signed_in`` to ``dealer.signed_out`` (a relief or the table closing journals one
too), or to the journal's last event while still on duty; a stop of the daemon in
between counts as time on duty (the dealer was not signed out). The hours are UTC clock
hours of the events' ``time``. Pure :func:`pace` over event dicts; :func:`cmd_pace` reads
the journal file, so it works with the daemon stopped.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from datetime import datetime
from typing import Any

SESSION = ("dealer.signed_in", "dealer.signed_out")


def _t(ev: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(ev["time"].replace("Z", "+00:00"))


def pace(events: Iterable[dict[str, Any]], results: Iterable[str]) -> dict[str, Any]:
    """``{"rounds", "first", "last", "dealers": [...], "hours": [...]}`` of these events."""
    ends = frozenset(results)
    dealers: dict[str, dict[str, Any]] = {}
    hours: dict[str, dict[str, Any]] = {}
    on: dict[str, datetime] = {}  # dealer → since
    first = last = None
    rounds = 0
    for ev in events:
        when = _t(ev)
        first = first or ev["time"]
        last = ev["time"]
        d = ev["data"]
        if ev["type"] == "dealer.signed_in":
            on[d["dealer"]] = when
            row = dealers.setdefault(
                d["dealer"], {"dealer": d["dealer"], "shifts": 0, "seconds": 0.0, "rounds": 0}
            )
            row["shifts"] += 1
        elif ev["type"] == "dealer.signed_out" and d["dealer"] in on:
            dealers[d["dealer"]]["seconds"] += (when - on.pop(d["dealer"])).total_seconds()
        elif ev["type"] in ends:
            rounds += 1
            who = d.get("dealer_on_duty")
            hour = when.strftime("%Y-%m-%d %H:00")
            h = hours.setdefault(hour, {"hour": hour, "rounds": 0, "by_dealer": {}})
            h["rounds"] += 1
            if who is not None:
                h["by_dealer"][who] = h["by_dealer"].get(who, 0) + 1
                dealers.setdefault(who, {"dealer": who, "shifts": 0, "seconds": 0.0, "rounds": 0})
                dealers[who]["rounds"] += 1
    if last is not None:
        end = datetime.fromisoformat(last.replace("Z", "+00:00"))
        for who, since in on.items():  # still on duty
            dealers[who]["seconds"] += (end - since).total_seconds()
    for row in dealers.values():
        row["seconds"] = round(row["seconds"], 3)
        row["per_hour"] = (
            round(row["rounds"] * 3600 / row["seconds"], 1) if row["seconds"] else None
        )
    return {
        "rounds": rounds,
        "first": first,
        "last": last,
        "dealers": sorted(dealers.values(), key=lambda r: r["dealer"]),
        "hours": [hours[k] for k in sorted(hours)],
    }


def text(p: dict[str, Any]) -> str:
    """The report as a person reads it."""
    if not p["rounds"]:
        return "no rounds in the journal yet"
    out = [f"{p['rounds']} rounds, {p['first']} to {p['last']}", "by dealer:"]
    out.append(f"  {'dealer':<16} {'shifts':>6} {'on duty':>9} {'rounds':>7} {'per hour':>9}")
    for r in p["dealers"]:
        rate = "-" if r["per_hour"] is None else f"{r['per_hour']:.1f}"
        duty = f"{r['seconds'] / 3600:.2f} h"
        out.append(f"  {r['dealer']:<16} {r['shifts']:>6} {duty:>9} {r['rounds']:>7} {rate:>9}")
    if not p["dealers"]:
        out.append("  (no dealer signed in: tablectl dealer sign-in)")
    out.append("by hour (UTC):")
    for h in p["hours"]:
        who = ", ".join(f"{k} {v}" for k, v in sorted(h["by_dealer"].items()))
        out.append(f"  {h['hour']}  {h['rounds']:>5}  {who}")
    return "\n".join(out)


def cmd_pace(a: argparse.Namespace) -> int:
    import json

    from daemon.ctl.journal import _describer, _journal_path
    from daemon.ctl.shared import EXIT_OK, print_json
    from daemon.journal import connect

    ends = sorted(_describer(a).results)
    types = [*ends, *SESSION]
    db = connect(_journal_path(a), readonly=True)
    rows = db.execute(
        f"SELECT body FROM events WHERE type IN ({','.join('?' * len(types))}) ORDER BY seq",
        types,
    ).fetchall()
    events = [json.loads(r[0]) for r in rows]
    tail = db.execute("SELECT body FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    if tail is not None and events:
        events.append({**json.loads(tail[0]), "type": "(last)", "data": {}})
    p = pace(events, ends)
    if a.json:
        print_json(p)
    else:
        print(text(p))
    return EXIT_OK
