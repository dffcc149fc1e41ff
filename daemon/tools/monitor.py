"""``tablectl monitor``: the table at a glance, live, in an 80×24 terminal.

Built only from what a backend gets — the bus, through the subscriber recipe
(:class:`daemon.subscriber.Follower`) — so it keeps working across daemon
restarts: it reconnects, replays from the last seq it holds and says when
it is catching up. ``--json`` streams the raw events instead (gpspipe's job).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, deque
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from daemon.events import Event
from daemon.subscriber import Follower, ReplayFailed

RED = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}
WINNER_STYLE = {
    "player": ("P", "bold white on blue"),
    "banker": ("B", "bold white on red"),
    "tie": ("T", "bold black on green"),
    "dragon": ("D", "bold white on blue"),
    "tiger": ("T", "bold white on red"),
}


def register(sub: Any) -> None:
    p = sub.add_parser("monitor", help="live view of the table (--json: the raw events)")
    p.add_argument("--history", type=int, default=3000, help="events to read back at start")
    p.add_argument("--seconds", type=float, default=None, help="stop after this long")
    p.set_defaults(func=run)


class Model:
    """What the screen shows, folded from events and heartbeats."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.last_seq = 0
        self.head = 0
        self.shoe: int | None = None
        self.hand: int | None = None
        self.phase = "-"
        self.cards: dict[str, list[str]] = {}
        self.beads: list[str] = []  # winners of this shoe, in order
        self.numbers: deque[int] = deque(maxlen=24)
        self.alarms: dict[str, str] = {}
        self.devices: dict[str, dict[str, Any]] = {}
        self.rate: deque[float] = deque(maxlen=200)
        self.catching_up = 0
        self.silent_since: float | None = None
        self.last_result = ""
        self.counts: Counter[str] = Counter()

    def event(self, ev: Event, now: float) -> None:
        self.last_seq = ev.seq
        self.rate.append(now)
        self.catching_up = max(0, self.head - ev.seq)
        d, t = ev.data, ev.type
        self.counts[t] += 1
        if t == "shoe.started":
            self.shoe, self.beads, self.phase = d["shoe"], [], "burning"
        elif t == "betting.opened":
            self.hand, self.cards, self.phase = d["hand"], {}, "betting open"
        elif t == "betting.closed":
            self.phase = "no more bets"
        elif t == "card.dealt" and d.get("box") not in ("burn", "void"):
            self.cards.setdefault(d["box"], []).append(d["card"])
            self.phase = "dealing"
        elif t == "hand.result":
            self.beads.append(d["winner"])
            self.phase = "result"
            self.last_result = f"hand {d['hand']}: {d['winner'].upper()}"
            if "player_total" in d:
                self.last_result += f"  {d['player_total']}–{d['banker_total']}"
        elif t == "hand.void":
            self.phase = f"void ({d.get('reason')})"
        elif t in ("shoe.ended", "shoe.void"):
            self.phase = f"shoe {d.get('shoe')} ended"
        elif t == "spin.result":
            self.numbers.appendleft(int(d["number"]))
            self.last_result = f"spin {d.get('spin')}: {d['number']} {d.get('color', '')}"
        elif t == "alarm.raised":
            self.alarms[d["id"]] = d["message"]
        elif t == "alarm.cleared":
            self.alarms.pop(d["id"], None)
        elif t == "table.paused":
            self.phase = f"PAUSED: {d.get('reason')}"

    def heartbeat(self, hb: dict[str, Any]) -> None:
        self.head = hb["data"]["last_seq"]
        self.devices = hb["data"].get("devices", {})
        self.silent_since = None

    def events_per_s(self, now: float) -> float:
        recent = [t for t in self.rate if now - t < 10]
        return len(recent) / 10


def bead_plate(beads: list[str], rows: int = 6, cols: int = 12) -> Text:
    """The bead plate: column by column, six rows, the latest columns that fit."""
    start = max(0, (len(beads) + rows - 1) // rows - cols) * rows
    shown = beads[start:]
    out = Text()
    for r in range(rows):
        for c in range(cols):
            i = c * rows + r
            if i < len(shown):
                ch, style = WINNER_STYLE.get(shown[i], ("?", ""))
                out.append(ch, style)
            else:
                out.append("·", "dim")
            out.append(" ")
        out.append("\n")
    return out


def big_road(beads: list[str], rows: int = 6, cols: int = 20) -> Text:
    """The big road: a new column each time the winner changes; ties mark the last cell."""
    columns: list[list[str]] = []
    for w in beads:
        if w == "tie":
            if columns:
                columns[-1][-1] = columns[-1][-1].lower()
            continue
        if columns and columns[-1][0].upper() == w[0].upper():
            columns[-1].append(w[0].upper())
        else:
            columns.append([w[0].upper()])
    columns = columns[-cols:]
    out = Text()
    for r in range(rows):
        for col in columns:
            if r < len(col):
                ch = col[r]
                style = "bold blue" if ch.upper() == "P" else "bold red"
                # the letter, not only the colour: a technician's terminal may have none;
                # lower case marks a tie on that hand
                out.append(ch, style)
            elif r == rows - 1 and len(col) > rows:
                out.append(str(len(col) - rows), "dim")
            else:
                out.append(" ")
        out.append("\n")
    return out


def render(m: Model, now: float) -> Group:
    head = Text()
    head.append(f" {m.table} ", "bold reverse")
    head.append(f"  seq {m.last_seq}")
    if m.catching_up > 0:
        head.append(f"  catching up: {m.catching_up} behind", "bold yellow")
    if m.silent_since is not None and now - m.silent_since > 3:
        head.append(f"  daemon silent {now - m.silent_since:.0f} s", "bold red")
    head.append(f"  {m.events_per_s(now):.1f} ev/s")
    game = Text()
    game.append(f" shoe {m.shoe or '-'}  hand {m.hand or '-'}  {m.phase}\n", "bold")
    for box in ("player", "banker", "dragon", "tiger"):
        if box in m.cards:
            game.append(f" {box:<7} {' '.join(m.cards[box])}\n")
    if m.last_result:
        game.append(f" last: {m.last_result}\n", "cyan")
    boards = Table.grid(padding=(0, 2))
    if m.numbers:
        nums = Text()
        for n in m.numbers:
            style = "bold green" if n == 0 else "bold red" if n in RED else "bold white"
            nums.append(f"{n:>2} ", style)
        boards.add_row(Text(" last numbers\n", "bold"), Text(""))
        boards.add_row(nums, Text(""))
    else:
        boards.add_row(Text(" bead plate", "bold"), Text("big road", "bold"))
        boards.add_row(bead_plate(m.beads), big_road(m.beads))
    devs = Table(box=None, padding=(0, 1), show_edge=False)
    for col in ("device", "health", "frames", "malformed"):
        devs.add_column(col, style="bold" if col == "device" else None)
    for name, d in m.devices.items():
        h = d.get("health", "?")
        devs.add_row(
            name,
            Text(h, "green" if h == "ok" else "bold red"),
            str(d.get("frames", "")),
            str(d.get("malformed", "")),
        )
    alarms = Text()
    for aid, msg in list(m.alarms.items())[-3:]:
        alarms.append(f" ⚠ {aid} {msg[:70]}\n", "bold yellow")
    if not m.alarms:
        alarms.append(" no alarms", "dim")
    return Group(head, game, boards, devs, alarms)


def run(a: argparse.Namespace) -> int:
    from daemon import cli

    s = cli._settings(a)
    follower = cli.follower(a, s)
    # start a little back in the journal, so the scoreboards have this shoe's history
    try:
        ev_iter = follower.events(timeout=3.0, heartbeats=True)
        first = next(x for x in ev_iter if isinstance(x, dict))
        follower.rewind(max(0, first["data"]["last_seq"] - a.history))
    except StopIteration:
        print(f"no heartbeat from {s.config.bus.publish}: is tabled running?", file=sys.stderr)
        return 3
    model = Model(s.table)
    end = None if a.seconds is None else time.monotonic() + a.seconds
    if a.json:
        return _stream(follower, end)
    console = Console()
    with Live(
        render(model, time.monotonic()),
        console=console,
        screen=True,
        refresh_per_second=4,
        transient=False,
    ) as live:
        while end is None or time.monotonic() < end:
            try:
                for x in follower.events(timeout=1.0, heartbeats=True):
                    now = time.monotonic()
                    if isinstance(x, Event):
                        model.event(x, now)
                    else:
                        model.heartbeat(x)
                    live.update(render(model, now))
                    if end is not None and now >= end:
                        break
            except ReplayFailed:
                pass  # the daemon is restarting: the next heartbeat retries
            now = time.monotonic()
            if model.silent_since is None:
                model.silent_since = now
            live.update(render(model, now))
    follower.close()
    return 0


def _stream(follower: Follower, end: float | None) -> int:
    while end is None or time.monotonic() < end:
        try:
            for x in follower.events(timeout=1.0):
                assert isinstance(x, Event)
                sys.stdout.buffer.write(x.canonical() + b"\n")
                sys.stdout.flush()
                if end is not None and time.monotonic() >= end:
                    break
        except ReplayFailed:
            continue
    follower.close()
    return 0
