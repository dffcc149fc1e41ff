"""The blackjack table (seed 003 part III): the round as decide over the shoe procedures.

Every shoe procedure — start burn, cut card (4 decks from the back, §3.3),
unreadable card, face-up card, card inventory, voids, card before betting
closed, system failure — is :class:`~daemon.procedures.shoe.ShoeGame`'s; the
blackjack round plugs into its public hooks (``docs/architecture.md``, "A game
dealt from a shoe"), one module per job:

    state.py     the house rules, the round's state and its apply (one event folded in)
    expects.py   what the table waits for next (the ``expects`` hook): order of play, decisions allowed
    dealing.py   the ``place`` hook: each card to the box that is next; the hole card sealed
    errors.py    the ``card_between_hands`` and ``void_data`` hooks, dealer errors
    commands.py  the ``command`` hook: the boxes' decisions, insurance, the peek, the timeout
    settle.py    the reveal and the settlement of every box
    commitments.py  the hole card's commitment, and the check that its secret rows open it
    clock.py     the demo's virtual players (the decision clock is the procedures')
    table.py     this class: the hooks joined, the steps that need no one, apply, the views

After every input the table publishes what it expects next (``table.expects``),
the one thing a dealer display, the stack light and ``tablectl monitor`` follow.
The hole card is journaled as a secret and published only as a commitment until
it is turned over (``docs/decisions.md``).
"""

from __future__ import annotations

import secrets
from typing import Any, ClassVar

import msgspec
from tabled_client.base import Data

from daemon.games.blackjack import dealing, errors
from daemon.games.blackjack.commands import COMMANDS
from daemon.games.blackjack.commands import command as round_command
from daemon.games.blackjack.commitments import check_secrets, commitment
from daemon.games.blackjack.describe import BlackjackDescriber
from daemon.games.blackjack.events import EVENTS
from daemon.games.blackjack.expects import expects
from daemon.games.blackjack.settle import public_round, reveal, settle
from daemon.games.blackjack.state import BlackjackRules, BlackjackState, Round, apply_round
from daemon.games.describe import Describer
from daemon.procedures.shoe import Held, ShoeGame, ShoeRules, ShoeState
from daemon.procedures.shoe.apply import took_out
from daemon.table import Command, CommandSpec, Decision, DeviceReading, Input, TableState
from drivers.cards import CardError
from drivers.cards import card as parse_card
from drivers.readings import CardDrawn

__all__ = ["BlackjackRules", "BlackjackTable", "commitment"]


class _NoHands:
    """The shoe procedures' hand plug, unused: blackjack places its own cards (:mod:`.dealing`)."""

    boxes: ClassVar[tuple[str, ...]] = ()


_UNKNOWN: Any = object()


def _copy(exp: dict[str, Any]) -> dict[str, Any]:
    """An answer of :func:`expects` that shares no list with ``exp``."""
    return {k: list(v) if isinstance(v, list) else v for k, v in exp.items()}


class BlackjackTable(ShoeGame):
    name: ClassVar[str] = "blackjack"
    Rules: ClassVar[type[ShoeRules]] = BlackjackRules
    State: ClassVar[type[ShoeState]] = BlackjackState
    hand_rules: ClassVar[Any] = _NoHands()
    #: the waits the table numbers (``turn``) and the decision clock times
    numbered: ClassVar[frozenset[str]] = frozenset({"decision", "insurance"})

    describe: ClassVar[Describer] = BlackjackDescriber()
    #: its own event types (``events.py``: the client carries them for backends)
    events: ClassVar[dict[str, type[Data]]] = EVENTS
    #: ``tablectl verify`` and the start: the hole cards' secret rows against their commitments
    check_secrets = staticmethod(check_secrets)
    commands: ClassVar[dict[str, CommandSpec]] = COMMANDS
    system_failure_rule: ClassVar[str] = (
        "seed 003 part III §2.1.5: a system failure voids the round in play"
    )
    #: ``result.correct`` (``daemon/table/corrections.py``): a box's cards follow the players'
    #: decisions, which a corrected card would have changed; a wrong blackjack hand is voided
    corrections_refused: ClassVar[str] = (
        "a blackjack hand is not corrected: each box's cards follow its player's decisions, "
        "which a corrected card would have changed; void the hand instead (seed 002's "
        "dealer-error rules)"
    )

    def __init__(self, rules: ShoeRules) -> None:
        super().__init__(rules)
        self.rules: BlackjackRules = rules  # type: ignore[assignment]
        #: the key the hole card's salt is derived from; random per process, fixed for replays
        self.salt_key = secrets.token_bytes(32)
        #: :meth:`expects`' last answers, by phase and round
        self._expects_memo: dict[tuple[str, Any], dict[str, Any] | None] = {}

    def initial(self) -> BlackjackState:
        return BlackjackState()

    # ============================================================ the hooks

    def expects(self, s: ShoeState) -> dict[str, Any] | None:
        """What the table waits for now (:func:`.expects.expects`), as ``table.expects`` publishes it.

        A function of the phase and the round alone, asked three or four times an input
        (before, each step of the advance, after, the card's placement): kept by their
        value for the last few, and each caller gets its own copy.
        """
        key = (s.phase, getattr(s, "round", None))
        memo = self._expects_memo
        got = memo.get(key, _UNKNOWN)
        if got is _UNKNOWN:
            got = expects(self.rules, s)
            if len(memo) >= 8:
                memo.clear()
            memo[key] = got
        return None if got is None else _copy(got)

    def turn(self, s: ShoeState) -> int:
        rd: Round | None = getattr(s, "round", None)
        return 0 if rd is None else rd.turn

    def place(self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]) -> None:
        dealing.place(self, t, s, d, h, at)

    def card_between_hands(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
    ) -> None:
        errors.between_hands(self, t, s, d, h, at)

    def command(self, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
        round_command(self, t, s, c, d)

    def void_data(self, s: ShoeState) -> dict[str, Any]:
        return errors.void_data(s)

    def advance(self, d: Decision) -> None:
        """The steps that need no one: the reveal once every box is done, the dealer standing."""
        for _ in range(4):
            t: TableState = d.state()
            s = t.game
            rd: Round | None = getattr(s, "round", None)
            if rd is None or s.phase != "dealing":
                return
            if rd.step == "play" and self.expects(s) is None:
                reveal(s, rd, d)
                continue
            if rd.step == "dealer":
                exp = self.expects(s)
                if exp is not None and exp["expects"] == "dealer-stands":
                    d.add("table.expects", shoe=s.shoe, hand=s.hand, **exp)
                    settle(self.rules, s, rd, d)
            return

    # ============================================================ apply

    def apply(self, s: ShoeState, type_: str, data: dict[str, Any]) -> ShoeState:
        rep = msgspec.structs.replace
        if type_ == "card.dealt" and data.get("box") not in ("burn", "void"):
            # the hole card is counted out of the shoe from its secret part
            s = took_out(s, data.get("card") or (data.get("secret") or {}).get("card"), data)
            return rep(s, round=apply_round(s.round, type_, data, self.rules))  # type: ignore[attr-defined]
        out = super().apply(s, type_, data)
        rd = apply_round(out.round, type_, data, self.rules)
        if type_ in ("hand.void", "shoe.started", "shoe.void"):
            rd = None
        if rd is not out.round:
            out = rep(out, round=rd)
        return out

    def helpers(self, submit: Any, state: Any) -> list[Any]:
        """The decision clock, and with ``virtual_players`` the demo's game server (:mod:`.clock`)."""
        from daemon.games.blackjack.clock import VirtualPlayers
        from daemon.procedures.clock import DecisionClock

        out: list[Any] = [DecisionClock(submit, state, self)]
        if self.rules.virtual_players:
            out.append(VirtualPlayers(submit, state, self))
        return out

    def secret_in_play(self, s: ShoeState) -> bool:
        """From no more bets to the reveal a hole card is, or may be about to be, face down."""
        rd: Round | None = getattr(s, "round", None)
        return rd is not None and s.phase in ("dealing", "paused") and not rd.revealed

    def sealed_words(self, before: ShoeState, inp: Input | None, after: ShoeState) -> set[str]:
        """What may be the hole card in this decision, sealed wherever it is quoted.

        The reading that is dealt as the hole card is it. While the hole card is still to
        be dealt, any card waiting for a supervisor (held behind an unreadable one, held
        as suspect or beyond the shoe's inventory, the unreadable one's code) may be it,
        and so may the card a supervisor enters for it.
        Chosen by where a value came from, never by its value: whether an event is sealed
        says nothing about the hole card. Once dealt, it is a commitment (:mod:`.dealing`).
        """
        words: set[str] = set()
        dealt = getattr(after, "round", None)
        if (
            isinstance(inp, DeviceReading)
            and isinstance(inp.reading, CardDrawn)
            and dealt is not None
            and dealt.commitment is not None
            and getattr(getattr(before, "round", None), "commitment", None) is None
        ):
            # this reading is the hole card, dealt face down now: whatever else quotes it
            r = inp.reading
            words.update((r.card, r.frame.decode("ascii", "replace").strip()))
        for s in (before, after):
            rd: Round | None = getattr(s, "round", None)
            if rd is None or rd.commitment is not None or not self.secret_in_play(s):
                continue
            for h in s.held:
                words.update(w for w in (h.card, h.code) if w)
            if s is before and s.held and isinstance(inp, Command) and inp.name == "card.enter":
                text = str(inp.args.get("card", ""))
                words.add(text)
                try:
                    words.add(parse_card(text))
                except CardError:
                    pass
        return words

    # ============================================================ views

    def summary(self, s: ShoeState) -> dict[str, Any]:
        """``tablectl status`` and the simulator's resume: never the hole card before its reveal."""
        out = super().summary(s)
        out["cards"] = {}
        rd: Round | None = getattr(s, "round", None)
        out["round"] = None if rd is None else public_round(rd)
        return out
