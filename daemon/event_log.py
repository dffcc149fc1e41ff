"""The daemon's log of committed events: what a person watching ``make run`` or journald reads."""

from __future__ import annotations

from typing import Any

import structlog

log = structlog.get_logger("tabled")

#: the routine events left out of the log with ``[log] events = "results"``
ROUTINE = frozenset(
    {
        "card.dealt",
        "card.held",
        "betting.opened",
        "betting.closed",
        "operator.command",
        "device.reply",
        "wheel.state",
        "wheel.flags",
        "dice.shaking",
    }
)


def event_logger(which: str) -> Any:
    """The listener that logs committed events, as ``[log] events`` asks."""
    if which == "none":
        return lambda events: None
    if which == "results":
        return lambda events: log_events([e for e in events if e.type not in ROUTINE])
    return log_events


def log_events(events: Any) -> None:
    """One log line per committed event: what a person watching ``make run`` follows."""
    for ev in events:
        d = ev.data
        if ev.type == "hand.result" and "dragon" in d:
            log.info(
                f"hand {d['hand']}: {d['winner'].upper()}",
                seq=ev.seq,
                shoe=d["shoe"],
                dragon=d["dragon"],
                tiger=d["tiger"],
            )
        elif ev.type == "hand.result":
            log.info(
                f"hand {d['hand']}: {d['winner'].upper()}",
                seq=ev.seq,
                shoe=d["shoe"],
                player=" ".join(d["player"]) + f" ({d['player_total']})",
                banker=" ".join(d["banker"]) + f" ({d['banker_total']})",
            )
        elif ev.type == "card.dealt":
            log.info(f"card {d['card']} → {d['box']}", seq=ev.seq, hand=d["hand"])
        elif ev.type == "alarm.raised":
            log.warning(ev.type, seq=ev.seq, **{k: v for k, v in d.items() if v is not None})
        elif ev.type == "operator.command" and d.get("source") == "timer":
            log.debug(ev.type, seq=ev.seq, name=d["name"])  # the croupier's clockwork
        else:
            log.info(ev.type, seq=ev.seq, **{k: v for k, v in d.items() if k not in ("rule",)})
