"""The bridge's view of each table's health: heartbeats as they arrive, true lag, and a
log line at its priority for every change of a table's state.

A heartbeat read behind the table's queued events comes late: a bridge 55,000 events
behind read each one only once everything before it was stored, and saw a lag of 0
(issue 31). So heartbeats are taken as they arrive, apart from the events' queue:
``bridge/feed.py`` reads every table's messages in groups and hands each heartbeat here at
once (:meth:`Health.on_heartbeat`), while the events wait in the table's inbox for its
task. The newest ``last_seq`` a table committed is known within a heartbeat interval
however far behind the store is; that is what ``up`` and the lag are made of.

Lag (:class:`Health`): events the table committed that JetStream has not acked (the
newest heartbeat's ``last_seq`` minus the stored seq, in the same journal), and the age
of the oldest of them: the time since the bridge first saw a heartbeat naming it.
:func:`calm` is the once-a-second judge's shortcut for a table with nothing to say.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import structlog

log = structlog.get_logger("tabled.bridge")

#: heartbeats remembered per table for the age of the oldest unstored event (one a
#: second: over an hour; past it the newest entry moves up, ages read a little older)
SEEN_MAX = 4096
#: state changes kept per table for ``tabled-bridge status``
CHANGES_MAX = 20


@dataclass(slots=True)
class Health:
    """One table's heartbeats and lag, as the heartbeat path sees them."""

    table: str
    journal_id: str | None = None
    table_seq: int | None = None
    #: monotonic time of the last heartbeat (None: never)
    heartbeat_at: float | None = None
    #: (last_seq, monotonic time first seen), last_seq increasing, this journal only
    seen: collections.deque[tuple[int, float]] = field(default_factory=collections.deque)
    #: the state last logged, and the recent changes: (unix time, level, text)
    reported: str = "starting"
    changes: collections.deque[tuple[float, str, str]] = field(
        default_factory=lambda: collections.deque(maxlen=CHANGES_MAX)
    )

    def on_heartbeat(self, data: dict[str, Any], now: float) -> None:
        last = int(data["last_seq"])
        jid = data.get("journal_id")
        if jid != self.journal_id:
            self.journal_id = jid
            self.seen.clear()
        self.table_seq, self.heartbeat_at = last, now
        if not self.seen or last > self.seen[-1][0]:
            if len(self.seen) >= SEEN_MAX:
                self.seen[-1] = (last, self.seen[-1][1])
            else:
                self.seen.append((last, now))

    def up(self, now: float, stale_after: float) -> bool:
        return self.heartbeat_at is not None and now - self.heartbeat_at < stale_after

    def lag(
        self, stored_journal: str | None, stored_seq: int, now: float
    ) -> tuple[int | None, float]:
        """(events committed at the table and not stored, age of the oldest in seconds)."""
        if self.table_seq is None:
            return None, 0.0
        done = stored_seq if stored_journal == self.journal_id else 0
        while self.seen and self.seen[0][0] <= done:
            self.seen.popleft()
        events = max(0, self.table_seq - done)
        if not events or not self.seen:
            return events, 0.0
        return events, max(0.0, now - self.seen[0][1])

    def change(self, state: str, level: str, event: str, **kw: Any) -> None:
        """Log ``event`` at ``level`` once, when the table's state becomes ``state``."""
        if state == self.reported:
            return
        self.reported = state
        self.note(level, event, **kw)
        getattr(log, level)(event, table=self.table, state=state, **kw)

    def note(self, level: str, event: str, **kw: Any) -> None:
        """Keep a change for ``status`` (the caller logs it)."""
        detail = ", ".join(f"{k} {v}" for k, v in kw.items())
        self.changes.append((time.time(), level, f"{event}: {detail}" if detail else event))


def judge(
    h: Health,
    *,
    task_state: str,
    up: bool,
    lag_events: int | None,
    lag_seconds: float,
    behind_after: float,
    stale_after: float,
    running: float,
) -> str:
    """The table's state for status and logs; logs it when it changed. ``running``: seconds
    since the bridge started (a table is not logged silent before its first heartbeat
    could have come)."""
    if task_state in ("chain-broken", "rolled-back", "retrying"):
        return task_state  # logged where it happened, with its reason
    if not up:
        if h.heartbeat_at is None and running < stale_after:
            return "no-heartbeat"  # not logged yet: its first heartbeat may still come
        if h.heartbeat_at is None:
            h.change(
                "no-heartbeat",
                "warning",
                "table silent",
                why="no heartbeat yet: off, or a wrong CURVE key",
            )
            return "no-heartbeat"
        h.change("down", "warning", "table down", no_heartbeat_for_s=stale_after)
        return "down"
    if lag_events and lag_seconds >= behind_after:
        h.change(
            "behind",
            "warning",
            "table behind",
            lag_events=lag_events,
            lag_seconds=round(lag_seconds, 1),
        )
        return "behind"
    if h.reported != "up":
        h.change("up", "info", "table caught up" if h.reported == "behind" else "table up")
    return "following" if task_state in ("following", "waiting") else task_state


def assess(
    h: Health, task_state: str, head: Any, b: Any, now: float, running: float
) -> tuple[str, bool, int | None, float]:
    """A table's state (logged by :func:`judge` when it changed), up, and its lag in events
    and seconds, against ``head`` (its last event in JetStream) and ``b`` ([bridge])."""
    lag, lag_s = h.lag(head.journal_id, head.seq, now)
    up = h.up(now, b.stale_after)
    state = judge(
        h,
        task_state=task_state,
        up=up,
        lag_events=lag,
        lag_seconds=lag_s,
        behind_after=b.behind_after,
        stale_after=b.stale_after,
        running=running,
    )
    return state, up, lag, lag_s


def calm(h: Health, task_state: str, head: Any, now: float, stale_after: float) -> bool:
    """True when the table is up, following, caught up and was last logged up: its state
    is ``following`` with no lag, without :func:`assess` (the judge runs every second
    over every table; on a quiet floor almost every table is this)."""
    if (
        h.reported == "up"
        and task_state in ("following", "waiting")
        and h.heartbeat_at is not None
        and now - h.heartbeat_at < stale_after
        and h.table_seq is not None  # as lag(): what JetStream holds of this journal
        and h.table_seq <= (head.seq if head.journal_id == h.journal_id else 0)
    ):
        if h.seen:  # every seq it remembers is stored: the lag's ages start afresh
            h.seen.clear()
        return True
    return False


class Judged(NamedTuple):
    """What the once-a-second judge found over every table (``GET /health``)."""

    up: int
    behind: int
    #: the largest true lag of any table, in events and in seconds
    lag_events: int
    lag_seconds: float
    #: when (unix time)
    at: float


def judge_all(links: Iterable[Any], b: Any, now: float, running: float) -> Judged:
    """Every table judged (its changes logged), as the bridge does each second: how many
    are up, how many behind, and the largest lag. A calm table costs a few comparisons
    (:func:`calm`: caught up, so its lag is 0)."""
    up = behind = lag_max = 0
    lag_s_max = 0.0
    for link in links:
        h = link.health
        if calm(h, link.state, link.head, now, b.stale_after):
            up += 1
            continue
        _, is_up, lag, lag_s = assess(h, link.state, link.head, b, now, running)
        up += is_up
        behind += bool(lag)
        if lag:  # None: not known yet (no heartbeat of this journal)
            lag_max, lag_s_max = max(lag_max, lag), max(lag_s_max, lag_s)
    return Judged(up, behind, lag_max, lag_s_max, time.time())


def at_a_glance(j: Judged | None, tables: int, nats: str) -> dict[str, Any]:
    """The bridge's ``GET /health``: the judge's last finding, as cheap for 2,500 tables as
    for one. ``/status`` builds every table's document (~0.1 s at 2,500 tables), so a
    monitor (or ``make floor``'s goal stage) polling it each second would cost the bridge
    more than its tables do; this costs nothing the judge did not spend anyway. ``None``
    until the judge's first run."""
    return {
        "time": None if j is None else j.at,
        "tables": tables,
        "up": None if j is None else j.up,
        "behind": None if j is None else j.behind,
        "lag_events_max": None if j is None else j.lag_events,
        "lag_seconds_max": None if j is None else round(j.lag_seconds, 3),
        "nats": nats,
    }
