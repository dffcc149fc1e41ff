"""One readable line per event: what a person at a terminal (or reading a pipe) follows.

``tablectl replay`` on a terminal and ``tablectl monitor`` without one print these;
``--json`` (and a pipe, for replay) gives the events themselves. What a game's own
events say (a hand, a spin) is its describer's :meth:`~daemon.games.describe.Describer.line`;
the rest is the event's fields.
"""

from __future__ import annotations

from typing import Any

from daemon.games.describe import Describer

#: data fields that are for machines (hashes, rule texts) and make a line unreadable
SKIP = frozenset({"rule", "action"})
#: a game that says nothing of its own: every event as its fields
PLAIN = Describer()


def describe(ev: Any, game: Describer = PLAIN) -> str:
    """``seq time type  summary`` for an event (an ``Event`` or its dict)."""
    get = ev.get if isinstance(ev, dict) else lambda k, d=None: getattr(ev, k, d)
    d: dict[str, Any] = get("data") or {}
    t = str(get("type"))
    when = str(get("time") or "")[11:23]
    return f"{get('seq', '-'):>6} {when:<12} {t:<20} {summary(t, d, game)}".rstrip()


def summary(t: str, d: dict[str, Any], game: Describer = PLAIN) -> str:
    line = game.line(t, d)
    if line is not None:
        return line
    if t == "alarm.raised":
        return f"{d.get('id')} {d.get('kind')}: {d.get('message')}"
    return "  ".join(
        f"{k}={_short(v)}" for k, v in sorted(d.items()) if k not in SKIP and v is not None
    )


def _short(v: Any) -> str:
    text = " ".join(map(str, v)) if isinstance(v, list) else str(v)
    return text if len(text) <= 60 else text[:57] + "…"
