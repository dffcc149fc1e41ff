"""The croupier: opens and closes betting on a timer, as a live studio's game server does.

It is a client of the table like a dealer's button: it submits the same
commands (``betting.open``, ``betting.close``, ``shoe.new``) with the actor
``croupier``, so its actions are journaled and refused for the same reasons
a person's would be. Enabled by the house rule ``betting_seconds``. What settles a game
is the game's describer's (its ``results`` and ``voids``): the croupier names no game.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from daemon.games.describe import Describer
from daemon.journal.events import Event
from daemon.pipeline.listeners import follows
from daemon.table import Command, Input, TableState

log = structlog.get_logger("croupier")


#: what ends the burn of a new shoe: betting opens after the settle time, as after a result
BURNED = "shoe.burn"
#: the shoe's and betting's events it follows beside the game's results and voids
FOLLOWED = (
    "shoe.started",
    "betting.opened",
    "betting.closed",
    BURNED,
    "hand.demo",
    "shoe.ended",
    "shoe.void",
    "shuffle.completed",
)


class Croupier:
    def __init__(
        self, rules: Any, submit: Callable[[Input], object], describe: Describer
    ) -> None:
        #: what settles a game (or ends the burn): betting opens again after the settle time
        self.settled = describe.results | describe.voids | {BURNED}
        #: the event types :meth:`on_events` follows here: its own and the game's settling
        self.followed = self.on_events.follows | self.settled
        self.betting = float(rules.betting_seconds)
        self.settle = float(getattr(rules, "settle_seconds", 3.0))
        self.new_shoe = bool(getattr(rules, "auto_new_shoe", False))
        self.demo_hands = int(getattr(rules, "demo_hands", 0))
        self.submit = submit
        self._timer: asyncio.TimerHandle | None = None
        self.no_shoe = False

    @staticmethod
    def wanted(rules: Any) -> bool:
        return getattr(rules, "betting_seconds", None) is not None

    def start(self, state: TableState) -> None:
        """Pick up where the table is after a (re)start."""
        phase = getattr(state.game, "phase", None)
        self.no_shoe = phase in ("no-shoe", "shoe-ended")
        if phase == "betting":
            self._later(self.betting, "betting.close")
        elif phase in ("settling",):
            self._later(self.settle, "betting.open")
        elif phase in ("no-shoe", "shoe-ended") and self.new_shoe:
            self._later(self.settle, "shoe.new")

    @follows(*FOLLOWED)
    def on_events(self, events: Sequence[Event]) -> None:
        for ev in events:
            t = ev.type
            if t == "shoe.started":
                self.no_shoe = False
            if t == "betting.opened":
                self._later(self.betting, "betting.close")
            elif t == "betting.closed":
                self._cancel()
            elif (
                t in self.settled
                or (t == "hand.demo" and ev.data.get("hand", 0) >= self.demo_hands)
                or (t == "shoe.started" and ev.data.get("burn") == "none" and not self.demo_hands)
            ):
                self._later(self.settle, "betting.open")
            elif t in ("shoe.ended", "shoe.void"):
                self._cancel()
                self.no_shoe = True
                if self.new_shoe:
                    self._later(self.settle * 2, "shoe.new")
            elif t == "shuffle.completed" and ev.data.get("ok") and self.no_shoe and self.new_shoe:
                # the house wants a counted shuffle first: start the shoe once it is there
                self._later(self.settle, "shoe.new")

    def _later(self, delay: float, name: str) -> None:
        self._cancel()
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire, name)

    def _fire(self, name: str) -> None:
        self._timer = None
        self.submit(Command(name, {}, "croupier", "dealer", source="timer"))

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        self._cancel()
