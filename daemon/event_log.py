"""The daemon's log of committed events: what a person watching ``make run`` or journald reads.

The game's :class:`~daemon.games.describe.Describer` words its own events (a hand, a spin,
a throw); everything else is logged plainly by type.
"""

from __future__ import annotations

from typing import Any

import structlog

from daemon import logs
from daemon.games.describe import Describer

log = structlog.get_logger("tabled")


def event_logger(which: str, describe: Describer) -> Any:
    """The listener that logs committed events, as ``[log] events`` asks."""
    if which == "none":
        return lambda events: None
    if which == "results":
        routine = describe.routine
        return lambda events: log_events([e for e in events if e.type not in routine], describe)
    return lambda events: log_events(events, describe)


def log_events(events: Any, describe: Describer) -> None:
    """One log line per committed event: what a person watching ``make run`` follows.

    A commit's lines are logged together (``daemon/logs.py`` :func:`~daemon.logs.lines`:
    rendered at once, one write).
    """
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for ev in events:
        d = ev.data
        line = describe.log(ev.type, d)
        if line is not None:
            message, fields = line
            rows.append(("info", message, {"seq": ev.seq, **fields}))
        elif ev.type == "alarm.raised":
            fields = {k: v for k, v in d.items() if v is not None}
            rows.append(("warning", ev.type, {"seq": ev.seq, **fields}))
        elif ev.type == "result.corrected":  # the game's words for the corrected result
            message = f"seq {d['supersedes']} corrected: " + describe.recall(
                d["result_type"], d["result"]
            )
            fields = {k: d[k] for k in ("by", "reason", "ref")}
            rows.append(("warning", message, {"seq": ev.seq, **fields}))
        elif ev.type == "operator.command" and d.get("source") == "timer":
            rows.append(("debug", ev.type, {"seq": ev.seq, "name": d["name"]}))  # clockwork
        else:
            fields = {k: v for k, v in d.items() if k not in ("rule",)}
            rows.append(("info", ev.type, {"seq": ev.seq, **fields}))
    logs.lines(rows, log)
