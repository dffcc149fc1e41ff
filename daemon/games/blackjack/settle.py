"""The end of a blackjack round: the hole card turned over, every box settled (§2.1–2.5, §3.7).

Pure: each function reads the round and adds events to the decision. The
result carries every hand of every box with its multipliers (doubled, split,
insured) and payout ratio, so a settlement backend needs nothing else
(``docs/events.md``, ``hand.result``). :func:`public_round` is the round as
anyone may see it, the hole card only once it is turned over.
"""

from __future__ import annotations

from typing import Any

from daemon.games.blackjack import rules as r
from daemon.games.blackjack.state import BlackjackRules, Box, Round
from daemon.procedures.paytable import in_force
from daemon.procedures.shoe import ShoeState
from daemon.procedures.shoe.cut_card import end_shoe_after
from daemon.table import Decision

R_REVEAL = (
    "seed 003 part III §3.7: the hole card is turned over once the boxes have all their cards"
)
R_SETTLE = "seed 003 part III §2.1–2.3, §2.5.3: settled when the last card is scanned"
R_RESHUFFLE = "seed 003 part III §3.2.2: reshuffle at the end of the round the cut card came out in"


def reveal(s: ShoeState, rd: Round, d: Decision) -> None:
    """The hole card turned over: the card and the salt that open its commitment."""
    cards = rd.dealer()
    tot = r.total(cards)
    d.add(
        "dealer.hole_card",
        shoe=s.shoe,
        hand=s.hand,
        card=rd.hole,
        salt=rd.salt,
        commitment=rd.commitment,
        up=rd.up,
        total=tot.total,
        soft=tot.soft,
        blackjack=r.is_blackjack(cards),
        rule=R_REVEAL,
    )


def settle(rules: BlackjackRules, s: ShoeState, rd: Round, d: Decision) -> None:
    """§2.1.4: once the last card is scanned the system settles every box."""
    dealer = rd.dealer()
    dt = r.total(dealer)
    d.add(
        "hand.result",
        shoe=s.shoe,
        hand=s.hand,
        demo=False,
        dealer={
            "cards": list(dealer),
            "total": dt.total,
            "soft": dt.soft,
            "blackjack": r.is_blackjack(dealer),
            "bust": dt.bust,
            "drew": len(rd.draws),
        },
        boxes=[_box(rules, b, dealer) for b in rd.boxes],
        blackjack_pays=rules.blackjack_pays,
        insurance_pays=rules.insurance_pays,
        rule=R_SETTLE,
        paytable=in_force("blackjack", rules),
    )
    end_shoe_after(s, d, s.hand, cards_out=s.out, rule=R_RESHUFFLE)


def _box(rules: BlackjackRules, b: Box, dealer: tuple[str, ...]) -> dict[str, Any]:
    """One box settled: each of its hands (two after a split) and its insurance."""
    hands = [
        r.settle_hand(
            h.cards,
            dealer,
            split=h.split,
            doubled=h.doubled,
            blackjack_pays=rules.blackjack_pays,
            dealer_blackjack_takes=rules.dealer_blackjack_takes,
        ).to_data()
        for h in b.hands
    ]
    for hd, h in zip(hands, b.hands, strict=True):
        hd["stood"] = h.done
    net = sum(h["net"] for h in hands)
    ins = None
    if b.insurance is not None:
        if b.insurance:
            outcome, ins_net = r.settle_insurance(dealer, insurance_pays=rules.insurance_pays)
            ins = {
                "taken": True,
                "stake": 0.5,
                "outcome": outcome,
                "ratio": rules.insurance_pays if outcome == "win" else "-1:1",
                "net": float(ins_net),
            }
            net += float(ins_net)
        else:
            ins = {"taken": False}
    return {
        "box": b.box,
        "split": len(b.hands) > 1,
        "hands": hands,
        "insurance": ins,
        "stake": sum(hd["bet"] for hd in hands) + (0.5 if ins and ins["taken"] else 0),
        "net": net,
    }


def public_round(rd: Round) -> dict[str, Any]:
    """The round as anyone may see it: the hole card only once it is turned over."""
    return {
        "step": rd.step,
        "boxes": [
            {
                "box": b.box,
                "insurance": b.insurance,
                "hands": [
                    {
                        "cards": list(h.cards),
                        "total": r.total(h.cards).total if h.cards else 0,
                        "soft": r.total(h.cards).soft if h.cards else False,
                        "doubled": h.doubled,
                        "done": h.done,
                    }
                    for h in b.hands
                ],
            }
            for b in rd.boxes
        ],
        "dealer": {
            "up": rd.up,
            "hole": rd.hole if rd.revealed else ("hidden" if rd.commitment else None),
            "cards": list(rd.dealer()) if rd.revealed else [c for c in (rd.up,) if c],
        },
    }
