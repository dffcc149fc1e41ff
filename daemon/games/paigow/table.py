"""The Mahjong Pai Gow round: betting, the dice, twelve tiles, the result. Pure decide/apply.

The rules of hands are :mod:`daemon.games.paigow.rules`; this package is the
round's procedure. Tiles come from a tile reader (``drivers/tile_line.py``
or any driver speaking :mod:`drivers.tile_readings`), the dice from a
shaker speaking :mod:`drivers.dice_readings` or entered by the dealer.
Every rule names its source (seed 002, 麻雀排九; ``ours`` or ``house
procedure`` where the seeds are silent); ``docs/procedures.md`` lists them.
One module per job: ``state.py`` (house rules, state, rule texts), ``dice.py``
(the throw that decides who is dealt first), ``tiles.py`` (the twelve tiles
and the result), this one (the game: decide, commands, apply); betting, voids
and the round's counters are the round procedure's (:mod:`daemon.procedures.round`).

Phases::

    settling ─open─▶ betting ─close─▶ closed ─dice─▶ dealing ─12th tile─▶ settling
                                                       │  ▲
                     unreadable, foreign or over-count ▼  │ tile entered
                                                      paused
    (a void from any phase of a round goes back to settling)

The round number counts every round the table ever opened and never resets.
The tile set is shuffled before every round (seed 002: 游戏开始前, 需将20张牌洗干净),
so a tile's count in the set is checked within one round.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec
from tabled_client.base import Data

from daemon.games.describe import Describer
from daemon.games.paigow import rules
from daemon.games.paigow.correct import PaiGowCorrections
from daemon.games.paigow.describe import PaiGowDescriber
from daemon.games.paigow.dice import PaiGowDice
from daemon.games.paigow.events import EVENTS
from daemon.games.paigow.state import IN_ROUND, Held, PaiGowRules, PaiGowState
from daemon.games.paigow.tiles import PaiGowTiles
from daemon.procedures.round import round_commands
from daemon.table import (
    Arg,
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
from drivers.tile_readings import TileDrawn, TileUnreadable

__all__ = ["PaiGowRules", "PaiGowTable"]


class PaiGowTable(PaiGowTiles, PaiGowDice, PaiGowCorrections, GameDefaults):
    """A Mahjong Pai Gow table: a banker and five player positions (seed 002, 麻雀排九)."""

    name: ClassVar[str] = "paigow"
    Rules: ClassVar[type[PaiGowRules]] = PaiGowRules
    State: ClassVar[type[PaiGowState]] = PaiGowState
    STATE_VERSION: ClassVar[int] = 1
    describe: ClassVar[Describer] = PaiGowDescriber()
    #: its own event types (``events.py``: the client carries them for backends)
    events: ClassVar[dict[str, type[Data]]] = EVENTS
    held_help: ClassVar[str] = (
        "it clears when the tile is entered (`tablectl tile 9p`) or the round is voided "
        "(`tablectl void round --reason …`)"
    )
    result_type: ClassVar[str] = "round.result"
    resumes_to: ClassVar[str] = "dealing"
    restart_voids: ClassVar[tuple[str, ...]] = ("closed", "dealing", "paused")
    in_round: ClassVar[tuple[str, ...]] = IN_ROUND

    commands: ClassVar[dict[str, CommandSpec]] = {
        **round_commands("no more bets: the dice may be thrown"),
        "dice.enter": spec(
            "enter the dice thrown by hand: dice 3 5 6",
            "dealer",
            "supervisor",
            words=("dice",),
            args=tuple(Arg(f"die{n}", f"die {n}, 1–6", type=int) for n in (1, 2, 3)),
            more=(Arg("faces", "the three dice as one list (a game server's)", kind="list"),),
        ),
        "tile.enter": spec(
            "enter the tile the reader could not read (9p, wd)",
            "supervisor",
            words=("tile",),
            args=(Arg("tile", "the tile: 1p–9p, wd"),),
        ),
    }

    def held_alarm(self, g: PaiGowState) -> str | None:
        """The alarm a paused round waits on, which only its own commands may settle."""
        return g.pause_alarm if g.phase == "paused" else None

    def summary_data(self, g: PaiGowState) -> dict[str, Any]:
        return {
            "dice": list(g.dice),
            "tiles": list(g.tiles),
            "tiles_dealt": len(g.tiles),
            "next_position": g.order[len(g.tiles)] if len(g.tiles) < len(g.order) else None,
        }

    def phase_texts(self, g: PaiGowState) -> dict[str, str]:
        return {
            "closed": f"round {g.round}: no more bets, waiting for the dice",
            "dealing": f"round {g.round}: dealing tile {len(g.tiles) + 1} of {rules.ROUND_TILES}",
            "paused": f"round {g.round} paused ({g.paused}) until a supervisor enters the tile "
            "or voids the round",
        }

    def void_data(self, g: PaiGowState) -> dict[str, Any]:
        return {"dice": list(g.dice), "tiles": list(g.tiles)}

    # ====================================================================== decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        g: PaiGowState = t.game
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, TileDrawn):
                self.decide_piece(t, g, d, Held(r.tile, r.tile, dev))
            elif isinstance(r, TileUnreadable):
                self.decide_piece(t, g, d, Held(None, r.code, dev))
            elif isinstance(r, DiceShaking):
                self._shaking(g, d, dev, r)
            elif isinstance(r, DiceResult):
                self._dice(t, g, d, list(r.faces), device=dev)
            elif isinstance(r, DiceNotFlat):
                self._not_flat(g, d, dev, r)
            elif isinstance(r, ShakerFault):
                self._fault(t, g, d, dev, r)
        elif isinstance(inp, Command):
            self._command(t, g, inp, d)

    def _command(self, t: TableState, g: PaiGowState, c: Command, d: Decision) -> None:
        if c.name == "dice.enter":
            dice = [c.args.get(f"die{n}") for n in (1, 2, 3)]
            faces = _faces(
                c.args["faces"] if "faces" in c.args else [x for x in dice if x is not None]
            )
            why = "no faces given" if faces is None else rules.dice_problem(faces)
            if why is not None:
                d.refused = f"not a throw of three dice: {why} (e.g. `tablectl dice 3 5 6`)"
                return
            assert faces is not None
            if g.phase != "closed":
                d.refused = (
                    f"the dice are entered after no more bets (the table is {self.phase_text(g)})"
                )
                return
            self._dice(t, g, d, faces, entered_by=c.actor)
        elif c.name == "tile.enter":
            self._enter(t, g, c, d)
        else:
            self.round_command(t, g, c, d)

    # ======================================================================= apply

    def apply(self, g: PaiGowState, type_: str, data: dict[str, Any]) -> PaiGowState:
        rep = msgspec.structs.replace
        if type_ == "round.dice":
            return rep(
                g, phase="dealing", dice=tuple(data["faces"]), order=tuple(data["deal_order"])
            )
        if type_ == "tile.dealt":
            return rep(g, tiles=(*g.tiles, data["tile"]))
        if type_ == "tile.held":
            return rep(g, held=(*g.held, Held(data["tile"], data["code"], data["device"])))
        if type_ == "round.paused":
            g = rep(g, held=(Held(data["tile"], data["code"], data["device"]),))
        elif type_ in ("round.resumed", "round.result", "round.void"):
            # a round that goes on or ends holds no tile; how the last one ended is kept
            g = rep(g, held=())
            if type_ != "round.resumed":
                g = rep(g, last="result" if type_ == "round.result" else "void")
        out: PaiGowState = super().apply(g, type_, data)
        return out


def _faces(raw: object) -> list[int] | None:
    """``"3 5 6"``, ``"3,5,6"`` or a list, as typed by a dealer; None when it is no numbers."""
    parts = raw if isinstance(raw, list) else str(raw).replace(",", " ").split()
    try:
        return [int(p) for p in parts] if parts else None
    except (TypeError, ValueError):
        return None
