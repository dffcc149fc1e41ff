"""The daemon's log of committed events: what a person watching ``make run`` or journald reads.

The game's :class:`~daemon.games.describe.Describer` words its own events (a hand, a spin,
a throw); everything else is logged plainly by type.
"""

from __future__ import annotations

from typing import Any

import structlog

from daemon.games.describe import Describer
from daemon.runtime import logs

log = structlog.get_logger("tabled")

#: data fields a log line leaves out: the rule's prose (docs/rules.md has it) and the
#: scoreboard's roads, rebuilt from the results (kilobytes a hand, in the events)
_LEFT_OUT = frozenset({"rule", "roads"})


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

    A commit's lines are logged together (``daemon/runtime/logs.py`` :func:`~daemon.runtime.logs.lines`:
    rendered at once, one write).

    Every line carries the event's ``type`` and ``seq`` and its data's fields as fields,
    so a log pipeline (journald, Loki, ``jq .card``) reads them without parsing the
    message; a game's own line adds its readable extras under names the data does not
    use (baccarat's ``player`` stays the list of cards, issue 33).
    """
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for ev in events:
        d = ev.data
        head = {"seq": ev.seq, "type": ev.type}
        line = describe.log(ev.type, d)
        if line is not None:
            message, extra = line
            fields = {k: v for k, v in d.items() if k not in _LEFT_OUT}
            fields.update((k, v) for k, v in extra.items() if k not in d)
            rows.append(("info", message, {**head, **fields}))
        elif ev.type == "alarm.raised":
            fields = {k: v for k, v in d.items() if v is not None}
            rows.append(("warning", ev.type, {**head, **fields}))
        elif ev.type == "result.corrected":  # the game's words for the corrected result
            message = f"seq {d['supersedes']} corrected: " + describe.recall(
                d["result_type"], d["result"]
            )
            fields = {k: d[k] for k in ("by", "reason", "ref")}
            rows.append(("warning", message, {**head, **fields}))
        elif ev.type == "operator.command" and d.get("source") == "timer":
            rows.append(("debug", ev.type, {**head, "name": d["name"]}))  # clockwork
        else:
            fields = {k: v for k, v in d.items() if k not in _LEFT_OUT}
            # a start after a crash or a kill is worth `journalctl -p warning` (issue 33)
            unclean = ev.type == "daemon.started" and d.get("clean") is False
            rows.append(("warning" if unclean else "info", ev.type, {**head, **fields}))
    logs.lines(rows, log)
