"""The shoe game: every shoe procedure joined into the one game class a shoe game subclasses."""

from __future__ import annotations

from typing import Any, ClassVar

from daemon.games.describe import Describer
from daemon.procedures.shoe.apply import apply
from daemon.procedures.shoe.commands import COMMANDS, ShoeCommands
from daemon.procedures.shoe.correct import ShoeCorrections, corrected
from daemon.procedures.shoe.dealing import ShoeDealing
from daemon.procedures.shoe.describe import ShoeDescriber
from daemon.procedures.shoe.errors import DealerErrors
from daemon.procedures.shoe.shuffler import SHUFFLER_READINGS, ShoeShuffler
from daemon.procedures.shoe.state import (
    HandRules,
    Held,
    ShoeRules,
    ShoeState,
)
from daemon.table import (
    Command,
    CommandSpec,
    Decision,
    DeviceHealth,
    DeviceReading,
    GameDefaults,
    Input,
    TableState,
)
from drivers.cards import shoe_composition
from drivers.readings import (
    CardDrawn,
    CardUnreadable,
    CutCardOut,
    ShoeInserted,
    ShoeRemoved,
)


class ShoeGame(
    ShoeCommands, ShoeShuffler, ShoeDealing, DealerErrors, ShoeCorrections, GameDefaults
):
    """A card game dealt from a shoe: the table's game for Baccarat and Dragon Tiger."""

    name: ClassVar[str]
    Rules: ClassVar[type[ShoeRules]] = ShoeRules
    State: ClassVar[type[ShoeState]] = ShoeState
    STATE_VERSION: ClassVar[int] = 2  # 2: the shoe's winners, for the roads
    hand_rules: ClassVar[HandRules]
    describe: ClassVar[Describer] = ShoeDescriber()
    commands: ClassVar[dict[str, CommandSpec]] = COMMANDS
    #: the rule a system-failure void cites: the game's own section of the seed
    system_failure_rule: ClassVar[str] = "seed 003 §2.1.8: a system failure voids the hand in play"

    def __init__(self, rules: ShoeRules) -> None:
        self.rules = rules
        self.full = shoe_composition(rules.decks)

    def initial(self) -> ShoeState:
        return ShoeState()

    def held_alarm(self, s: ShoeState) -> str | None:
        """The alarm a paused hand waits on, which only its own commands may settle."""
        return s.pause_alarm if s.paused in ("card-entry", "decision") else None

    def summary(self, s: ShoeState) -> dict[str, Any]:
        """The game state as a technician reads it (``tablectl status``)."""
        return {
            "phase": s.phase,
            "text": self.phase_text(s),
            "shoe": s.shoe,
            "hand": s.hand,
            "cards": {k: list(v) for k, v in s.boxes.items()},
            "cards_out": s.out,
            "cards_left": self.rules.decks * 52 - s.out,
            "decks": self.rules.decks,
            "cut_card": self.rules.cut_card,
            "cut_card_out": s.cut_card_out,
            "last_hand": s.last_hand,
            "paused": s.paused,
            "results": s.results,
        }

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        s: ShoeState = t.game
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, CardDrawn):
                self.decide_piece(
                    t,
                    s,
                    d,
                    Held(
                        card=r.card,
                        device=dev,
                        face_up=r.face_up,
                        claimed_box=r.box,
                        code=r.frame.decode("ascii", "replace"),
                    ),
                )
            elif isinstance(r, CardUnreadable):
                self.decide_piece(t, s, d, Held(card=None, device=dev, code=r.code))
            elif isinstance(r, CutCardOut):
                self._cut_card(t, s, d, source=dev)
            elif isinstance(r, ShoeRemoved):
                d.add("shoe.removed", shoe=s.shoe, device=dev)
            elif isinstance(r, ShoeInserted):
                d.add("shoe.inserted", shoe=s.shoe, device=dev)
            elif isinstance(r, SHUFFLER_READINGS):
                self._shuffler(t, s, d, dev, r)
        elif isinstance(inp, Command):
            self._command(t, s, inp, d)
        elif isinstance(inp, DeviceHealth) and inp.device in s.readers:
            self._reader_health(t, s, d, inp)

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 §2.1.8: when the house says so, a system failure voids the hand in play."""
        s: ShoeState = t.game
        if self.rules.system_failure_voids_hand and s.phase in ("dealing", "paused"):
            self._void_hand(
                t,
                s,
                d,
                reason="system-failure",
                by="table",
                rule=self.system_failure_rule,
            )

    def apply(self, s: ShoeState, type_: str, data: dict[str, Any]) -> ShoeState:
        if type_ == "result.corrected":
            return corrected(s, data)
        return apply(self.rules, self.hand_rules.boxes, s, type_, data)
