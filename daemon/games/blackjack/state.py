"""Blackjack's house rules, its round state and how each event folds into it (the *apply* half).

The round lives beside the shoe's own state (:class:`BlackjackState` extends
the shoe procedures' state), so burn, cut card, voids, unreadable cards and
the card inventory stay the shoe procedures' and are not copied here.
The hole card is kept in the state — the table must know it — but it only
ever arrives through the secret part of its ``card.dealt`` (journaled, never
published: ``docs/decisions.md``, "The hole card").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from daemon.games.blackjack import rules as r
from daemon.procedures.shoe import ShoeRules, ShoeState

Step = Literal["deal", "insurance", "hole-check", "play", "dealer", "over"]
RATIO = r"^\d{1,3}:\d{1,3}$"


class BlackjackRules(ShoeRules, forbid_unknown_fields=True, frozen=True):
    """House rules; ``docs/procedures.md`` gives each one's seed and default."""

    #: seed 003 part III §3.3.1: the cut card 4 decks from the back of the shoe.
    cut_card: Annotated[int, msgspec.Meta(ge=0)] = 208
    #: seed 003 part III §2.1.5: a system failure voids the round (on by default here).
    system_failure_voids_hand: bool = True
    #: §1.2.1: up to seven players.
    boxes: Annotated[int, msgspec.Meta(ge=1, le=7)] = 7
    #: §2.3.1: blackjack pays at least 3:2; §1.2.3: the sign says the odds.
    blackjack_pays: Annotated[str, msgspec.Meta(pattern=RATIO)] = "3:2"
    #: §2.5.3: insurance pays 2:1.
    insurance_pays: Annotated[str, msgspec.Meta(pattern=RATIO)] = "2:1"
    #: §2.5: insurance is offered under an ace.
    insurance: bool = True
    #: §1.3.2: any limits on doubling: ``any`` two cards, hard ``9-11`` or ``10-11``.
    double_on: Literal["any", "9-11", "10-11"] = "any"
    #: §2.6 doubles "the first two cards dealt to the player": not a split hand's, unless the house says so.
    double_after_split: bool = False
    #: §2.7 (the casino's discretion): split aces get one card each.
    split_aces_one_card: bool = True
    #: §2.2: a dealer blackjack takes the bets; ``original`` returns doubled and split stakes.
    dealer_blackjack_takes: Literal["all", "original"] = "all"
    #: §3.5.2–3: the time a box has to decide; then the box stands.
    decision_seconds: Annotated[float, msgspec.Meta(gt=0)] = 15.0
    #: §3.7: the time the boxes have to take insurance.
    insurance_seconds: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    #: the demo's virtual game server: players who bet and decide by themselves (0: none).
    virtual_players: Annotated[int, msgspec.Meta(ge=0, le=7)] = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.demo_hands:
            raise ValueError(
                "demo_hands: blackjack deals no demonstration hands (seed 003 part III)"
            )
        if self.virtual_players > self.boxes:
            raise ValueError(
                f"virtual_players ({self.virtual_players}) exceeds boxes ({self.boxes})"
            )


class Hand(msgspec.Struct, frozen=True):
    """One hand of a box; a box holds two after a split (seed 003 part III §2.7)."""

    cards: tuple[str, ...] = ()
    doubled: bool = False
    split: bool = False
    split_aces: bool = False
    asked: bool = False  # a hit was asked and its card is due
    #: why it takes no more cards: stand, timeout, 21, blackjack, bust, double, split-aces
    done: str | None = None

    def view(self) -> r.HandView:
        return r.HandView(self.cards, self.split, self.split_aces, self.doubled)


class Box(msgspec.Struct, frozen=True):
    box: int
    hands: tuple[Hand, ...] = (Hand(),)
    insurance: bool | None = None  # None: not offered or not answered yet


class Round(msgspec.Struct, frozen=True):
    boxes: tuple[Box, ...]
    step: Step = "deal"
    initial: int = 0  # cards of the first deal (§3.4) placed so far
    up: str | None = None
    hole: str | None = None  # secret until ``revealed`` (only from the secret part)
    salt: str | None = None
    commitment: str | None = None
    revealed: bool = False
    draws: tuple[str, ...] = ()  # the dealer's cards after the hole card
    turn: int = 0  # numbers each awaited decision, so a late timeout finds nothing to do
    peeked: bool = False

    def dealer(self) -> tuple[str, ...]:
        """The dealer's cards as the table knows them (the hole card included)."""
        cards = tuple(c for c in (self.up, self.hole) if c is not None)
        return cards + self.draws

    def box(self, no: int) -> Box | None:
        return next((b for b in self.boxes if b.box == no), None)


class BlackjackState(ShoeState, frozen=True):
    round: Round | None = None


def _replace_hand(rd: Round, box: int, idx: int, hand: Hand) -> Round:
    boxes = tuple(
        msgspec.structs.replace(
            b, hands=tuple(hand if i == idx else h for i, h in enumerate(b.hands))
        )
        if b.box == box
        else b
        for b in rd.boxes
    )
    return msgspec.structs.replace(rd, boxes=boxes)


def auto_done(h: Hand, split_aces_one_card: bool) -> str | None:
    """A hand that can take no more cards says why (§4.4.1, §2.6, §2.7)."""
    if h.done is not None:
        return h.done
    if len(h.cards) < 2:
        return None
    t = r.total(h.cards)
    if r.is_blackjack(h.cards, split=h.split):
        return "blackjack"
    if t.bust:
        return "bust"
    if t.total == 21:
        return "21"
    if h.doubled and len(h.cards) >= 3:
        return "double"
    if h.split_aces and split_aces_one_card:
        return "split-aces"
    return None


def apply_round(rd: Round | None, type_: str, data: dict[str, Any], rules: Any) -> Round | None:
    """Fold one event into the round; events that are not the round's leave it as it is."""
    rep = msgspec.structs.replace
    if type_ == "betting.closed":
        boxes = tuple(Box(box=int(b)) for b in data.get("boxes") or ())
        return Round(boxes=boxes)
    if type_ == "betting.opened":
        return None
    if rd is None:
        return None
    if type_ == "card.dealt":
        to = data.get("box")
        if to in ("burn", "void") or data.get("misdeal"):
            return rd
        if to == "dealer":
            if data.get("hole"):
                secret = data.get("secret") or {}
                rd = rep(
                    rd,
                    hole=secret.get("card"),
                    salt=secret.get("salt"),
                    commitment=data.get("commitment"),
                    initial=rd.initial + 1,
                )
                return _after_first_deal(rd, rules)
            if rd.up is None:
                return rep(rd, up=data["card"], initial=rd.initial + 1)
            return rep(rd, draws=(*rd.draws, data["card"]))
        no, idx = int(to), int(data.get("split_hand", 0))
        b = rd.box(no)
        if b is None:
            return rd
        h = b.hands[idx]
        h = rep(h, cards=(*h.cards, data["card"]), asked=False)
        if rd.step == "deal":
            return rep(_replace_hand(rd, no, idx, h), initial=rd.initial + 1)
        return _replace_hand(rd, no, idx, rep(h, done=auto_done(h, rules.split_aces_one_card)))
    if type_ == "table.expects":
        if data.get("turn") is not None:
            return rep(rd, turn=int(data["turn"]))
        return rd
    if type_ == "box.decision":
        no, idx, what = int(data["box"]), int(data.get("split_hand", 0)), data["decision"]
        b = rd.box(no)
        if b is None:
            return rd
        h = b.hands[idx]
        if what == "stand":
            return _replace_hand(
                rd, no, idx, rep(h, done="timeout" if data.get("timeout") else "stand")
            )
        if what == "double":
            return _replace_hand(rd, no, idx, rep(h, doubled=True))
        if what == "split":
            aces = r.value(h.cards[0]) == 1
            a = Hand(cards=(h.cards[0],), split=True, split_aces=aces)
            c = Hand(cards=(h.cards[1],), split=True, split_aces=aces)
            boxes = tuple(rep(x, hands=(a, c)) if x.box == no else x for x in rd.boxes)
            return rep(rd, boxes=boxes)
        if what == "hit":
            return _replace_hand(rd, no, idx, rep(h, asked=True))
        return rd
    if type_ == "box.insurance":
        boxes = tuple(
            rep(x, insurance=bool(data["taken"])) if x.box == int(data["box"]) else x
            for x in rd.boxes
        )
        rd = rep(rd, boxes=boxes)
        if all(x.insurance is not None for x in rd.boxes):
            rd = rep(rd, step="hole-check")
        return rd
    if type_ == "dealer.peeked":
        return rep(rd, peeked=True, step=rd.step if data.get("blackjack") else "play")
    if type_ == "dealer.hole_card":
        return rep(rd, revealed=True, hole=data["card"], salt=data["salt"], step="dealer")
    if type_ == "hand.result":
        return rep(rd, step="over")
    return rd


def _after_first_deal(rd: Round, rules: Any) -> Round:
    """§2.5.2, §3.7: an ace up offers insurance first; otherwise the boxes play (§3.5)."""
    rep = msgspec.structs.replace
    boxes = tuple(
        rep(b, hands=tuple(rep(h, done=auto_done(h, rules.split_aces_one_card)) for h in b.hands))
        for b in rd.boxes
    )
    ace_up = rd.up is not None and r.value(rd.up) == 1
    if not ace_up:
        return rep(rd, boxes=boxes, step="play")
    return rep(rd, boxes=boxes, step="insurance" if rd.boxes and rules.insurance else "hole-check")
