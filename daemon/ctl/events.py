"""``tablectl events``: the journal queried as ``journalctl`` queries its log.

By time (``--since``, ``--until``), by type (``--type card.dealt``, ``--type 'alarm.*'``),
by game (``--round 1:5``, named by the game's describer key as ``recall --hand`` is), the
last N (``-n``), and following the live table (``-f``: the journal first, then the bus
from the last seq it printed, so nothing is missed or doubled between the two). Text lines
in the game's words, or ``--json``: each event's canonical JSON on its own line.

The journal is read-only and needs no daemon; only ``-f`` listens to the bus.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from daemon.ctl.shared import EXIT_OK, EXIT_USAGE

_RELATIVE = re.compile(r"^-?(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hour|hours|d|day|days)(\s+ago)?$")
_UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "hours": 3600}
_UNIT |= {"d": 86400, "day": 86400, "days": 86400}


def parse_time(text: str, now: datetime | None = None) -> str:
    """A time as the journal writes it (``2026-12-01T10:00:00.000Z``, UTC) from what a person
    types: ISO 8601 (a date alone is its midnight; no zone is UTC), ``HH:MM[:SS]`` today,
    ``now``, ``today``, ``yesterday``, ``-10m``, ``2h ago`` (s, m/min, h, d)."""
    now = now or datetime.now(UTC)
    t = text.strip().lower()
    when: datetime
    if t == "now":
        when = now
    elif t in ("today", "yesterday"):
        when = now.replace(hour=0, minute=0, second=0, microsecond=0)
        when -= timedelta(days=1 if t == "yesterday" else 0)
    elif m := _RELATIVE.match(t):
        when = now - timedelta(seconds=float(m[1]) * _UNIT[m[2]])
    elif re.fullmatch(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?", t):
        when = datetime.fromisoformat(f"{now.date().isoformat()}T{t.zfill(5)}").replace(tzinfo=UTC)
    else:
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{text!r} is not a time: give 2026-12-01T10:00:00Z, 2026-12-01, 10:00, "
                "now, today, yesterday, -10m or '2h ago'"
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class Query:
    """The filters of one ``tablectl events``: an SQL condition over the journal, and the
    same test for a live event."""

    def __init__(self, a: argparse.Namespace, key: tuple[str, ...]) -> None:
        self.since, self.until = a.since, a.until
        self.patterns = list(a.type)
        self.ref: dict[str, int] = {}
        if a.round_ref is not None:
            parts = a.round_ref.split(":")
            if len(parts) != len(key) or not all(p.isdigit() for p in parts):
                raise ValueError(
                    f"--round {a.round_ref!r}: this game is named by "
                    f"{':'.join(k.upper() for k in key)}"
                )
            self.ref = dict(zip(key, map(int, parts), strict=True))

    def sql(self) -> tuple[str, list[Any]]:
        cond, args = ["1"], []
        if self.since:
            cond.append("json_extract(body, '$.time') >= ?")
            args.append(self.since)
        if self.until:
            cond.append("json_extract(body, '$.time') <= ?")
            args.append(self.until)
        if self.patterns:
            cond.append("(" + " OR ".join("type GLOB ?" for _ in self.patterns) + ")")
            args += self.patterns
        for k, v in self.ref.items():
            cond.append(f"json_extract(body, '$.data.{k}') = ?")
            args.append(v)
        return " AND ".join(cond), args

    def matches(self, ev: Any) -> bool:
        from fnmatch import fnmatchcase

        if self.since and ev.time < self.since:
            return False
        if self.until and ev.time > self.until:
            return False
        if self.patterns and not any(fnmatchcase(ev.type, p) for p in self.patterns):
            return False
        return all(ev.data.get(k) == v for k, v in self.ref.items())


def cmd_events(a: argparse.Namespace) -> int:
    from daemon.ctl.journal import _describer, _journal_path
    from daemon.journal import connect
    from daemon.tools.describe import describe

    if a.follow and a.until:
        print("tablectl events: -f follows from now on; it takes no --until", file=sys.stderr)
        return EXIT_USAGE
    game = _describer(a)
    try:
        q = Query(a, game.key)
    except ValueError as e:
        print(f"tablectl events: {e}", file=sys.stderr)
        return EXIT_USAGE
    path = _journal_path(a)
    if not path.exists():
        print(f"tablectl events: no journal at {path}", file=sys.stderr)
        return EXIT_USAGE

    def show(ev: Any, raw: bytes | None = None) -> None:
        out = (raw or ev.canonical()) if a.json else describe(ev, game).encode()
        sys.stdout.buffer.write(out + b"\n")

    import sqlite3

    try:
        db = connect(path, readonly=True)
        try:
            last = _from_journal(db, q, a.lines, show) or 0
        finally:
            db.close()
    except sqlite3.Error as e:
        print(
            f"tablectl events: cannot read the journal {path} ({e}): run it as a user who may "
            "read it (the daemon's), or give a copy's path",
            file=sys.stderr,
        )
        return EXIT_USAGE
    sys.stdout.flush()
    if not a.follow:
        return EXIT_OK
    return _follow(a, q, last, show)


def _from_journal(db: Any, q: Query, lines: int | None, show: Any) -> int | None:
    """Print the journal's matching events; the journal's last seq (None: empty)."""
    from daemon.journal.events import decode

    # the head first, and nothing after it: an event committed while this reads is left
    # to -f, which goes on from this head (read after the rows, it could skip that event)
    (head,) = db.execute("SELECT MAX(seq) FROM events").fetchone()
    if head is None:
        return None
    cond, args = q.sql()
    cond, args = f"{cond} AND seq <= ?", [*args, head]
    if lines is not None:
        rows = db.execute(
            f"SELECT seq, body FROM events WHERE {cond} ORDER BY seq DESC LIMIT ?",
            (*args, lines),
        ).fetchall()[::-1]
    else:
        rows = db.execute(f"SELECT seq, body FROM events WHERE {cond} ORDER BY seq", args)
    for _, body in rows:
        raw = bytes(body)
        show(decode(raw), raw)
    return int(head)


def _follow(a: argparse.Namespace, q: Query, after: int, show: Any) -> int:
    """The live table from the journal's head on: the bus, with replay of any gap."""
    from daemon.bus.subscriber import ReplayFailed
    from daemon.ctl import shared as ctl
    from daemon.journal.events import Event

    s = ctl.settings(a)
    follower = ctl.follower(a, s)
    follower.rewind(after)
    end = None if a.seconds is None else time.monotonic() + a.seconds
    try:
        while end is None or time.monotonic() < end:
            try:
                for x in _live(follower):
                    if isinstance(x, Event) and q.matches(x):
                        show(x)
                        sys.stdout.flush()
                    if end is not None and time.monotonic() >= end:
                        break
            except ReplayFailed:
                continue  # the daemon is restarting: the next heartbeat asks again
    except KeyboardInterrupt:
        pass
    finally:
        follower.close()
    return EXIT_OK


def _live(follower: Any) -> Iterator[Any]:
    # heartbeats too: on a quiet table they are all that comes, and --seconds must end
    return iter(follower.events(timeout=1.0, heartbeats=True))
