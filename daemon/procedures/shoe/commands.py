"""The shoe game's operator commands: what each may do now, or why not."""

from __future__ import annotations

import msgspec

from daemon.procedures.shoe.state import (
    IN_HAND,
    ShoeParts,
    ShoeState,
)
from daemon.table import (
    REASON,
    Arg,
    Command,
    CommandSpec,
    Decision,
    TableState,
    spec,
)
from drivers.cards import CardError
from drivers.cards import card as parse_card

COMMANDS: dict[str, CommandSpec] = {
    "betting.open": spec("open betting for the next hand", "dealer", "supervisor"),
    "betting.close": spec("no more bets: the hand may be dealt", "dealer", "supervisor"),
    "shoe.new": spec("a new shoe is in (shuffled and cut)", "dealer", "supervisor"),
    "shoe.cut-card": spec("the cut card came out", "dealer", "supervisor", words=("cut-card",)),
    # It voids the hand when a card shows during betting (seed 004 §4; blackjack: the hole
    # card, §3.7), so the dealer role, which cannot void (the game server's role), sends it
    # only from the dealer's panel at the table (docs/security.md, Roles per command).
    "card.exposed": spec(
        "a card was exposed out of turn",
        "supervisor",
        words=("exposed",),
        args=(Arg("card", "the exposed card, e.g. KD, when it is known", required=False),),
        button_roles=("dealer",),
    ),
    "card.face-up": spec(
        "a card is face up in the shoe", "dealer", "supervisor", words=("face-up",)
    ),
    "card.enter": spec(
        "enter the card the shoe could not read",
        "supervisor",
        words=("card",),
        args=(Arg("card", "the card, e.g. KD"),),
    ),
    "card.accept": spec(
        "accept the card the integrity check held", "supervisor", words=("card", "accept")
    ),
    "hand.void": spec(
        "void the hand in play",
        "supervisor",
        words=("void", "hand"),
        args=(REASON,),
    ),
    "shoe.void": spec(
        "void the rest of the shoe",
        "supervisor",
        words=("void", "shoe"),
        args=(REASON,),
    ),
}


#: alarms a shoe causes that a new shoe settles
SHOE_ALARMS = frozenset({"card-out-of-play", "cut-card-unexpected", "too-many-extra-cards"})


class ShoeCommands(ShoeParts):
    """Operator, croupier and button commands: betting, shoe change, cards entered, voids."""

    def shoe_command(self, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
        """The shoe's own commands (:data:`COMMANDS`): a game's ``command`` hook hands on
        those it does not handle itself."""
        n, by = c.name, c.actor
        reason = str(c.args.get("reason") or "")
        if n == "betting.open":
            if s.phase not in ("settling", "burning", "demo") or (s.phase == "demo" and s.demo):
                d.refused = self._not_now(s, "open betting")
                return
            d.add(
                "betting.opened",
                shoe=s.shoe,
                hand=s.hand + 1,
                by=by,
                burn_incomplete=s.phase == "burning",
                # the croupier closes betting this long after this event's time: an overlay's
                # countdown (None: a person or a backend closes it)
                closes_in=self.rules.betting_seconds,
            )
        elif n == "betting.close":
            if s.phase != "betting":
                d.refused = f"betting is not open (the table is {self.phase_text(s)})"
                return
            d.add("betting.closed", shoe=s.shoe, hand=s.hand, by=by)
        elif n == "shoe.new":
            if s.phase in IN_HAND or s.demo:
                d.refused = self._not_now(s, "change the shoe") + (
                    "; finish or void the hand first (seed 000/001 art. 3.2: after any hand)"
                )
                return
            if s.phase != "no-shoe" and s.phase != "shoe-ended":
                d.add(
                    "shoe.ended",
                    shoe=s.shoe,
                    hands=s.hand,
                    reason="replaced",
                    by=by,
                    cards_out=s.out,
                    rule="seed 000/001 art. 3.2: the shoe may be replaced after any hand",
                )
            r = self.rules
            if r.require_shuffle and s.shuffle is None:
                d.refused = (
                    "no completed shuffle with the right card count is waiting: shuffle the "
                    "cards first (house rule require_shuffle)"
                )
                return
            # what the old shoe caused ends with it (journaled): cards after its last hand,
            # a cut card it did not expect, extra cards past seed 002's two
            for a in t.alarms.values():
                if a.kind in SHOE_ALARMS:
                    d.add(
                        "alarm.cleared", id=a.id, by=by, reason=f"a new shoe: shoe {s.shoe}'s alarm"
                    )
            d.add(
                "shoe.started",
                shuffle=s.shuffle,
                shoe=s.shoe + 1,
                decks=r.decks,
                # nothing to burn (a continuous shuffler, "none", "fixed:0") reads "none", so
                # the croupier opens betting for the first hand at once
                burn="none" if r.first_burn() == 0 else r.start_burn,
                cut_card=r.cut_card,
                demo_hands=r.demo_hands,
                continuous_shuffler=r.continuous_shuffler,
                by=by,
            )
        elif n == "shoe.cut-card":
            self._cut_card(t, s, d, source=by)
        elif n == "card.exposed":
            shown = str(c.args.get("card") or "") or None
            if shown is not None:
                try:
                    shown = parse_card(shown)
                except CardError as e:
                    d.refused = str(e)
                    return
            self._exposed(t, s, d, by, shown)
        elif n == "card.face-up":
            d.add(
                "card.face_up",
                shoe=s.shoe,
                hand=s.hand,
                by=by,
                rule="seed 000/001 art. 4: a reversed card in the shoe: bets stand, the game goes on",
            )
        elif n == "card.enter":
            if s.paused == "device":
                d.refused = "the table waits for its card reader, not for a card: reconnect it, or void the hand"
                return
            if s.paused is None:
                d.refused = "no card is waiting for manual entry"
                return
            try:
                entered = parse_card(str(c.args.get("card", "")))
            except CardError as e:
                d.refused = str(e)
                return
            first = msgspec.structs.replace(s.held[0], card=entered)
            self._resume(t, s, d, first, by=by, entered=True)
        elif n == "card.accept":
            if s.paused != "decision":
                d.refused = "no held card is waiting for a decision"
                return
            self._resume(t, s, d, s.held[0], by=by, entered=False)
        elif n == "hand.void":
            if (s.phase not in IN_HAND and not s.demo) or (
                s.phase == "paused" and s.resume not in IN_HAND and not s.demo
            ):
                extra = (
                    "; the card waiting is between hands: enter it with `tablectl card <CODE>`"
                    if s.phase == "paused"
                    else ""
                )
                d.refused = f"no hand is in play to void (the table is {self.phase_text(s)}){extra}"
                return
            self.void_hand(t, s, d, reason=reason or "supervisor", by=by)
        elif n == "shoe.void":
            if s.phase in ("no-shoe", "shoe-ended"):
                d.refused = f"there is no shoe in play to void (the table is {self.phase_text(s)})"
                return
            if s.phase in IN_HAND:
                self.void_hand(t, s, d, reason=reason or "shoe voided", by=by, end_shoe=False)
            d.add(
                "shoe.void",
                shoe=s.shoe,
                reason=reason or "supervisor",
                by=by,
                rule="seed 000/001 art. 10: a supervisor decides",
            )

    def _not_now(self, s: ShoeState, what: str) -> str:
        if s.phase == "no-shoe":
            return f"cannot {what}: no shoe is in play (start one with `shoe new`)"
        if s.phase == "shoe-ended":
            return f"cannot {what}: shoe {s.shoe} has ended (start a new shoe)"
        return f"cannot {what}: the table is {self.phase_text(s)}"
