"""A round of a dice game: betting, the dice, the result, settling. Pure decide/apply.

Sic Bo's round and Pai Gow's (whose dice decide who is dealt first) share
this scaffolding; each game adds what happens between its dice and its
result. What they share, written once here:

- **Betting.** ``betting.open`` (from ``settling``; ``closes_in`` tells the
  croupier when to close), ``betting.close`` (from ``betting``), and a shaker
  that starts shaking while betting is open closes it at once (house
  procedure, as seed 003 §2.1.6: no more bets once the game is in motion).
- **The dice.** A throw stacked or leaning is thrown again (seed 002, 骰寳:
  ``dice.reshake``; bets stand); a claimed throw that cannot be used is a
  ``dice.rejected`` with the alarm that says why, never a result.
- **Voids.** ``round.void`` by a supervisor (bets returned) or the table; a
  void settles the alarms raised about its round, except the one that says
  why the table voided it; a system failure voids the round in play when the
  house says so (seed 003 §2.1.8, ``system_failure_voids_round``).
- **The state.** Every round game's state has ``phase`` (``settling`` between
  rounds, ``betting``, ``closed`` after no more bets, ``paused``, and its
  own), ``round`` (counts every round the table ever opened; never resets),
  ``paused``/``pause_alarm``, ``alarms`` (about the round in play), and the
  ``results``/``voids`` counters. The games keep their own ``State`` classes
  (their snapshots' shape), each with these fields.

A game builds on :class:`RoundGame` (its ``Rules`` subclass :class:`RoundRules`).
What it gives: ``result_type``, ``resumes_to``, ``restart_voids``, ``in_round``,
``phase_texts``, ``void_data`` and ``summary_data``. What it calls, the public
hooks (a game reaches no private name of the procedure,
``tests/test_procedure_privates.py``): ``round_command`` for the commands it does
not decide itself, ``close_by_shaker``, ``reshake``, ``dice_rejected`` and
``void_round`` from its own readings, and ``super().apply`` for the events it
does not fold itself (``docs/architecture.md``, "add a house procedure").
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec

from daemon.table import REASON, Command, CommandSpec, Decision, TableState, spec
from drivers.dice_readings import DiceNotFlat

R_SYSTEM = "seed 003 §2.1.8: a system failure voids the hand in play"
R_VOID = "house procedure: a supervisor voids the round; bets are returned"


class RoundRules(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """House rules every round game has; ``docs/procedures.md`` gives each one's source."""

    #: seed 003 §2.1.8: a system failure (daemon restart mid-round) voids the round in play.
    system_failure_voids_round: bool = False
    #: the croupier opens betting ``settle_seconds`` after a result and closes it after
    #: ``betting_seconds`` (None: people or backends open and close betting).
    betting_seconds: Annotated[float, msgspec.Meta(gt=0)] | None = None
    settle_seconds: Annotated[float, msgspec.Meta(ge=0)] = 3.0
    #: the paytable in force (None: the game's shipped default, ``docs/settlement.md``), and the
    #: house's own paytables by name (``[game.paytables.<name>]``: a bet spot = its ratio)
    paytable: str | None = None
    paytables: dict[str, dict[str, Any]] = {}


def round_commands(close_help: str) -> dict[str, CommandSpec]:
    """The commands of every round: open and close betting, void the round."""
    return {
        "betting.open": spec("open betting for the next round", "dealer", "supervisor"),
        "betting.close": spec(close_help, "dealer", "supervisor"),
        "round.void": spec(
            "void the round in play, bets returned",
            "supervisor",
            words=("void", "round"),
            args=(REASON,),
        ),
    }


class RoundGame:
    """The round's scaffolding; the game class subclasses it (``Rules``, ``State``, the rest)."""

    Rules: ClassVar[type[RoundRules]]
    State: ClassVar[type[Any]]
    STATE_VERSION: ClassVar[int] = 1
    #: the event that ends a round with a result (``dice.result``, ``round.result``)
    result_type: ClassVar[str]
    #: the phase a paused round goes back to when it resumes
    resumes_to: ClassVar[str]
    #: the phases a system failure voids (seed 003 §2.1.8), when the house says so
    restart_voids: ClassVar[tuple[str, ...]]
    #: the phases of a round in play, beside ``settling`` (their texts in ``phase_texts``)
    in_round: ClassVar[tuple[str, ...]]

    def __init__(self, rules: RoundRules) -> None:
        self.rules = rules

    def initial(self) -> Any:
        return self.State()

    # ------------------------------------------------------------------- how it reads

    def summary(self, g: Any) -> dict[str, Any]:
        """The game state as a technician reads it (``tablectl status``; the simulator's resume)."""
        return {
            "phase": g.phase,
            "text": self.phase_text(g),
            "round": g.round,
            **self.summary_data(g),
            "paused": g.paused,
            "results": g.results,
            "voids": g.voids,
        }

    def summary_data(self, g: Any) -> dict[str, Any]:
        """What the game's summary says of the round in play (its dice, tiles, shakes)."""
        return {}

    def phase_texts(self, g: Any) -> dict[str, str]:
        """The game's own phases as a technician reads them (``tablectl status``)."""
        return {}

    def phase_text(self, g: Any) -> str:
        return {
            "settling": "between rounds",
            "betting": f"taking bets for round {g.round}",
            **self.phase_texts(g),
        }[g.phase]

    # ------------------------------------------------------------------------- decide

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 §2.1.8: when the house says so, a system failure voids the round in play."""
        g = t.game
        if self.rules.system_failure_voids_round and g.phase in self.restart_voids:
            self.void_round(d, g, reason="system-failure", by="table", rule=R_SYSTEM)

    def round_command(self, t: TableState, g: Any, c: Command, d: Decision) -> None:
        """The round's commands (``round_commands``): a game decides its own commands and
        hands the rest here."""
        n, by = c.name, c.actor
        if n == "betting.open":
            if g.phase != "settling":
                d.refused = f"cannot open betting: the table is {self.phase_text(g)}"
                return
            # closes_in: the croupier closes betting this long after this event's time
            d.add("betting.opened", round=g.round + 1, by=by, closes_in=self.rules.betting_seconds)
        elif n == "betting.close":
            if g.phase != "betting":
                d.refused = f"betting is not open (the table is {self.phase_text(g)})"
                return
            d.add("betting.closed", round=g.round, by=by, source=c.source)
        elif n == "round.void":
            if g.phase not in self.in_round:
                d.refused = f"no round is in play to void (the table is {self.phase_text(g)})"
                return
            self.void_round(
                d, g, reason=str(c.args.get("reason") or "supervisor"), by=by, rule=R_VOID
            )

    @staticmethod
    def close_by_shaker(d: Decision, g: Any, dev: str, rule: str) -> Any:
        """The dice move while betting is open: no more bets, now. The state after it."""
        d.add("betting.closed", round=g.round, by=dev, source="shaker", rule=rule)
        return d.state().game

    @staticmethod
    def reshake(d: Decision, g: Any, dev: str, r: DiceNotFlat, rule: str) -> None:
        """seed 002, 骰寳: dice stacked or leaning are thrown again; the round and bets stand."""
        d.add(
            "dice.reshake",
            round=g.round,
            reshake=g.reshakes + 1,
            reason=r.reason,
            code=r.code,
            device=dev,
            rule=rule,
        )

    @staticmethod
    def dice_rejected(
        d: Decision,
        round_: int | None,
        dev: str | None,
        faces: list[int],
        reason: str,
        detail: str,
        alarm: str,
        rule: str,
    ) -> None:
        """A claimed throw on the record, never a result: why, and the alarm that says so."""
        d.add(
            "dice.rejected",
            round=round_,
            device=dev,
            faces=faces,
            reason=reason,
            detail=detail,
            alarm=alarm,
            rule=rule,
        )

    def void_data(self, g: Any) -> dict[str, Any]:
        """What the game's ``round.void`` says of the round besides why (dice, tiles, shakes)."""
        return {}

    def void_round(
        self, d: Decision, g: Any, *, reason: str, by: str, rule: str, keep: str | None = None
    ) -> None:
        about: tuple[str, ...] = d.state().game.alarms
        d.add("round.void", round=g.round, reason=reason, by=by, rule=rule, **self.void_data(g))
        # The void settles the alarms that were about this round (a bad claim, a pause),
        # except the one that says why the table voided it.
        active = d.state().alarms
        for a in about:
            if a != keep and a in active:
                d.add("alarm.cleared", id=a, by=by, reason="round voided")

    # -------------------------------------------------------------------------- apply

    def apply(self, g: Any, type_: str, data: dict[str, Any]) -> Any:
        """The round's own events; a game folds its other events before calling this."""
        rep = msgspec.structs.replace
        if type_ == "betting.opened":
            return self.State(
                round=data["round"], phase="betting", results=g.results, voids=g.voids
            )
        if type_ == "betting.closed":
            return rep(g, phase="closed")
        if type_ == "dice.reshake":
            return rep(g, reshakes=g.reshakes + 1)
        if type_ == self.result_type:
            return rep(g, phase="settling", results=g.results + 1, alarms=())
        if type_ == "round.void":
            return rep(
                g, phase="settling", voids=g.voids + 1, paused=None, pause_alarm=None, alarms=()
            )
        if type_ == "round.paused":
            return rep(g, phase="paused", paused=data["reason"], pause_alarm=data["alarm"])
        if type_ == "round.resumed":
            return rep(g, phase=self.resumes_to, paused=None, pause_alarm=None)
        if (
            type_ == "alarm.raised"
            and g.phase in self.in_round
            and data.get("round") is not None
            and data["round"] == g.round
        ):
            return rep(g, alarms=(*g.alarms, data["id"]))
        return g
