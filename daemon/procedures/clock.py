"""The decision clock: a numbered wait of ``table.expects`` runs out, the game is told.

A client of the table like the croupier (``docs/architecture.md``, Helpers): it follows
the committed ``table.expects`` events and, when one carrying ``turn`` and ``seconds``
is not followed by another in time, submits ``decision.timeout turn=K`` — a command
of the game's, journaled and refused like anyone's (refused when turn K is no longer
awaited). Time is the event loop's (``call_later``), never a sleep; the table holds
no clock. A game returns it from its ``helpers`` and has a ``decision.timeout``
command whose ``turn`` argument names the wait (:mod:`daemon.procedures.shoe.expects`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from daemon.pipeline.listeners import follows
from daemon.table import Command, Input, TableState


class Timers:
    """Named one-shot timers on the running loop: a later one of a name replaces it."""

    def __init__(self) -> None:
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def later(self, key: str, delay: float, fn: Callable[[], None]) -> None:
        self.cancel(key)
        self._timers[key] = asyncio.get_running_loop().call_later(delay, self._fire, key, fn)

    def _fire(self, key: str, fn: Callable[[], None]) -> None:
        self._timers.pop(key, None)
        fn()

    def cancel(self, key: str) -> None:
        t = self._timers.pop(key, None)
        if t is not None:
            t.cancel()

    def close(self) -> None:
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()


class DecisionClock:
    """When a wait's time runs out the table is told (blackjack: the box stands, §3.5.3)."""

    actor = "decision-clock"

    def __init__(
        self, submit: Callable[[Input], object], state: Callable[[], TableState], game: Any
    ) -> None:
        self.submit = submit
        self.state = state
        self.game = game
        self.timers = Timers()

    def start(self, state: TableState) -> None:
        """After a restart the wait in progress gets its full time again."""
        exp = self.game.expects(state.game)
        if exp is not None and exp["expects"] in self.game.numbered and "seconds" in exp:
            self._arm(self.game.turn(state.game), float(exp["seconds"]))

    @follows("table.expects")
    def on_events(self, events: Sequence[Any]) -> None:
        for ev in events:
            if ev.type != "table.expects":
                continue
            if ev.data.get("turn") is not None and ev.data.get("seconds") is not None:
                self._arm(int(ev.data["turn"]), float(ev.data["seconds"]))
            else:
                self.timers.cancel("turn")

    def _arm(self, turn: int, seconds: float) -> None:
        self.timers.later(
            "turn",
            seconds,
            lambda: self.submit(
                Command(
                    "decision.timeout", {"turn": str(turn)}, self.actor, "dealer", source="timer"
                )
            ),
        )

    def close(self) -> None:
        self.timers.close()
