"""What the blackjack table waits for next: pure functions of the state, its ``expects`` hook's answer.

One answer drives everything downstream: which box the next card from the shoe
goes to (§3.4 dealing order, §2.7 both second cards of a split first), whose
decision is awaited and which decisions are allowed (§3.5, §2.6, §2.7), when the
dealer draws or stands (§4.4), and what a dealer display, the stack light and
``tablectl monitor`` show. Card placement and the refusals ask it, so the order
of play is written once; the shoe procedure publishes it as ``table.expects``
(:mod:`daemon.procedures.shoe.expects`).
"""

from __future__ import annotations

from typing import Any

from daemon.games.blackjack import rules as r
from daemon.games.blackjack.state import BlackjackRules, Hand, Round
from daemon.procedures.shoe import ShoeState


def expects(rules: BlackjackRules, s: ShoeState) -> dict[str, Any] | None:
    """What the table waits for now, as published in ``table.expects``."""
    rd: Round | None = getattr(s, "round", None)
    if rd is None or s.phase not in ("dealing", "settling", "shoe-ended"):
        return None
    if rd.step == "over":
        return {"expects": "round-over", "text": "round over"}
    if s.phase != "dealing":
        return None
    if rd.step == "deal":
        return _first_deal(rd)
    if rd.step == "insurance":
        left = [b.box for b in rd.boxes if b.insurance is None]
        return {
            "expects": "insurance",
            "boxes": left,
            "seconds": rules.insurance_seconds,
            "text": "insurance from box"
            + ("es " if len(left) > 1 else " ")
            + ", ".join(map(str, left)),
        }
    if rd.step == "hole-check":
        return {"expects": "hole-check", "text": "check the hole card"}
    if rd.step == "play":
        return _play(rules, rd)
    if rd.step == "dealer":
        cards = rd.dealer()
        if r.dealer_draws(cards) and in_play(rd):
            return {
                "expects": "dealer-draws",
                "to": "dealer",
                "text": f"dealer draws ({r.total(cards).text()})",
            }
        tot = r.total(cards)
        text = f"dealer busts ({tot.total})" if tot.bust else f"dealer stands on {tot.text()}"
        return {"expects": "dealer-stands", "text": text}
    return None


def _first_deal(rd: Round) -> dict[str, Any]:
    """§3.4: one card up to each box that bet, one up to the dealer, the second round, the hole."""
    n, i = len(rd.boxes), rd.initial
    if i < n or n < i < 2 * n + 1:
        b = rd.boxes[i if i < n else i - n - 1].box
        return {"expects": "card", "to": str(b), "split_hand": 0, "text": f"card to box {b}"}
    hole = i == 2 * n + 1
    return {
        "expects": "card",
        "to": "dealer",
        "hole": hole,
        "text": "hole card to the dealer, face down" if hole else "card to the dealer",
    }


def _play(rules: BlackjackRules, rd: Round) -> dict[str, Any] | None:
    """§3.5: the boxes play in order; None once every hand is done (the reveal is next)."""
    for b in rd.boxes:
        if all(h.done is not None for h in b.hands):
            continue
        split = len(b.hands) > 1
        short = next((i for i, h in enumerate(b.hands) if len(h.cards) < 2), None)
        if short is not None:  # §2.7: both second cards of a split come first
            return card_to(b.box, short, split)
        i, h = next((i, h) for i, h in enumerate(b.hands) if h.done is None)
        if h.asked or (h.doubled and len(h.cards) == 2):
            return card_to(b.box, i, split)
        where = f"box {b.box}" + (f" hand {i + 1}" if split else "")
        return {
            "expects": "decision",
            "box": b.box,
            "split_hand": i,
            "allowed": allowed(rules, b.hands, i),
            "seconds": rules.decision_seconds,
            "text": f"decision from {where}",
        }
    return None


def card_to(box: int, i: int, split: bool) -> dict[str, Any]:
    where = f"box {box}" + (f" hand {i + 1}" if split else "")
    return {"expects": "card", "to": str(box), "split_hand": i, "text": f"card to {where}"}


def refusal(rules: BlackjackRules, hands: tuple[Hand, ...], i: int, what: str) -> str | None:
    """Why hand ``i`` may not take decision ``what`` (§3.5, §2.6, §2.7), or None."""
    h = hands[i].view()
    if what == "hit":
        return r.can_hit(h, split_aces_one_card=rules.split_aces_one_card)
    if what == "double":
        return r.can_double(
            h,
            double_on=rules.double_on,
            double_after_split=rules.double_after_split,
            split_aces_one_card=rules.split_aces_one_card,
        )
    if what == "split":
        return r.can_split([x.view() for x in hands])
    return None  # a box may always stand


def allowed(rules: BlackjackRules, hands: tuple[Hand, ...], i: int) -> list[str]:
    """The decisions hand ``i`` may take now, in the order ``table.expects`` lists them."""
    return [w for w in ("stand", "hit", "double", "split") if refusal(rules, hands, i, w) is None]


def in_play(rd: Round) -> bool:
    """§4.4.3: a hand the dealer's total can still change (not bust, not a blackjack paid)."""
    for b in rd.boxes:
        for h in b.hands:
            if not r.total(h.cards).bust and not r.is_blackjack(h.cards, split=h.split):
                return True
    return False


def now_text(bj: Any, s: ShoeState) -> str:
    """What the table waits for, in words, for a refusal: the answer's text or the phase's."""
    exp = bj.expects(s)
    return exp["text"] if exp else bj.phase_text(s)
