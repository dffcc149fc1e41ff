"""The cut card: which hand is the shoe's last, and the shoe ended after it (seed 000/001 art. 3.1)."""

from __future__ import annotations

from daemon.procedures.shoe.state import ShoeParts, ShoeState
from daemon.table import Decision, TableState, raise_alarm

R_LAST_HAND = "seed 000/001 art. 3.1: the cut card's hand was the last"


def end_shoe_after(
    s: ShoeState, d: Decision, hand: int, *, cards_out: int, rule: str = R_LAST_HAND
) -> None:
    """Hand ``hand`` is over (settled or void): when the cut card made it the last, so is the shoe."""
    if s.last_hand is not None and hand >= s.last_hand:
        d.add(
            "shoe.ended", shoe=s.shoe, hands=hand, reason="cut-card", cards_out=cards_out, rule=rule
        )


class ShoeCutCard(ShoeParts):
    """The cut card reported by the shoe or a dealer: the last hand it makes, or an alarm."""

    def _cut_card(self, t: TableState, s: ShoeState, d: Decision, source: str) -> None:
        if self.rules.continuous_shuffler or s.phase in ("no-shoe", "shoe-ended") or s.cut_card_out:
            why = (
                "a continuous shuffler has no cut card (seed 000/001 art. 2.3)"
                if self.rules.continuous_shuffler
                else "no shoe is in play"
                if s.phase == "no-shoe"
                else "the cut card is already out"
                if s.cut_card_out
                else f"shoe {s.shoe} has already ended"
            )
            raise_alarm(
                t,
                d,
                "cut-card-unexpected",
                f"cut card reported but {why}",
                rule="one cut card per shoe",
                action="check the shoe and the report's source",
                severity="warning",
                device=source,
            )
            return
        if s.phase in ("dealing", "paused") and self.rules.cut_card_rule == "last-hand":
            last, why = (
                s.hand,
                "seed 000/001 art. 3.1: the hand in which the cut card appears is the last",
            )
        elif s.phase in ("dealing", "paused"):
            last, why = s.hand + 1, "house rule one-more-hand: one more hand after the cut card's"
        else:
            # seed 000/001 art. 3.1: a cut card between hands (betting open for the next hand
            # included: none of its cards is out) belongs to the next hand
            nxt = s.hand if s.phase == "betting" else s.hand + 1
            if self.rules.cut_card_rule == "last-hand":
                last = nxt
                why = "seed 000/001 art. 3.1: a cut card between hands makes the next hand the last"
            else:
                last = nxt + 1
                why = (
                    "seed 000/001 art. 3.1: a cut card between hands belongs to the next hand; "
                    "house rule one-more-hand: one more hand after it"
                )
        d.add(
            "shoe.cut_card",
            shoe=s.shoe,
            hand=s.hand,
            last_hand=last,
            source=source,
            rule=why,
            cards_out=s.out,
        )
