"""Dealer errors and what settles them: pauses, exposed cards, voids, a lost card reader."""

from __future__ import annotations

from typing import Any

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
    raise_alarm,
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
            self._pause(
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
            d.add(
                "table.resumed",
                shoe=s.shoe,
                hand=s.hand,
                by=h.device,
                card=None,
                entered=False,
                alarm=s.pause_alarm,
            )
            if s.pause_alarm in t.alarms:
                d.add("alarm.cleared", id=s.pause_alarm, by=h.device, reason=f"{h.device} is back")

    def _pause(
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
        """Stop placing cards until the cause is settled: an alarm says why and what to do."""
        aid = raise_alarm(t, d, kind, message, hand=s.hand, **alarm)
        extra = {"device": alarm["device"]} if reason == "device" else {}
        d.add(
            "table.paused", shoe=s.shoe, hand=s.hand, reason=reason, alarm=aid, held=held, **extra
        )

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
        d.add(
            "table.resumed",
            shoe=s.shoe,
            hand=s.hand,
            by=by,
            card=first.card,
            entered=entered,
            alarm=s.pause_alarm,
        )
        if s.pause_alarm is not None and s.pause_alarm in t.alarms:
            d.add(
                "alarm.cleared",
                id=s.pause_alarm,
                by=by,
                reason="card entered" if entered else "card accepted",
            )
        # The first held card, then every card held behind it, in shoe order; each is
        # decided against the state the events before it leave (one may pause again).
        for i, h in enumerate((first, *s.held[1:])):
            now: TableState = d.state()
            self._card(
                now,
                now.game,
                d,
                h,
                by=by,
                entered=entered and i == 0,
                accepted=not entered and i == 0,
            )
