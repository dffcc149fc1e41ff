"""A second, independent blackjack table, for cross-checking captures only.

How it is independent of ``daemon/games/blackjack/``: it imports nothing from
``daemon/`` or ``drivers/``; it reads the capture's raw lines itself (the
card codes the shoe sent and the commands as typed), not the table's events;
it was written from the seed's text (part III §2–§4, via RULES.md) in a
different shape — a queue of seats to deal to for the first deal, a list of
every possible total instead of a soft flag, settlement as one if-chain per
clause of §2.1–2.3 — and it keeps its own idea of what is due, so a card the
table burned as "not due" must also be one this model did not expect. If the
two agree on every round of a whole shoe, a mistake would have to be made
twice in two different ways. Only what a capture's commands can do is
modelled: legal decisions, timeouts, insurance, the peek, the exposed hole
card; house rules at their defaults except those in the capture's header.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any


def worth(card: str) -> int:
    face = card[0]
    if face == "A":
        return 1
    if face in ("T", "J", "Q", "K"):
        return 10
    return int(face)


def totals(cards: list[str]) -> list[int]:
    """Every total the hand can count, an ace being 1 or 11 (§1.5)."""
    out = {0}
    for c in cards:
        v = worth(c)
        out = {t + v for t in out} | ({t + 11 for t in out} if v == 1 else set())
    return sorted(out)


def best(cards: list[str]) -> int:
    ok = [t for t in totals(cards) if t <= 21]
    return max(ok) if ok else min(totals(cards))


def natural(cards: list[str], from_split: bool) -> bool:
    return (not from_split) and len(cards) == 2 and {worth(c) for c in cards} == {1, 10}


def dealer_wants_card(cards: list[str]) -> bool:
    return best(cards) <= 16  # §4.4.2: to 16; every 17, 18, 19, 20, 21 stands


class Seat:
    def __init__(self) -> None:
        self.cards: list[str] = []
        self.doubled = False
        self.from_split = False
        self.aces_split = False
        self.finished = False
        self.wants = False


class Round:
    def __init__(self, boxes: list[int]) -> None:
        self.boxes = boxes
        self.hands: dict[int, list[Seat]] = {b: [Seat()] for b in boxes}
        self.insured: dict[int, bool | None] = {b: None for b in boxes}
        self.dealer: list[str] = []
        self.queue: list[Any] = [*list(boxes), "dealer", *list(boxes), "dealer"]
        self.order: list[tuple[str, str]] = []
        self.stage = "deal"
        self.void = False
        self.settled: dict[int, Any] | None = None


def _done(s: Seat) -> bool:
    if s.finished:
        return True
    if len(s.cards) < 2:
        return False
    b = best(s.cards)
    if natural(s.cards, s.from_split) or b >= 21:
        return True
    if s.doubled and len(s.cards) == 3:
        return True
    return s.aces_split  # house default: split aces take one card each


def _turn(rd: Round) -> tuple[int, int, str] | None:
    """(box, hand, "card"|"decision") of what the play step waits for."""
    for b in rd.boxes:
        seats = rd.hands[b]
        for i, s in enumerate(seats):
            if len(s.cards) < 2:
                return b, i, "card"
        for i, s in enumerate(seats):
            if not _done(s):
                if s.wants or (s.doubled and len(s.cards) == 2):
                    return b, i, "card"
                return b, i, "decision"
    return None


def _someone_live(rd: Round) -> bool:
    return any(
        best(s.cards) <= 21 and not natural(s.cards, s.from_split)
        for seats in rd.hands.values()
        for s in seats
    )


def _settle(rd: Round) -> dict[int, Any]:
    d = rd.dealer
    dealer_bj = natural(d, False)
    dealer_total = best(d)
    out: dict[int, Any] = {}
    for b in rd.boxes:
        hands = []
        for s in rd.hands[b]:
            stake = 2 if s.doubled else 1
            mine = best(s.cards)
            bj = natural(s.cards, s.from_split)
            if mine > 21:  # §2.2: over 21 loses, even when the dealer is over too
                hands.append(("bust", Fraction(-stake)))
            elif bj and dealer_bj:  # §2.2: both blackjack, a push
                hands.append(("push", Fraction(0)))
            elif bj:  # §2.3.1: blackjack pays 3:2
                hands.append(("blackjack", Fraction(3, 2) * stake))
            elif dealer_bj:  # §2.2: a 21 that is not a blackjack loses to one
                hands.append(("lose", Fraction(-stake)))
            elif dealer_total > 21:  # §2.1.1.1
                hands.append(("win", Fraction(stake)))
            elif mine > dealer_total:  # §2.1.1.2
                hands.append(("win", Fraction(stake)))
            elif mine == dealer_total:  # §2.2
                hands.append(("push", Fraction(0)))
            else:
                hands.append(("lose", Fraction(-stake)))
        ins = rd.insured[b]
        insurance = None
        if ins is True:
            insurance = Fraction(1) if dealer_bj else Fraction(-1, 2)  # §2.5: 2:1 on half the bet
        out[b] = {"hands": hands, "insurance": insurance}
    return out


class Table:
    """Reads a capture's lines and keeps rounds the way seed 003 part III deals them."""

    def __init__(self, headers: dict[str, str]) -> None:
        burn = headers.get("game.start_burn", '"first-card"').strip('"')
        self.start_burn = int(burn.split(":")[1]) if burn.startswith("fixed:") else 0
        if burn not in ("none",) and not burn.startswith("fixed:"):
            raise ValueError(f"this model knows start_burn none and fixed:N, not {burn}")
        self.to_burn = 0
        self.betting = False
        self.rd: Round | None = None
        self.rounds: list[Round] = []
        self.ended = False
        self.cut = False

    # -- inputs ----------------------------------------------------------------------

    def card(self, code: str) -> None:
        if code == "CUT":
            self.cut = True
            return
        if self.to_burn:
            self.to_burn -= 1
            return
        rd = self.rd
        if self.betting or rd is None or rd.settled is not None or rd.void:
            return  # burned: no round is being dealt
        if rd.stage == "deal":
            who = rd.queue.pop(0)
            if who == "dealer":
                rd.dealer.append(code)
                rd.order.append(("dealer", code))
            else:
                rd.hands[who][0].cards.append(code)
                rd.order.append((str(who), code))
            if not rd.queue:
                if worth(rd.dealer[0]) == 1:
                    rd.stage = "insurance"
                else:
                    rd.stage = "play"
                    self._after_play()
            return
        if rd.stage == "play":
            t = _turn(rd)
            if t is None or t[2] != "card":
                return  # not due: burned
            b, i, _ = t
            s = rd.hands[b][i]
            s.cards.append(code)
            s.wants = False
            rd.order.append((str(b), code))
            self._after_play()
            return
        if rd.stage == "dealer":
            if dealer_wants_card(rd.dealer) and _someone_live(rd):
                rd.dealer.append(code)
                rd.order.append(("dealer", code))
                self._after_dealer()

    def command(self, name: str, args: dict[str, str]) -> None:
        rd = self.rd
        if name == "shoe.new":
            self.to_burn = self.start_burn
        elif name == "betting.open":
            self.betting = True
        elif name == "betting.close" and self.betting:
            self.betting = False
            self.rd = Round(sorted(int(x) for x in args["boxes"].split(",")))
            self.rounds.append(self.rd)
        elif rd is None or rd.settled is not None or rd.void:
            return
        elif name == "box.insurance" and rd.stage == "insurance":
            b = int(args["box"])
            if rd.insured.get(b, False) is None:
                rd.insured[b] = args["take"] == "yes"
            self._insurance_done()
        elif name == "decision.timeout" and rd.stage == "insurance":
            for b in rd.insured:
                if rd.insured[b] is None:
                    rd.insured[b] = False
            self._insurance_done()
        elif name == "hole.check" and rd.stage == "check":
            if natural(rd.dealer, False):
                self._dealer_turn()
            else:
                rd.stage = "play"
                self._after_play()
        elif name == "decision.timeout" and rd.stage == "play":
            t = _turn(rd)
            if t is not None and t[2] == "decision":
                rd.hands[t[0]][t[1]].finished = True
                self._after_play()
        elif name.startswith("box.") and rd.stage == "play":
            self._decision(rd, name[4:], int(args["box"]))
        elif name == "card.exposed" and len(rd.dealer) == 2 and rd.stage != "dealer":
            rd.void = True  # the hole card seen before the boxes played: the round is void

    def _decision(self, rd: Round, what: str, box: int) -> None:
        t = _turn(rd)
        if t is None or t[2] != "decision" or t[0] != box:
            return  # refused: not this box's turn
        seats = rd.hands[box]
        s = seats[t[1]]
        if what == "stand":
            s.finished = True
        elif what == "hit":
            if best(s.cards) < 21 and not s.doubled:
                s.wants = True
        elif what == "double":
            if len(s.cards) == 2 and not s.from_split:
                s.doubled = True
        elif what == "split":
            if len(seats) == 1 and len(s.cards) == 2 and worth(s.cards[0]) == worth(s.cards[1]):
                aces = worth(s.cards[0]) == 1
                a, b = Seat(), Seat()
                a.cards, b.cards = [s.cards[0]], [s.cards[1]]
                for x in (a, b):
                    x.from_split, x.aces_split = True, aces
                rd.hands[box] = [a, b]
        self._after_play()

    def _insurance_done(self) -> None:
        rd = self.rd
        assert rd is not None
        if all(v is not None for v in rd.insured.values()):
            rd.stage = "check"

    def _after_play(self) -> None:
        rd = self.rd
        assert rd is not None
        if _turn(rd) is None:
            self._dealer_turn()

    def _dealer_turn(self) -> None:
        rd = self.rd
        assert rd is not None
        rd.stage = "dealer"
        self._after_dealer()

    def _after_dealer(self) -> None:
        rd = self.rd
        assert rd is not None
        if not (dealer_wants_card(rd.dealer) and _someone_live(rd)):
            rd.settled = _settle(rd)


def parse(path: Path) -> tuple[dict[str, str], list[tuple[str, str, dict[str, str]]]]:
    """The capture's headers and its lines as (kind, text, args), raw bytes decoded plainly."""
    headers: dict[str, str] = {}
    lines: list[tuple[str, str, dict[str, str]]] = []
    for raw in path.read_text().splitlines():
        if raw.startswith("# ") and not lines:
            k, _, v = raw[2:].partition(": ")
            headers[k] = v
            continue
        if not raw or raw.startswith("#"):
            continue
        _time, kind, rest = raw.split(" ", 2)
        if kind == "rx":
            lines.append(("rx", rest.replace("\\r\\n", "").strip(), {}))
        elif kind == "cmd":
            name, *kv = rest.split(" ")
            lines.append(("cmd", name, dict(x.split("=", 1) for x in kv)))
    return headers, lines


def rounds(path: Path) -> list[dict[str, Any]]:
    """Every round of a capture as this model deals and settles it."""
    headers, lines = parse(path)
    t = Table(headers)
    for kind, text, args in lines:
        if kind == "rx":
            t.card(text)
        else:
            t.command(text, args)
    out = []
    for rd in t.rounds:
        out.append(
            {
                "boxes": rd.boxes,
                "order": rd.order,
                "dealer": rd.dealer,
                "void": rd.void,
                "settled": rd.settled,
            }
        )
    return out
