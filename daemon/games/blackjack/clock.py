"""Blackjack's demo game server, the virtual players (the decision clock is the procedures':
:mod:`daemon.procedures.clock`).

A client of the table like the croupier: it submits commands, which are journaled and
refused for the same reasons a person's would be, and follows the committed
``table.expects`` events. Time is the event loop's (``call_later``), never a sleep.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from daemon.games.blackjack import rules as r
from daemon.pipeline.listeners import follows
from daemon.procedures.clock import Timers
from daemon.table import Command, Input, TableState


class VirtualPlayers:
    """A demo's game server: players bet, decide with a simple strategy, now and then too late.

    It also plays the dealer's part the shoe cannot: checking the hole card
    under an ace when the table asks. Seeded, so a demo run is repeatable.
    """

    actor = "virtual-players"

    def __init__(
        self,
        submit: Callable[[Input], object],
        state: Callable[[], TableState],
        game: Any,
        *,
        seed: int = 3,
    ) -> None:
        self.submit = submit
        self.state = state
        self.game = game
        self.rules = game.rules
        self.rng = random.Random(seed)
        # the house's pace: betting stays open as long as a round's result shows, and a
        # player takes about a third of that to decide
        self.betting = float(self.rules.settle_seconds) or 0.05
        self.think = self.betting / 3
        self.timers = Timers()

    def _cmd(self, name: str, **args: Any) -> None:
        self.submit(
            Command(
                name, {k: str(v) for k, v in args.items()}, self.actor, "dealer", source="timer"
            )
        )

    def start(self, state: TableState) -> None:
        s = state.game
        if s.phase in ("no-shoe", "shoe-ended") and self.rules.auto_new_shoe:
            self.timers.later("table", self.rules.settle_seconds, lambda: self._cmd("shoe.new"))
        elif s.phase == "settling":
            self.timers.later("table", self.rules.settle_seconds, lambda: self._cmd("betting.open"))
        elif s.phase == "betting":
            self.timers.later("table", self.betting, self._close)
        exp = self.game.expects(s)
        if exp is not None:
            self._expects(exp)

    @follows(
        "hand.result",
        "hand.void",
        "shoe.burn",
        "shoe.started",
        "betting.opened",
        "shoe.ended",
        "shoe.void",
        "table.expects",
    )
    def on_events(self, events: Sequence[Any]) -> None:
        for ev in events:
            t, data = ev.type, ev.data
            if (
                t in ("hand.result", "hand.void")
                or (t == "shoe.burn")
                or (t == "shoe.started" and data.get("burn") == "none")
            ):
                self.timers.later(
                    "table", self.rules.settle_seconds, lambda: self._cmd("betting.open")
                )
            elif t == "betting.opened":
                self.timers.later("table", self.betting, self._close)
            elif t in ("shoe.ended", "shoe.void") and self.rules.auto_new_shoe:
                self.timers.later(
                    "table", self.rules.settle_seconds * 2, lambda: self._cmd("shoe.new")
                )
            elif t == "table.expects":
                self._expects(data)

    def _close(self) -> None:
        n = self.rng.randint(1, self.rules.virtual_players)
        boxes = sorted(self.rng.sample(range(1, self.rules.boxes + 1), n))
        self._cmd("betting.close", boxes=",".join(map(str, boxes)))

    def _expects(self, exp: dict[str, Any]) -> None:
        kind = exp.get("expects")
        if kind == "decision":
            if self.rng.random() < 0.06:
                return  # the player is away: the decision clock stands the box
            box = int(exp["box"])
            delay = self.think * (0.5 + self.rng.random())
            self.timers.later(
                "decide", delay, lambda: self._decide(box, int(exp["split_hand"]), exp["allowed"])
            )
        elif kind == "insurance":
            for b in exp["boxes"]:
                take = "yes" if self.rng.random() < 0.25 else "no"
                self.timers.later(
                    f"ins{b}",
                    self.think * self.rng.random(),
                    lambda b=b, take=take: self._cmd("box.insurance", box=b, take=take),
                )
        elif kind == "hole-check":
            self.timers.later("decide", self.think, lambda: self._cmd("hole.check"))

    def close(self) -> None:
        self.timers.close()

    def _decide(self, box: int, i: int, allowed: list[str]) -> None:
        rd = getattr(self.state().game, "round", None)
        if rd is None or rd.box(box) is None or rd.up is None:
            return
        hand = rd.box(box).hands[i]
        self._cmd(f"box.{strategy(hand.cards, rd.up, allowed)}", box=box)


def strategy(cards: Sequence[str], up: str, allowed: Sequence[str]) -> str:
    """A simple player: split aces and eights, double 10 and 11 against a weak up card, else hit to 17."""
    t = r.total(cards)
    u = r.value(up)
    u = 11 if u == 1 else u
    if "split" in allowed and r.value(cards[0]) in (1, 8):
        return "split"
    if "double" in allowed and not t.soft and t.total in (10, 11) and u < t.total:
        return "double"
    if t.soft:
        return "stand" if t.total >= 18 or "hit" not in allowed else "hit"
    if t.total >= 17 or "hit" not in allowed:
        return "stand"
    if t.total >= 13 and u <= 6:
        return "stand"
    return "hit"
