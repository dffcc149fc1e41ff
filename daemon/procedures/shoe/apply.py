"""apply: one event folded into the shoe's state. Pure; no decisions here."""

from __future__ import annotations

from typing import Any

import msgspec

from daemon.procedures.shoe.state import (
    Phase,
    ShoeRules,
    ShoeState,
    burn_count,
    held_from,
)


def took_out(s: ShoeState, card: str | None, data: dict[str, Any]) -> ShoeState:
    """One card out of the shoe (``card.dealt``): counted against the shoe's inventory, and
    the device that read it noted (a hand depends on it). ``card`` is None only for a card
    the event does not name (blackjack's hole card counts from its secret part)."""
    return msgspec.structs.replace(s, **_taken(s, card, data))


def _taken(s: ShoeState, card: str | None, data: dict[str, Any]) -> dict[str, Any]:
    """:func:`took_out`'s changes, for one ``replace`` with the rest of a card's."""
    change: dict[str, Any] = {"out": s.out + 1}
    if card is not None:
        change["seen"] = {**s.seen, card: s.seen.get(card, 0) + 1}
    dev = data.get("device")
    if dev and dev not in s.readers and not data.get("entered_by"):
        change["readers"] = (*s.readers, dev)
    return change


def apply(
    rules: ShoeRules,
    boxes_of: tuple[str, ...],
    s: ShoeState,
    type_: str,
    data: dict[str, Any],
    result_type: str = "hand.result",
) -> ShoeState:
    """Fold one event into the shoe's state: the journal rebuilds it exactly (``result_type``:
    the game's result event, which settles the hand)."""
    rep = msgspec.structs.replace
    if type_ == "card.dealt":
        card, box = data["card"], data["box"]
        if box not in ("burn", "void") and not data.get("carried"):
            # a hand's card, the most common event: its count and its box in one replace
            boxes = s.boxes or {b: () for b in boxes_of}
            return rep(s, **_taken(s, card, data), boxes={**boxes, box: (*boxes[box], card)})
        s = took_out(s, card, data)
        if box == "burn":
            if s.phase == "burning":
                if data.get("exposed"):
                    return rep(
                        s, burn_first_pending=False, burned=(card,), burn_due=burn_count(card)
                    )
                return rep(s, burned=(*s.burned, card), burn_due=s.burn_due - 1)
            if data.get("extra_card"):
                return rep(s, extra=s.extra + 1)
            if s.phase == "dealing" and s.burn_due > 0 and not data.get("misdeal"):
                return rep(s, burn_due=s.burn_due - 1)
            return s
        if box == "void":
            return s
        return rep(s, extra=s.extra + 1, carried=(*s.carried, card))  # carried
    if type_ == "hand.started":
        return rep(s, demo=True, demo_hand=data["hand"], boxes={b: () for b in boxes_of})
    if type_ == "shuffle.completed":
        return rep(
            s,
            shuffle={"shuffle_id": data["shuffle_id"], "device": data["device"]}
            if data["ok"]
            else None,
        )
    if type_ == "shoe.started":
        due = rules.first_burn() if data["burn"] != "none" else 0
        phase: Phase = "burning" if due else ("demo" if data.get("demo_hands") else "settling")
        return ShoeState(
            phase=phase,
            shoe=data["shoe"],
            burn_due=due,
            burn_first_pending=data["burn"] == "first-card",
            readers=s.readers,
        )
    if type_ == "shoe.burn":
        return rep(
            s,
            phase="demo" if rules.demo_hands else "settling",
            burn_due=0,
            burned=tuple(data["cards"]),
        )
    if type_ == "betting.opened":
        return rep(
            s,
            phase="betting",
            hand=data["hand"],
            boxes={},
            demo=False,
            burn_incomplete=bool(data.get("burn_incomplete")),
        )
    if type_ == "betting.closed":
        boxes = {b: () for b in boxes_of}
        if s.carried:
            boxes[boxes_of[0]] = s.carried
        between = rules.burn_between_hands if s.hand > 1 else 0
        return rep(
            s,
            phase="dealing",
            boxes=boxes,
            carried=(),
            extra=0,
            burn_due=max(0, between - min(s.extra, between)),
        )
    if type_ == "hand.demo":
        phase = "demo" if data["hand"] < rules.demo_hands else "settling"
        return rep(s, phase=phase, demo=False, boxes={})
    if type_ == result_type:
        phase = (
            "shoe-ended" if s.last_hand is not None and data["hand"] >= s.last_hand else "settling"
        )
        # seed 000/001 art. 7.2: a continuous shuffler takes the cards back after every hand.
        seen = {} if rules.continuous_shuffler else s.seen
        return rep(
            s,
            phase=phase,
            boxes={},
            results=s.results + 1,
            seen=seen,
            extra=0,
            # a result with no one winner (blackjack's boxes) draws no scoreboard
            winners=(*s.board(), data["winner"]) if "winner" in data else s.winners,
        )
    if type_ == "hand.void":
        if data.get("demo"):
            return rep(
                s,
                phase="demo" if s.demo_hand < rules.demo_hands else "settling",
                demo=False,
                boxes={},
                paused=None,
                held=(),
                pause_alarm=None,
            )
        return rep(
            s,
            phase="settling" if s.phase != "shoe-ended" else s.phase,
            boxes={},
            paused=None,
            held=(),
            pause_alarm=None,
            burn_incomplete=False,
            burn_due=0,
            carried=(),  # out of play with the voided hand (hand.void lists them)
            extra=0,
        )
    if type_ == "shoe.cut_card":
        return rep(s, last_hand=data["last_hand"], cut_card_out=True)
    if type_ in ("shoe.ended", "shoe.void"):
        return rep(
            s, phase="shoe-ended", boxes={}, paused=None, held=(), pause_alarm=None, demo=False
        )
    if type_ == "table.paused":
        return rep(
            s,
            paused=data["reason"],
            resume=s.phase,
            phase="paused",
            held=tuple(held_from(x) for x in data["held"]),
            pause_alarm=data["alarm"],
        )
    if type_ == "card.held":
        return rep(s, held=(*s.held, held_from(data)))
    if type_ == "table.resumed":
        return rep(s, phase=s.resume, paused=None, held=(), pause_alarm=None)
    return s
