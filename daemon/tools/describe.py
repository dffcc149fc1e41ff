"""One readable line per event: what a person at a terminal (or reading a pipe) follows.

``tablectl replay`` on a terminal and ``tablectl monitor`` without one print these;
``--json`` (and a pipe, for replay) gives the events themselves.
"""

from __future__ import annotations

from typing import Any

#: data fields that are for machines (hashes, rule texts) and make a line unreadable
SKIP = frozenset({"rule", "action"})


def describe(ev: Any) -> str:
    """``seq time type  summary`` for an event (an ``Event`` or its dict)."""
    get = ev.get if isinstance(ev, dict) else lambda k, d=None: getattr(ev, k, d)
    d: dict[str, Any] = get("data") or {}
    t = str(get("type"))
    when = str(get("time") or "")[11:23]
    return f"{get('seq', '-'):>6} {when:<12} {t:<20} {summary(t, d)}".rstrip()


def summary(t: str, d: dict[str, Any]) -> str:
    if t == "card.dealt":
        return f"{d.get('card')} → {d.get('box')}  (hand {d.get('hand')})"
    if t == "hand.result" and "player" in d:
        return (
            f"hand {d.get('hand')}: {str(d.get('winner')).upper()}  player "
            f"{' '.join(d['player'])} ({d.get('player_total')})  banker "
            f"{' '.join(d.get('banker', []))} ({d.get('banker_total')})"
        )
    if t == "hand.result" and "dragon" in d:
        return f"hand {d.get('hand')}: {str(d.get('winner')).upper()}  dragon {d['dragon']}  tiger {d.get('tiger')}"
    if t == "spin.result":
        return f"spin {d.get('spin')}: {d.get('number')} {d.get('color', '')}".rstrip()
    if t == "alarm.raised":
        return f"{d.get('id')} {d.get('kind')}: {d.get('message')}"
    return "  ".join(
        f"{k}={_short(v)}" for k, v in sorted(d.items()) if k not in SKIP and v is not None
    )


def _short(v: Any) -> str:
    text = " ".join(map(str, v)) if isinstance(v, list) else str(v)
    return text if len(text) <= 60 else text[:57] + "…"
