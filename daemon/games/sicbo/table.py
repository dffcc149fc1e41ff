"""The Sic Bo round: betting, the shake, re-shakes, the result and voids. Pure decide/apply.

The shaker (``drivers/dice_ref.py`` or any driver speaking
:mod:`drivers.dice_readings`) reports shaking, dice not flat, a result and
faults; people and the croupier open and close betting. The rules of the
throw are :mod:`daemon.games.sicbo.rules`. Every rule names its source (seed 002,
骰寳; ``ours`` where the seeds are silent); ``docs/procedures.md``
lists them with their house-rule keys. One module per job: ``state.py`` (house
rules, state, rule texts), ``shaker.py`` (the shaker's reports), this one (the
game: decide, commands, apply); betting, voids and the round's counters are
the round procedure's (:mod:`daemon.procedures.round`).

Phases::

    settling ─open─▶ betting ─close / shaking─▶ closed ─shaking─▶ shaking ─result─▶ settling
                                                   ▲   ◀─not flat (re-shake)──┘  │
                                                   └──────── resume ◀── paused ◀─┘ (fault, too many re-shakes)
    (a void from any phase of a round goes back to settling)

The round number counts every round the table ever opened and never resets.
A re-shake keeps the round and its bets (seed 002); only the final throw is a
``dice.result``. A claimed throw that is not three faces 1–6 is a
``dice.rejected`` with an alarm naming the faces, never a result.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec
from tabled_client.base import Data

from daemon.games.describe import Describer
from daemon.games.sicbo.correct import SicBoCorrections
from daemon.games.sicbo.describe import SicBoDescriber
from daemon.games.sicbo.events import EVENTS
from daemon.games.sicbo.shaker import SicBoShaker
from daemon.games.sicbo.state import IN_ROUND, R_RESHAKE, DiceState, SicBoRules
from daemon.procedures.round import round_commands
from daemon.table import (
    Command,
    CommandSpec,
    Decision,
    DeviceReading,
    GameDefaults,
    Input,
    TableState,
    spec,
)
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault

__all__ = ["SicBoGame", "SicBoRules"]


class SicBoGame(SicBoShaker, SicBoCorrections, GameDefaults):
    """A Sic Bo table with an automatic shaker (seed 002, 骰寳)."""

    name: ClassVar[str] = "sicbo"
    Rules: ClassVar[type[SicBoRules]] = SicBoRules
    State: ClassVar[type[DiceState]] = DiceState
    STATE_VERSION: ClassVar[int] = 1
    describe: ClassVar[Describer] = SicBoDescriber()
    #: its own event types (``events.py``: the client carries them for backends)
    events: ClassVar[dict[str, type[Data]]] = EVENTS
    result_type: ClassVar[str] = "dice.result"
    resumes_to: ClassVar[str] = "closed"
    restart_voids: ClassVar[tuple[str, ...]] = ("closed", "shaking", "paused")
    in_round: ClassVar[tuple[str, ...]] = IN_ROUND

    commands: ClassVar[dict[str, CommandSpec]] = {
        **round_commands("no more bets: the dice may be shaken"),
        "round.resume": spec("go on with a paused round: shake again, bets stand", "supervisor"),
    }

    def summary_data(self, g: DiceState) -> dict[str, Any]:
        return {"shakes": g.shakes, "reshakes": g.reshakes}

    def phase_texts(self, g: DiceState) -> dict[str, str]:
        return {
            "closed": f"round {g.round}: no more bets, waiting for the shake",
            "shaking": f"round {g.round}: the dice are shaking",
            "paused": f"round {g.round} paused ({g.paused}) until a supervisor resumes or voids it",
        }

    def void_data(self, g: DiceState) -> dict[str, Any]:
        return {"shakes": g.shakes, "reshakes": g.reshakes}

    # ====================================================================== decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        g: DiceState = t.game
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, DiceShaking):
                self._shaking(t, g, d, dev)
            elif isinstance(r, DiceResult):
                self._result(t, g, d, dev, list(r.faces))
            elif isinstance(r, DiceNotFlat):
                self._not_flat(t, g, d, dev, r)
            elif isinstance(r, ShakerFault):
                self._fault(t, g, d, dev, r)
        elif isinstance(inp, Command):
            self._command(t, g, inp, d)

    def _command(self, t: TableState, g: DiceState, c: Command, d: Decision) -> None:
        if c.name != "round.resume":
            self.round_command(t, g, c, d)
            return
        if g.phase != "paused":
            d.refused = f"no round is paused (the table is {self.phase_text(g)})"
            return
        d.add("round.resumed", round=g.round, by=c.actor, alarm=g.pause_alarm, rule=R_RESHAKE)
        if g.pause_alarm is not None and g.pause_alarm in d.state().alarms:
            d.add("alarm.cleared", id=g.pause_alarm, by=c.actor, reason="round resumed")

    # ======================================================================= apply

    def apply(self, g: DiceState, type_: str, data: dict[str, Any]) -> DiceState:
        rep = msgspec.structs.replace
        if type_ == "dice.shaking":
            return rep(g, phase="shaking", shakes=g.shakes + 1)
        if type_ == "dice.reshake":
            return rep(g, phase="closed", reshakes=g.reshakes + 1)
        if type_ == "dice.rejected" and data["reason"] == "invalid":
            return rep(g, phase="closed")
        out: DiceState = super().apply(g, type_, data)
        return out
