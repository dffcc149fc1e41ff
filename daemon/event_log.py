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
    """One log line per committed event: what a person watching ``make run`` follows."""
    with logs.batch():  # a commit's lines in one write
        _log_each(events, describe)


def _log_each(events: Any, describe: Describer) -> None:
    for ev in events:
        d = ev.data
        line = describe.log(ev.type, d)
        if line is not None:
            message, fields = line
            log.info(message, seq=ev.seq, **fields)
        elif ev.type == "alarm.raised":
            log.warning(ev.type, seq=ev.seq, **{k: v for k, v in d.items() if v is not None})
        elif ev.type == "operator.command" and d.get("source") == "timer":
            log.debug(ev.type, seq=ev.seq, name=d["name"])  # the croupier's clockwork
        else:
            log.info(ev.type, seq=ev.seq, **{k: v for k, v in d.items() if k not in ("rule",)})
