"""Cards from the shoe: burn, demonstration hands, the hand's boxes, extra cards, the cut card."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from daemon.journal.events import draft
from daemon.procedures import hold
from daemon.procedures.hold import READ, HoldEvents, Origin
from daemon.procedures.paytable import in_force
from daemon.procedures.shoe import roads
from daemon.procedures.shoe.cut_card import end_shoe_after
from daemon.procedures.shoe.state import (
    Held,
    ShoeParts,
    ShoeState,
    burn_count,
)
from daemon.table import (
    R_NOISE,
    Decision,
    TableState,
    line_noise_alarm,
    raise_alarm,
    raise_or_repeat,
)

R_FACE_UP = "seed 000/001 art. 4: a reversed card stands"


class ShoeDealing(ShoeParts):
    """Each card drawn is placed in shoe order; a card that cannot be placed pauses the hand
    (the hold procedure, :mod:`daemon.procedures.hold`, which Pai Gow's tiles follow too)."""

    hold_events: ClassVar[HoldEvents] = HoldEvents("card.held", "table.paused", "table.resumed")

    def held_data(self, s: ShoeState, h: Held, queued: int) -> dict[str, Any]:
        """``card.held``: the card as drawn, ``queued``-th in shoe order."""
        return {
            "shoe": s.shoe,
            "hand": s.hand,
            **msgspec.to_builtins(h),
            "position": queued,
            "reason": "waiting for the card before it",
        }

    def decide_piece(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, how: Origin = READ
    ) -> None:
        """One card drawn (or held, then entered or accepted): placed in shoe order, held
        behind a card that waits, paused for a supervisor, or out of play."""
        if hold.queued(self, s, d, h):
            return
        by, entered, accepted = how
        if h.card is None:
            self.pause_hand(
                t,
                s,
                d,
                "card-entry",
                [msgspec.to_builtins(h)],
                "card-unreadable",
                f"the shoe could not read a card (it sent {h.code!r})",
                rule="house procedure: a card is never guessed; a supervisor enters it",
                action="enter the card with `tablectl card <CODE>`, or `tablectl void hand`",
                device=h.device,
            )
            return
        if s.phase == "no-shoe" or s.phase == "shoe-ended":
            where = "no shoe is in play" if s.phase == "no-shoe" else f"shoe {s.shoe} has ended"
            # one alarm however many cards come (each counted on it); a new shoe clears it
            aid = raise_or_repeat(
                t,
                d,
                "card-out-of-play",
                f"card {h.card} drawn but {where}",
                rule="seed 000/001 art. 3.1: hands dealt after the last hand are invalid",
                action="set the card aside; start a new shoe with `tablectl shoe new`",
                device=h.device,
                card=h.card,
            )
            d.add(
                "card.rejected",
                shoe=s.shoe,
                card=h.card,
                device=h.device,
                reason="no-shoe" if s.phase == "no-shoe" else "after-last-hand",
                alarm=aid,
            )
            return
        # most cards: a table without alarms has no line-noise alarm to ask about
        noise = None if accepted or entered or not t.alarms else line_noise_alarm(t, h.device)
        if noise is not None:
            self.pause_hand(
                t,
                s,
                d,
                "decision",
                [msgspec.to_builtins(h)],
                "card-suspect",
                f"card {h.card} read by {h.device}, whose line is noisy (alarm {noise}): "
                "it may be noise",
                rule=R_NOISE,
                action="look at the card drawn: `tablectl card accept` if it is this card, "
                "`tablectl card <CODE>` if it is another, `tablectl void hand`",
                device=h.device,
                card=h.card,
            )
            return
        if (
            not accepted
            and not self.rules.continuous_shuffler
            and s.seen.get(h.card, 0) >= self.full[h.card]
        ):
            self.pause_hand(
                t,
                s,
                d,
                "decision",
                [msgspec.to_builtins(h)],
                "card-count-exceeded",
                f"card {h.card} would be copy {s.seen.get(h.card, 0) + 1} of {self.full[h.card]} "
                f"in a {self.rules.decks}-deck shoe",
                rule="shoe inventory (decks × 52): a card that should not exist (US 8511684)",
                action="check the card: `tablectl card <CODE>` corrects a misread, "
                "`tablectl card accept` takes it, `tablectl void hand` voids the hand",
                device=h.device,
                card=h.card,
            )
            return
        self._place(t, s, d, h, by=by, entered=entered)

    def _place(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, *, by: str | None, entered: bool
    ) -> None:
        """Assign one card in shoe order: burn, hand card, extra card or misdeal."""
        card = h.card
        assert card is not None
        at = self.origin(s, h, by=by, entered=entered)  # a fresh dict: the card goes on its end
        p = s.phase
        if p == "dealing" and not s.burn_incomplete and s.burn_due <= 0:
            self.place(t, s, d, h, at)  # the hand in play: the game's hook
            return
        at["card"] = card
        if h.face_up:
            at["face_up_rule"] = R_FACE_UP
        if p == "burning":
            if s.burn_first_pending:
                due = burn_count(card)
                d.add("card.dealt", hand=0, box="burn", position=1, exposed=True, **at)
                burned: tuple[str, ...] = (card,)
            else:
                due = s.burn_due - 1
                burned = (*s.burned, card)
                d.add("card.dealt", hand=0, box="burn", position=len(burned), **at)
            if due <= 0:
                d.add(
                    "shoe.burn",
                    shoe=s.shoe,
                    cards=list(burned),
                    count=len(burned),
                    rule=self._burn_rule(),
                )
        elif p == "betting":
            self.set_aside(
                t,
                d,
                at,
                {"hand": s.hand, "position": 0, "misdeal": True},
                "card-before-betting-closed",
                f"card {card} left the shoe while betting was open for hand {s.hand}",
                rule="seed 003 §2.1.6: a hand's first card leaves the shoe only after betting closed",
                action="`tablectl void hand` returns the bets; or clear the alarm: the card is "
                "set aside as a burn card and the hand goes on",
                device=h.device,
                card=card,
                hand=s.hand,
            )
        elif p == "demo" or (p == "settling" and s.demo):
            if not s.demo:
                d.add("hand.started", shoe=s.shoe, hand=s.demo_hand + 1, demo=True)
            self._deal(s, d, at, hand=s.demo_hand + (0 if s.demo else 1), demo=True)
        elif p == "settling":
            self.card_between_hands(t, s, d, h, at)
        elif p == "dealing":
            if s.burn_incomplete:
                d.add("card.dealt", hand=s.hand, box="void", position=1, **at)
                d.add(
                    "hand.void",
                    shoe=s.shoe,
                    hand=s.hand,
                    reason="burn-not-completed",
                    by="table",
                    rule="seed 002: a shoe dealt without its burn voids the hand and the shoe",
                    cards={},
                    demo=False,
                )
                d.add(
                    "shoe.void",
                    shoe=s.shoe,
                    reason="burn-not-completed",
                    by="table",
                    rule="seed 002: a new shoe is needed",
                )
            else:  # s.burn_due > 0 (a hand's card went to the hook above)
                d.add(
                    "card.dealt",
                    hand=s.hand,
                    box="burn",
                    position=self.rules.burn_between_hands - s.burn_due + 1,
                    rule="seed 000/001 art. 8; seed 002: burn before the hand",
                    **at,
                )

    # ------------------------------------------------ hooks: a game may override these

    def place(self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]) -> None:
        """Hook: a card of the hand in play (dealing, nothing left to burn), ``at`` its
        :meth:`origin`. The default deals it to the box ``hand_rules.next_box`` names and
        settles the hand with ``hand_rules.result`` once no box is due; a game whose dealing
        follows its players' decisions places it itself (``docs/architecture.md``)."""
        at["card"] = h.card
        if h.face_up:
            at["face_up_rule"] = R_FACE_UP
        self._deal(s, d, at, hand=s.hand, demo=False)

    def card_between_hands(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
    ) -> None:
        """Hook: a card drawn between hands, when none is due (``at``: its :meth:`origin` and
        ``card``). The default is seed 002's: the first extra card burns for the next hand,
        the second is its first card, a third is a dealing error set aside with an alarm."""
        n = s.extra + 1
        burns = max(1, self.rules.burn_between_hands)
        if n <= burns:
            d.add(
                "card.dealt",
                hand=s.hand + 1,
                box="burn",
                position=n,
                extra_card=True,
                rule="seed 002: an extra card drawn when none was due is the next hand's burn card",
                **at,
            )
        elif n == burns + 1:
            d.add(
                "card.dealt",
                hand=s.hand + 1,
                box=self.hand_rules.boxes[0],
                position=1,
                extra_card=True,
                carried=True,
                rule="seed 002: the second extra card is the next hand's first card",
                **at,
            )
        else:
            self.set_aside(
                t,
                d,
                at,
                {"hand": s.hand + 1, "position": n, "extra_card": True, "misdeal": True},
                "too-many-extra-cards",
                f"card {h.card} is extra card {n} drawn between hands",
                rule="seed 002 covers two extra cards; more is a dealing error (seed 000/001 art. 10)",
                action="a supervisor decides: clear the alarm to set the card aside, or "
                "`tablectl void shoe`",
                device=h.device,
                card=h.card,
            )

    # ------------------------------------------------ the machinery a game's hooks use

    @staticmethod
    def origin(s: ShoeState, h: Held, *, by: str | None, entered: bool) -> dict[str, Any]:
        """Where a card came from, as every ``card.dealt`` of it says (its place aside)."""
        at: dict[str, Any] = {
            "shoe": s.shoe,
            "shoe_position": s.out + 1,
            "device": h.device,
            "face_up": h.face_up,
        }
        if h.claimed_box is not None:
            at["claimed_box"] = h.claimed_box
        if entered:
            at["entered_by"] = by
        return at

    @staticmethod
    def set_aside(
        t: TableState,
        d: Decision,
        at: dict[str, Any],
        place: dict[str, Any],
        kind: str,
        message: str,
        **alarm: Any,
    ) -> None:
        """A card no one may have, burned with the alarm that says why (``place``: its
        ``card.dealt`` fields beside ``at``: hand, position, the flags that mark it)."""
        aid = raise_alarm(t, d, kind, message, **alarm)
        d.add("card.dealt", box="burn", alarm=aid, **place, **at)

    def _burn_rule(self) -> str:
        r = self.rules.start_burn
        if r == "first-card":
            return "seed 000/001 art. 2.1, seed 002, seed 004: the first card's value says how many to burn"
        if r == "decks":
            return "seed 000/001 art. 2.1: as many cards as decks"
        return f"house rule {r}"

    def _deal(
        self, s: ShoeState, d: Decision, at: dict[str, Any], *, hand: int, demo: bool
    ) -> None:
        hands = self.hand_rules
        boxes = s.boxes or {b: () for b in hands.boxes}
        box = hands.next_box(boxes)
        if box is None:
            return  # a complete hand is settled in the same decision; nothing is due
        if at.get("claimed_box") not in (None, box, "third"):
            at["order_rule"] = (
                "seed 002, seed 004 §5: shoe order decides, not where the card was put"
            )
        position = sum(map(len, boxes.values())) + 1
        # the draft's data built once (d.add would copy ``at`` into its keywords)
        d.drafts.append(
            draft(
                "card.dealt", {"hand": hand, "box": box, "position": position, "demo": demo, **at}
            )
        )
        after = {**boxes, box: (*boxes[box], at["card"])}
        if hands.next_box(after) is not None:
            return
        data = hands.result(after, self.rules, hand)
        data.update(shoe=s.shoe, hand=hand, demo=demo)
        if demo:
            d.add("hand.demo", **data)
            return
        # the scoreboards ride on the result, so an overlay draws them without the rules
        data["roads"] = roads.update((*s.board(), data["winner"]), hands.boxes)
        data["paytable"] = in_force(self.name, self.rules)
        d.drafts.append(draft("hand.result", data))  # ours, fresh: no copy into keywords
        end_shoe_after(s, d, hand, cards_out=s.out + 1)
