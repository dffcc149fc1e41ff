"""Pai Gow's dice: thrown after no more bets, their total decides who is dealt first (seed 002).

From the shaker (:mod:`drivers.dice_readings`) or entered by the dealer
(``tablectl dice 3 5 6``). A throw that cannot be used — not three faces
1–6, while betting is open, a second throw, none in play — is a
``dice.rejected`` with its alarm, never the round's dice.
"""

from __future__ import annotations

from daemon.games.paigow import rules
from daemon.games.paigow.state import (
    IN_ROUND,
    R_CLOSE,
    R_DICE,
    R_DICE_AGAIN,
    R_DICE_EARLY,
    R_DICE_INVALID,
    R_FAULT,
    R_OUTSIDE,
    R_RESHAKE,
    PaiGowRules,
    PaiGowState,
)
from daemon.procedures.round import RoundGame
from daemon.table import Decision, TableState, device_fault, raise_alarm
from drivers.dice_readings import DiceNotFlat, DiceShaking, ShakerFault


class PaiGowDice(RoundGame):
    """The dice of a Pai Gow round, each report with its procedure."""

    rules: PaiGowRules

    def _shaking(self, g: PaiGowState, d: Decision, dev: str, r: DiceShaking) -> None:
        if g.phase == "betting":
            self.close_by_shaker(d, g, dev, R_CLOSE)

    def _not_flat(self, g: PaiGowState, d: Decision, dev: str, r: DiceNotFlat) -> None:
        if g.phase in ("betting", "closed"):
            self.reshake(d, g, dev, r, R_RESHAKE)

    def _dice(
        self,
        t: TableState,
        g: PaiGowState,
        d: Decision,
        faces: list[int],
        *,
        device: str | None = None,
        entered_by: str | None = None,
    ) -> None:
        why = rules.dice_problem(faces)
        if g.phase == "closed" and why is None:
            first = rules.first_position(faces)
            d.add(
                "round.dice",
                round=g.round,
                faces=faces,
                total=sum(faces),
                first=first,
                deal_order=list(rules.deal_order(first, self.rules.deal)),
                device=device,
                entered_by=entered_by,
                rule=R_DICE,
            )
            return
        src = device or entered_by or "?"
        if g.phase == "closed":
            kind, reason, rule = "dice-result-invalid", "invalid", R_DICE_INVALID
            action = "the dice are thrown again; if it repeats, check the shaker's recognition"
        elif g.phase == "betting":
            kind, reason, rule = "dice-before-betting-closed", "betting-open", R_DICE_EARLY
            action = "not counted: the dice are thrown again after no more bets"
        elif g.phase in ("dealing", "paused"):
            kind, reason, rule = "dice-already-thrown", "already-thrown", R_DICE_AGAIN
            action = "not counted; the round goes on with its first throw"
        else:
            kind, reason, rule = "dice-outside-round", "no-round", R_OUTSIDE
            action = "not counted; check who threw the dice"
        round_ = g.round if g.phase in IN_ROUND else None
        aid = raise_alarm(
            t,
            d,
            kind,
            f"{src} reported the dice {faces}" + (f": {why}" if why else ""),
            rule=rule,
            action=action,
            severity="warning",
            device=device,
            round=round_,
            faces=faces,
        )
        self.dice_rejected(d, round_, device, faces, reason, why or "", aid, rule)

    def _fault(self, t: TableState, g: PaiGowState, d: Decision, dev: str, r: ShakerFault) -> None:
        device_fault(
            t,
            d,
            dev,
            r.code,
            r.meaning,
            rule=R_FAULT,
            action="throw the dice by hand and enter them (`tablectl dice A B C`); a technician "
            "repairs the shaker and clears this alarm",
            round=g.round if g.phase in IN_ROUND else None,
        )
