"""Dealer errors and what settles them: pauses, exposed cards, voids, a lost card reader."""

from __future__ import annotations

from typing import Any

from daemon.procedures import hold
from daemon.procedures.shoe.dealing import end_shoe_after
from daemon.procedures.shoe.state import (
    Held,
    ShoeParts,
    ShoeState,
)
from daemon.table import (
    Decision,
    DeviceHealth,
    TableState,
)


def _hand_cards(boxes: tuple[str, ...], s: ShoeState) -> dict[str, tuple[str, ...]]:
    """The hand's cards by box; while betting is open, the carried card is its first."""
    if s.boxes:
        return dict(s.boxes)
    if not s.carried:
        return {}
    return {b: (s.carried if i == 0 else ()) for i, b in enumerate(boxes)}


class DealerErrors(ShoeParts):
    """The procedures for what went wrong at the table, each naming its seed."""

    def _reader_health(self, t: TableState, s: ShoeState, d: Decision, h: DeviceHealth) -> None:
        """A card reader lost mid-hand pauses the hand; its return resumes it."""
        if h.health != "ok" and s.phase in ("dealing", "betting") and not s.demo:
            self.pause_hand(
                t,
                s,
                d,
                "device",
                [],
                "card-reader-lost",
                f"{h.device} is {h.health} during hand {s.hand} ({h.reason})",
                rule="no card is guessed: the hand waits for its reader",
                action="reconnect the reader and go on; if cards were drawn while it was away, "
                "`tablectl void hand` (they were never read)",
                severity="warning",
                device=h.device,
            )
        elif h.health == "ok" and s.paused == "device":
            data = {"shoe": s.shoe, "hand": s.hand, "by": h.device, "card": None, "entered": False}
            hold.resume(self, t, s, d, data, by=h.device, reason=f"{h.device} is back")

    def pause_hand(
        self,
        t: TableState,
        s: ShoeState,
        d: Decision,
        reason: str,
        held: list[Any],
        kind: str,
        message: str,
        **alarm: Any,
    ) -> None:
        """Stop placing cards until the cause is settled (the hold procedure's pause): the
        alarm ``kind`` says why and what to do, ``table.paused`` names it with ``reason``
        (``card-entry``, ``decision``, ``device``) and the ``held`` card(s). A game may
        pause the hand for a card of its own this way."""
        data = {"shoe": s.shoe, "hand": s.hand, "reason": reason, "held": held}
        if reason == "device":
            data["device"] = alarm["device"]
        hold.pause(self, t, d, kind, message, data, hand=s.hand, **alarm)

    def _exposed(self, t: TableState, s: ShoeState, d: Decision, by: str, card: str | None) -> None:
        if s.phase == "betting":
            d.add(
                "card.exposed",
                shoe=s.shoe,
                hand=s.hand,
                card=card,
                by=by,
                during="betting",
                rule="seed 004 §4: a card exposed during betting voids the hand",
            )
            self.void_hand(
                t,
                s,
                d,
                reason="exposed-card",
                by=by,
                rule="seed 004 §4: a card exposed during betting voids the hand",
            )
            if self.rules.exposed_card_voids_shoe:
                d.add(
                    "shoe.void",
                    shoe=s.shoe,
                    reason="exposed-card",
                    by=by,
                    rule="seed 004 §4 (manager's option), seed 002 VIP: the rest of the shoe is void",
                )
        else:
            d.add(
                "card.exposed",
                shoe=s.shoe,
                hand=s.hand,
                card=card,
                by=by,
                during=s.phase,
                rule="seed 004 §4: a card exposed after betting closed does not affect the game",
            )

    def void_hand(
        self,
        t: TableState,
        s: ShoeState,
        d: Decision,
        *,
        reason: str,
        by: str,
        rule: str = "seed 000/001 art. 10; seed 004 §6: a supervisor voids the hand",
        end_shoe: bool = True,
    ) -> None:
        """The hand in play void: its alarms cleared, the shoe ended when the cut card made it
        the last. A game's :meth:`void_data` adds what its hand held (blackjack's boxes)."""
        hand = s.demo_hand if s.demo else s.hand
        d.add(
            "hand.void",
            shoe=s.shoe,
            hand=hand,
            reason=reason,
            by=by,
            rule=rule,
            # a carried card (seed 002, the second extra card) is this hand's first card:
            # out of play with it, never the next hand's
            cards={k: list(v) for k, v in _hand_cards(self.hand_rules.boxes, s).items()},
            demo=s.demo,
            **self.void_data(s),
        )
        # The void settles the alarms that were about this hand (a misdeal, a card to enter).
        for a in t.alarms.values():
            if a.hand is not None and a.hand == s.hand and not s.demo:
                d.add("alarm.cleared", id=a.id, by=by, reason="hand voided")
        if end_shoe and not s.demo:
            end_shoe_after(s, d, s.hand, cards_out=s.out)

    def _resume(
        self, t: TableState, s: ShoeState, d: Decision, first: Held, *, by: str, entered: bool
    ) -> None:
        """A supervisor entered (or accepted) the first held card: the hold procedure goes on."""
        data = {"shoe": s.shoe, "hand": s.hand, "by": by, "card": first.card, "entered": entered}
        reason = "card entered" if entered else "card accepted"
        hold.resume(self, t, s, d, data, by=by, reason=reason, first=first, entered=entered)
