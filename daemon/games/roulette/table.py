"""The roulette spin procedure: a wheel's frames in, rounds, results and voids out. Pure.

The wheel (Cammegh SlingShot 2 or Mercury 360, ``drivers/cammegh/``) reports its
own state machine ``6 → 1 → (2 → 3 → 4 → 5)…`` every 500 ms; the table follows it
and journals only what changes: a game opening (``betting.opened``), the ball in
the rim (``spin.started``), no more bets (``betting.closed``), the winning number
(``spin.result``) or a void (``spin.void``), plus flag changes and alarms. Every
rule names its source: seed 003 part IV (``seed 003 IV §3.1.1``), the vendor's
exception table (``vendor SS2 exception table``), the Mercury integration guide
(``vendor M360 guide``), or ``ours`` where both are silent; ``docs/procedures.md``
lists them with their settings.

A void keeps the round: the wheel re-spins and the next result belongs to the same
round (seed 003 IV §3.1.1: an invalid spin is no spin; bets stand).

Time comes only from the readings' ``mono``. The one memory outside the journaled
state is the last frame seen per device (:class:`_Seen`), used to tell consecutive
frames from frames with a gap between them; it is exactly what a fresh process
lacks, and a fresh process treats its first frame as following a gap, so nothing
is ever judged across a restart, a reconnection or a hole in a capture.

The persistence windows' starts (``state_since``, ``flag_since``) are monotonic times
in the saved state, and the monotonic clock restarts at every boot: a start taken on
another boot (``daemon.started``'s ``boot`` differs, or is unknown) is restarted at
the first frame after the restart (its ``wheel.resync``). A window then counts only
what this boot's clock saw: it may run up to one window longer, never shorter.

The parts: ``state.py`` (rules, state, rule texts), ``wheel.py`` (the wheel's frames),
``round.py`` (the round); this module joins them into the game."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec
from tabled_client.base import Data

from daemon.games.describe import Describer
from daemon.games.roulette import events as roulette_events
from daemon.games.roulette import rules as roulette
from daemon.games.roulette.correct import RouletteCorrections
from daemon.games.roulette.describe import RouletteDescriber
from daemon.games.roulette.log_check import check as check_wheel_log
from daemon.games.roulette.reconcile import COMMAND as RECONCILE
from daemon.games.roulette.reconcile import reconciled
from daemon.games.roulette.round import RouletteRound
from daemon.games.roulette.state import (
    IN_PLAY,
    RouletteRules,
    RouletteState,
)
from daemon.games.roulette.wheel import (
    WheelTracking,
    _Seen,
    _text,
)
from daemon.table import (
    REASON,
    Command,
    CommandSpec,
    Decision,
    DeviceHealth,
    DeviceReading,
    GameDefaults,
    Input,
    TableState,
    spec,
)
from drivers.cammegh import M360_STATES, SS2_STATES, flag_names
from drivers.readings import (
    BALL_REVOLUTIONS,
    GameEvent,
    WheelFault,
    WheelStatus,
    WinningNumber,
)


class RouletteGame(RouletteRound, WheelTracking, RouletteCorrections, GameDefaults):
    """Roulette on a wheel that reports its own state machine (Cammegh SS2, Mercury 360)."""

    name: ClassVar[str] = "roulette"
    Rules: ClassVar[type[RouletteRules]] = RouletteRules
    State: ClassVar[type[RouletteState]] = RouletteState
    STATE_VERSION: ClassVar[int] = 2
    describe: ClassVar[Describer] = RouletteDescriber()
    #: its own event types (``events.py``: the client carries them for backends)
    events: ClassVar[dict[str, type[Data]]] = roulette_events.EVENTS
    commands: ClassVar[dict[str, CommandSpec]] = {
        "spin.void": spec(
            "void the spin in play",
            "supervisor",
            words=("void", "spin"),
            args=(REASON,),
        ),
        **RECONCILE,
    }
    #: a void with ``acknowledge`` is told to the wheel (an SS2's ``*R``, when configured)
    acknowledged: ClassVar[frozenset[str]] = frozenset({"spin.void"})
    #: these house rules need a wheel that reports the ball's revolutions
    needs: ClassVar[dict[str, str]] = {
        "min_ball_revolutions": BALL_REVOLUTIONS,
        "max_ball_revolutions": BALL_REVOLUTIONS,
    }
    #: the wheel's own log against the journal's spins (``tablectl wheel reconcile``)
    check_device_log = staticmethod(check_wheel_log)

    def __init__(self, rules: RouletteRules) -> None:
        self.rules = rules
        self._seen: dict[str, _Seen] = {}

    def initial(self) -> RouletteState:
        return RouletteState()

    def summary(self, g: RouletteState) -> dict[str, Any]:
        """The game as a technician reads it (``tablectl status``)."""
        names = M360_STATES if self.rules.wheel_model == "m360" else SS2_STATES
        return {
            "phase": g.phase,
            "text": self.phase_text(g),
            "round": g.round,
            "spin": g.spin,
            "results": g.results,
            "voids": g.voids,
            "last_number": g.last_number,
            "wheel_state": g.wheel_state,
            "wheel_state_name": names.get(g.wheel_state or 0),
            "wheel_spin": g.wheel_spin,
            "flags": flag_names(g.flags, self._flag_table()),
            "layout": roulette.layout(self.rules.double_zero),
        }

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, WheelStatus):
                self._status(t, dev, r, inp.mono, d)
            elif isinstance(r, WinningNumber):
                self._line(t, dev, r, inp.mono, d)
            elif isinstance(r, GameEvent):
                self._milestone(t, dev, r, inp.mono, d)
            elif isinstance(r, WheelFault):
                self._fault(t, d, dev, r.code, r.meaning, [_text(r.frame)])
        elif isinstance(inp, DeviceHealth):
            g: RouletteState = t.game
            if inp.health != "ok" and inp.device == g.device:
                self._system_failure(t, d, f"wheel {inp.health}: {inp.reason}")
        elif isinstance(inp, Command) and inp.name == "spin.void":
            self._void_command(t, inp, d)
        elif isinstance(inp, Command) and inp.name == "wheel.reconcile":
            reconciled(t, inp, d)

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 IV §2.1.6: when the house says so, a restart voids the spin in play."""
        self._system_failure(t, d, "the daemon restarted during the spin")

    def apply(self, g: RouletteState, type_: str, data: dict[str, Any]) -> RouletteState:
        rep = msgspec.structs.replace
        if type_ == "daemon.started":
            boot = data.get("boot")
            lost = g.clock_lost or boot is None or boot != g.boot
            return rep(g, link_gap=True, boot=boot, clock_lost=lost, started_wheel_spin=None)
        if type_ in ("device.stale", "device.disconnected"):
            return g if g.link_gap else rep(g, link_gap=True, started_wheel_spin=None)
        if type_ == "alarm.raised":
            if data.get("kind") == "launch-failure":
                return rep(g, launch_alarm=data["id"])
            return g
        if type_ == "alarm.cleared":
            return rep(g, launch_alarm=None) if data.get("id") == g.launch_alarm else g
        head = type_.partition(".")[0]
        if head not in ("wheel", "betting", "spin"):
            return g
        g = self._track(g, data)
        if type_ == "wheel.resync":
            g = rep(g, link_gap=False, partial=g.partial or g.phase in IN_PLAY)
            return self._new_clock(g, data.get("mono")) if g.clock_lost else g
        if type_ == "wheel.flags":
            return self._apply_flags(g, data)
        if type_ == "wheel.number":
            return rep(g, pending=data["number"])
        if type_ == "wheel.state":
            if data.get("joined"):
                return rep(g, phase="joined", closed=False, pending=None)
            if data["wheel_state"] in (1, 6):
                return rep(g, phase="waiting", closed=False, pending=None)
            return g
        if type_ == "betting.opened":
            return rep(g, phase="betting", closed=False, pending=None)
        if type_ == "spin.started":
            late = bool(data.get("late"))
            return rep(
                g,
                phase="spinning",
                spin=data["spin"],
                closed=False,
                ball_since_result=g.ball_since_result or not late,
                partial=late,
                pending=None,
                rotor_direction=data.get("rotor_direction"),
                rotor_rpm=data.get("rotor_rpm"),
                started_wheel_spin=None if late else data.get("wheel_spin"),
                started_mono=data.get("mono"),
            )
        if type_ == "betting.closed":
            return rep(g, phase="closed", closed=True)
        if type_ == "spin.result":
            return rep(
                g,
                phase="settled",
                round=g.round + 1,
                results=g.results + 1,
                last_number=data["number"],
                respin=False,
                pending=None,
                ball_since_result=False,
            )
        if type_ == "spin.void":
            return rep(g, phase="voided", voids=g.voids + 1, respin=True, pending=None)
        return g
