"""``tablectl monitor``: the table at a glance, live, in an 80×24 terminal.

Built only from what a backend gets — the bus, through the subscriber recipe
(:class:`daemon.bus.subscriber.Follower`) — so it keeps working across daemon
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

from daemon.bus.subscriber import Follower, ReplayFailed
from daemon.games.describe import Describer, Mark
from daemon.journal.events import Event
from daemon.procedures.shoe import roads
from daemon.tools import roads_view

#: events the screen reads back at start, for the scoreboards (``--history``)
SCREEN_HISTORY = 3000


class Model:
    """What the screen shows, folded from events and heartbeats.

    The game's :class:`~daemon.games.describe.Describer` says which events end a game,
    what names it, its "last:" row and its scoreboard cell; the model knows no game.
    """

    def __init__(self, table: str, describe: Describer) -> None:
        self.table = table
        self.describe = describe
        self.last_seq = 0
        self.head = 0
        self.where: dict[str, Any] = {}
        self.gauges: dict[str, str] = {}  # a wheel's state and rotor: ``Describer.gauges``
        self.phase = "-"
        self.cards: dict[str, list[str]] = {}
        self.next = ""  # what the table waits for, when the game says (``Describer.next``)
        self.marks: list[Mark] = []  # this board's results, in order
        self.winners: list[str] = []  # a shoe game's winners, for a journal without roads
        #: a result's seq → its place in ``marks`` and ``winners``, for its correction
        self.placed: dict[int, tuple[int | None, int | None]] = {}
        self.board = roads_view.Board()  # a shoe game's roads, from the squares published
        self.alarms: dict[str, str] = {}
        self.devices: dict[str, dict[str, Any]] = {}
        self.rate: deque[float] = deque(maxlen=200)
        self.catching_up = 0
        self.silent_since: float | None = None
        self.last_result = ""
        self.counts: Counter[str] = Counter()
        #: the dealer on duty, from the sessions' events or a result's ``dealer_on_duty``
        self.dealer: str | None = None

    def event(self, ev: Event, now: float) -> None:
        self.last_seq = ev.seq
        self.rate.append(now)
        self.catching_up = max(0, self.head - ev.seq)
        d, t, game = ev.data, ev.type, self.describe
        self.counts[t] += 1
        self.where.update({k: d[k] for k in game.playing or game.key if d.get(k) is not None})
        self.gauges.update(game.gauges(t, d))
        if t in game.phases:
            self.phase = game.phases[t]
        if t == "dealer.signed_in":
            self.dealer = d["dealer"]
        elif d.get("dealer_on_duty"):
            self.dealer = d["dealer_on_duty"]
        elif t in ("dealer.signed_out", "table.closed"):
            self.dealer = None
        if t in game.fresh_board:
            self.marks, self.winners, self.board = [], [], roads_view.Board()
            self.placed = {}
        if t == "betting.opened":
            self.cards = {}
            self.next = ""
        nxt = game.next(t, d)
        if nxt is not None:
            self.next = nxt
        if game.cards(self.cards, t, d):
            pass  # a card on the table: the game says where it goes and how it shows
        elif t in game.results:
            self.phase = "result"
            self.last_result = game.row(d)
            mark = game.mark(d)
            at_mark = at_winner = None
            if mark is not None:
                at_mark = len(self.marks)
                self.marks.append(mark)
            if "roads" in d or ("winner" in d and "big road" in game.boards):
                # the daemon publishes each result's squares; an older journal's are worked out
                at_winner = len(self.winners)
                self.winners.append(d["winner"])
                sides = self.describe.sides
                self.board.set(d.get("roads") or roads.update(self.winners, sides))
            self.placed[ev.seq] = (at_mark, at_winner)
        elif t == "result.corrected":
            self._corrected(ev.seq, d)
        elif t in game.voids:
            self.phase = f"void ({d.get('reason')})"
        elif t == "alarm.raised":
            self.alarms[d["id"]] = d["message"]
        elif t == "alarm.cleared":
            self.alarms.pop(d["id"], None)
        elif t == "table.paused":
            self.phase = f"PAUSED: {d.get('reason')}"

    def _corrected(self, seq: int, d: dict[str, Any]) -> None:
        """A corrected result (``result.corrected``): its cell shows the corrected result,
        marked (underlined, ``*`` after it), and a shoe's roads are drawn again with it."""
        game, res = self.describe, d["result"]
        at_mark, at_winner = self.placed.get(d["supersedes"], (None, None))
        mark = game.mark(res)
        if mark is not None and at_mark is not None:
            self.marks[at_mark] = mark._replace(
                text=f"{mark.text}*", style=f"{mark.style} underline"
            )
        if d["supersedes"] == max(self.placed, default=None):
            self.last_result = f"{game.row(res)}  (corrected at seq {seq})"
        if at_winner is not None and "winner" in res:
            self.winners[at_winner] = res["winner"]
            self.board = roads_view.Board()
            for n in range(1, len(self.winners) + 1):
                self.board.set(roads.update(self.winners[:n], game.sides))

    def heartbeat(self, hb: dict[str, Any]) -> None:
        self.head = hb["data"]["last_seq"]
        self.devices = hb["data"].get("devices", {})
        self.silent_since = None

    def events_per_s(self, now: float) -> float:
        recent = [t for t in self.rate if now - t < 10]
        return len(recent) / 10


def last_results(marks: list[Mark], width: int = 78) -> Text:
    """The latest results, newest first, as many as one line holds: a wheel's pockets, a
    shaker's faces and totals."""
    out = Text()
    n = max(1, width // (max((len(m.text) for m in marks[-24:]), default=2) + 1))
    for m in reversed(marks[-n:]):
        out.append(f"{m.text:>2} ", m.style)
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
    if m.dealer:
        head.append(f"  dealer {m.dealer}", "bold")
    game = Text()
    where = "  ".join(f"{k} {v}" for k, v in m.where.items()) or "-"
    game.append(f" {where}  {m.phase}\n", "bold")
    for box, cards in m.cards.items():
        game.append(f" {box:<7} {' '.join(cards)}\n")
    if m.gauges:
        game.append(" " + "  ".join(f"{k}: {v}" for k, v in m.gauges.items()) + "\n")
    if m.next:
        game.append(f" next: {m.next}\n", "bold magenta")
    if m.last_result:
        game.append(f" last: {m.last_result}\n", "cyan")
    game.rstrip()  # no blank line before the boards: 24 lines hold them and the devices
    boards = Table.grid(padding=(0, 2))
    if "big road" in m.describe.boards:
        # the five roads of a shoe game, drawn from the published squares
        boards.add_row(
            roads_view.boards(
                m.board.roads() if m.winners else None,
                lambda w: m.describe.mark({"winner": w}),
            )
        )
    else:
        drawn = {"last results": last_results}
        shown = [b for b in m.describe.boards if b in drawn]
        label = f" ({m.describe.board_label})" if m.describe.board_label else ""
        boards.add_row(
            *(Text(f" {b}{label}" if i == 0 else b, "bold") for i, b in enumerate(shown))
        )
        boards.add_row(*(drawn[b](m.marks) for b in shown))
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
    from daemon.ctl import shared as ctl

    s = ctl.settings(a)
    follower = ctl.follower(a, s)
    # start a little back in the journal, so the scoreboards have this shoe's history
    try:
        ev_iter = follower.events(timeout=3.0, heartbeats=True)
        first = next(x for x in ev_iter if isinstance(x, dict))
        # the screen starts a little back, for this shoe's scoreboards; a pipe or --json
        # starts at the head unless --history is given, as `journalctl -f` does (issue 33:
        # a pipe first got 3,000 events of history)
        stream = a.json or not sys.stdout.isatty()
        history = a.history if a.history is not None else (0 if stream else SCREEN_HISTORY)
        follower.rewind(max(0, first["data"]["last_seq"] - history))
    except StopIteration:
        print(f"no heartbeat from {s.config.bus.publish}: is tabled running?", file=sys.stderr)
        return 3
    from daemon import games

    game = games.find(s.config.table.game)
    assert game is not None  # the config names an installed game
    model = Model(s.table, game.describe)
    end = None if a.seconds is None else time.monotonic() + a.seconds
    if a.json:
        return _stream(follower, end)
    if not sys.stdout.isatty():  # a pipe or a log file: one line per event, no screen
        return _stream(follower, end, game.describe)
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


def _stream(follower: Follower, end: float | None, lines: Describer | None = None) -> int:
    """The events as they come: raw, or (``lines``: the game's describer) one line each."""
    from daemon.tools.describe import describe

    while end is None or time.monotonic() < end:
        try:
            # heartbeats too: on an idle table they are all that comes, and --seconds must end
            for x in follower.events(timeout=1.0, heartbeats=True):
                if isinstance(x, Event):
                    out = describe(x, lines).encode() if lines else x.canonical()
                    sys.stdout.buffer.write(out + b"\n")
                    sys.stdout.flush()
                if end is not None and time.monotonic() >= end:
                    break
        except ReplayFailed:
            continue
    follower.close()
    return 0
