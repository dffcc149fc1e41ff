"""The shoe game: every shoe procedure joined into the one game class a shoe game subclasses.

A game builds on it with its public hooks, each a method with the shoe games' default
(``docs/architecture.md``, "A game dealt from a shoe"): ``place`` (a card of the hand in
play), ``card_between_hands`` (a card out of turn between hands), ``command`` (its own
commands, the rest to ``shoe_command``), ``expects``/``numbered``/``turn`` (what the
table waits for, published as ``table.expects``), ``advance`` (the steps that need no
one), ``void_data`` (what its ``hand.void`` adds), ``carry`` (its own state across a new
shoe) and ``result_type`` (the event that settles a hand). The machinery they use is
public too: ``origin``, ``set_aside``, ``void_hand``, ``phase_text``,
:func:`~.cut_card.end_shoe_after`, :func:`~.apply.took_out`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from daemon.games.describe import Describer
from daemon.procedures.shoe.apply import apply
from daemon.procedures.shoe.commands import COMMANDS, ShoeCommands
from daemon.procedures.shoe.correct import ShoeCorrections, corrected
from daemon.procedures.shoe.cut_card import ShoeCutCard
from daemon.procedures.shoe.dealing import ShoeDealing
from daemon.procedures.shoe.describe import ShoeDescriber
from daemon.procedures.shoe.errors import DealerErrors
from daemon.procedures.shoe.expects import publish
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
    ShoeCommands,
    ShoeShuffler,
    ShoeDealing,
    ShoeCutCard,
    DealerErrors,
    ShoeCorrections,
    GameDefaults,
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

    #: the event that settles a hand (the default ``place`` publishes ``hand.result``; a game
    #: that places its own cards may settle with an event type of its own)
    result_type: ClassVar[str] = "hand.result"
    #: the kinds of ``expects`` answer that are waits the table numbers (``turn``)
    numbered: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, rules: ShoeRules) -> None:
        self.rules = rules
        self.full = shoe_composition(rules.decks)
        # a game that answers ``expects`` has it asked around every input; others never
        self._expecting = type(self).expects is not ShoeGame.expects

    def initial(self) -> ShoeState:
        return self.State()

    # ------------------------------------------------ hooks: a game may override these

    def expects(self, s: ShoeState) -> dict[str, Any] | None:
        """Hook: what the table waits for now (:mod:`daemon.procedures.shoe.expects`); the
        shoe games wait for nothing a device does not report by itself."""
        return None

    def turn(self, s: ShoeState) -> int:
        """Hook: the number of the last wait published (folded from ``table.expects``)."""
        return 0

    def advance(self, d: Decision) -> None:
        """Hook: after an input's events, the steps that need no one (blackjack's reveal)."""

    def command(self, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
        """Hook: one command; a game handles its own and hands the rest to ``shoe_command``."""
        self.shoe_command(t, s, c, d)

    def void_data(self, s: ShoeState) -> dict[str, Any]:
        """Hook: what the game's ``hand.void`` says beside the shoe's fields (default: nothing)."""
        return {}

    def carry(self, s: ShoeState) -> dict[str, Any]:
        """Hook: the game's own state a new shoe keeps (default: every field of the game's
        ``State`` that is not the shoe's, as it is; the shoe's own start afresh)."""
        own = (f for f in s.__struct_fields__ if f not in ShoeState.__struct_fields__)
        return {f: getattr(s, f) for f in own}

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
            "expects": self.expects(s),
        }

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        if not self._expecting:
            self._decide(t, inp, d)
            return
        before = self.expects(t.game)
        self._decide(t, inp, d)
        if d.refused is not None or not d.drafts:
            return
        self.advance(d)
        publish(self, before, d)

    def _decide(self, t: TableState, inp: Input, d: Decision) -> None:
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
            self.command(t, s, inp, d)
        elif isinstance(inp, DeviceHealth) and inp.device in s.readers:
            self._reader_health(t, s, d, inp)

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 §2.1.8: when the house says so, a system failure voids the hand in play."""
        s: ShoeState = t.game
        if self.rules.system_failure_voids_hand and s.phase in ("dealing", "paused"):
            self.void_hand(
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
        out = apply(self.rules, self.hand_rules.boxes, s, type_, data, self.result_type)
        if type_ == "shoe.started" and type(s) is not ShoeState:
            return type(s)(**msgspec.structs.asdict(out), **self.carry(s))
        return out
