"""The blackjack table (seed 003 part III): the round as decide over the shoe procedures.

Every shoe procedure — start burn, cut card (4 decks from the back, §3.3),
unreadable card, face-up card, card inventory, voids, card before betting
closed, system failure — is :class:`~daemon.procedures.shoe.ShoeGame`'s; this
class adds the round: dealing order (§3.4), insurance (§2.5), the peek under
an ace (§3.7), the boxes' decisions (§3.5, §2.6, §2.7), the dealer (§4.4) and
settlement (§2.1–2.3). After every input it publishes what it expects next
(``table.expects``), the one thing a dealer display, the stack light and
``tablectl monitor`` follow. The hole card is journaled as a secret and published
only as a commitment until it is turned over (``docs/decisions.md``).

Longer than most modules because the round's decisions (commands, cards,
the automatic steps between them) read best in one place; the state and
its apply are in :mod:`.state`, the pure rules in :mod:`.rules`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from daemon.games.blackjack import rules as r
from daemon.games.blackjack.describe import BlackjackDescriber
from daemon.games.blackjack.state import BlackjackState, Hand, Round, apply_round
from daemon.games.describe import Describer
from daemon.procedures.shoe import Held, ShoeGame, ShoeRules, ShoeState
from daemon.table import (
    Arg,
    Command,
    CommandSpec,
    Decision,
    Input,
    TableState,
    raise_alarm,
    spec,
)

RATIO = r"^\d{1,3}:\d{1,3}$"
BOX = Arg("box", "the box, 1–7")
DECISIONS = ("hit", "stand", "double", "split")


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


class _NoHands:
    """The shoe procedures' hand plug, unused: blackjack places its own cards."""

    boxes: ClassVar[tuple[str, ...]] = ()


def commitment(card: str, salt: str) -> str:
    """``SHA-256(salt ‖ card)``: what ``card.dealt`` publishes for the hole card."""
    return hashlib.sha256(bytes.fromhex(salt) + card.encode("ascii")).hexdigest()


class BlackjackTable(ShoeGame):
    name: ClassVar[str] = "blackjack"
    Rules: ClassVar[type[ShoeRules]] = BlackjackRules
    State: ClassVar[type[ShoeState]] = BlackjackState
    hand_rules: ClassVar[Any] = _NoHands()

    describe: ClassVar[Describer] = BlackjackDescriber()
    commands: ClassVar[dict[str, CommandSpec]] = {
        **ShoeGame.commands,
        "betting.close": spec(
            "no more bets; blackjack: the boxes that bet, --boxes 1,3,5 (seed 003 part III §2.1.3)",
            "dealer",
            "supervisor",
            args=(Arg("boxes", "blackjack: the boxes that bet, e.g. 1,3,5", option=True),),
        ),
        "box.hit": spec("box N asks for a card", "dealer", "supervisor", args=(BOX,)),
        "box.stand": spec("box N stands", "dealer", "supervisor", args=(BOX,)),
        "box.double": spec(
            "box N doubles: one more card only (§2.6)", "dealer", "supervisor", args=(BOX,)
        ),
        "box.split": spec("box N splits its pair (§2.7)", "dealer", "supervisor", args=(BOX,)),
        "box.insurance": spec(
            "box N takes or declines insurance (§2.5)",
            "dealer",
            "supervisor",
            args=(BOX, Arg("take", "yes or no")),
        ),
        "hole.check": spec(
            "the dealer checked the hole card under an ace (§3.7)", "dealer", "supervisor"
        ),
        "decision.timeout": spec(
            "the decision clock: wait K ran out, the box stands (§3.5.3)",
            "dealer",
            "supervisor",
            args=(Arg("turn", "the wait's number, from table.expects"),),
        ),
        "card.misplaced": spec(
            "a card was laid on a box that did not bet",
            "dealer",
            "supervisor",
            words=("card", "misplaced"),
            args=(Arg("box", "the box, 1–7", option=True),),
        ),
    }

    def __init__(self, rules: ShoeRules) -> None:
        super().__init__(rules)
        self.rules: BlackjackRules = rules  # type: ignore[assignment]
        #: the key the hole card's salt is derived from; random per process, fixed for replays
        self.salt_key = secrets.token_bytes(32)

    def initial(self) -> BlackjackState:
        return BlackjackState()

    # ============================================================ what is expected next

    def expects(self, s: ShoeState) -> dict[str, Any] | None:
        """What the table waits for now, as published in ``table.expects``."""
        rd: Round | None = getattr(s, "round", None)
        if rd is None or s.phase not in ("dealing", "settling", "shoe-ended"):
            return None
        if rd.step == "over":
            return {"expects": "round-over", "text": "round over"}
        if s.phase != "dealing":
            return None
        n = len(rd.boxes)
        if rd.step == "deal":
            i = rd.initial
            if i < n or n < i < 2 * n + 1:
                b = rd.boxes[i if i < n else i - n - 1].box
                return {
                    "expects": "card",
                    "to": str(b),
                    "split_hand": 0,
                    "text": f"card to box {b}",
                }
            hole = i == 2 * n + 1
            return {
                "expects": "card",
                "to": "dealer",
                "hole": hole,
                "text": "hole card to the dealer, face down" if hole else "card to the dealer",
            }
        if rd.step == "insurance":
            left = [b.box for b in rd.boxes if b.insurance is None]
            return {
                "expects": "insurance",
                "boxes": left,
                "seconds": self.rules.insurance_seconds,
                "text": "insurance from box"
                + ("es " if len(left) > 1 else " ")
                + ", ".join(map(str, left)),
            }
        if rd.step == "hole-check":
            return {"expects": "hole-check", "text": "check the hole card"}
        if rd.step == "play":
            for b in rd.boxes:
                if all(h.done is not None for h in b.hands):
                    continue
                short = next((i for i, h in enumerate(b.hands) if len(h.cards) < 2), None)
                if short is not None:  # §2.7: both second cards of a split come first
                    return self._card_to(b.box, short, len(b.hands) > 1)
                i, h = next((i, h) for i, h in enumerate(b.hands) if h.done is None)
                if h.asked or (h.doubled and len(h.cards) == 2):
                    return self._card_to(b.box, i, len(b.hands) > 1)
                allowed = self._allowed(b.hands, i)
                where = f"box {b.box}" + (f" hand {i + 1}" if len(b.hands) > 1 else "")
                return {
                    "expects": "decision",
                    "box": b.box,
                    "split_hand": i,
                    "allowed": allowed,
                    "seconds": self.rules.decision_seconds,
                    "text": f"decision from {where}",
                }
            return None  # every hand is done: the hole card is turned over next
        if rd.step == "dealer":
            cards = rd.dealer()
            if r.dealer_draws(cards) and _in_play(rd):
                return {
                    "expects": "dealer-draws",
                    "to": "dealer",
                    "text": f"dealer draws ({r.total(cards).text()})",
                }
            tot = r.total(cards)
            text = f"dealer busts ({tot.total})" if tot.bust else f"dealer stands on {tot.text()}"
            return {"expects": "dealer-stands", "text": text}
        return None

    @staticmethod
    def _card_to(box: int, i: int, split: bool) -> dict[str, Any]:
        where = f"box {box}" + (f" hand {i + 1}" if split else "")
        return {"expects": "card", "to": str(box), "split_hand": i, "text": f"card to {where}"}

    def _allowed(self, hands: tuple[Hand, ...], i: int) -> list[str]:
        out = ["stand"]
        rr = self.rules
        h = hands[i].view()
        if r.can_hit(h, split_aces_one_card=rr.split_aces_one_card) is None:
            out.append("hit")
        if (
            r.can_double(
                h,
                double_on=rr.double_on,
                double_after_split=rr.double_after_split,
                split_aces_one_card=rr.split_aces_one_card,
            )
            is None
        ):
            out.append("double")
        if r.can_split([x.view() for x in hands]) is None:
            out.append("split")
        return out

    # ============================================================ decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        before = self.expects(t.game)
        super().decide(t, inp, d)
        if d.refused is not None or not d.drafts:
            return
        self._advance(d)
        now: TableState = d.state()
        after = self.expects(now.game)
        if after is not None and after != before:
            s = now.game
            rd: Round = s.round
            if after["expects"] in ("decision", "insurance"):
                after = {**after, "turn": rd.turn + 1}
            d.add("table.expects", shoe=s.shoe, hand=s.hand, **after)

    def _advance(self, d: Decision) -> None:
        """The steps that need no one: the reveal once every box is done, the dealer standing."""
        for _ in range(4):
            t: TableState = d.state()
            s = t.game
            rd: Round | None = getattr(s, "round", None)
            if rd is None or s.phase != "dealing":
                return
            if rd.step == "play" and self.expects(s) is None:
                self._reveal(s, rd, d)
                continue
            if rd.step == "dealer":
                exp = self.expects(s)
                if exp is not None and exp["expects"] == "dealer-stands":
                    d.add("table.expects", shoe=s.shoe, hand=s.hand, **exp)
                    self._settle(s, rd, d)
            return

    def _reveal(self, s: ShoeState, rd: Round, d: Decision) -> None:
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
            rule="seed 003 part III §3.7: the hole card is turned over once the boxes have all their cards",
        )

    def _settle(self, s: ShoeState, rd: Round, d: Decision) -> None:
        """§2.1.4: once the last card is scanned the system settles every box."""
        rr = self.rules
        dealer = rd.dealer()
        dt = r.total(dealer)
        boxes = []
        for b in rd.boxes:
            split = len(b.hands) > 1
            hands = [
                r.settle_hand(
                    h.cards,
                    dealer,
                    split=h.split,
                    doubled=h.doubled,
                    blackjack_pays=rr.blackjack_pays,
                    dealer_blackjack_takes=rr.dealer_blackjack_takes,
                ).to_data()
                for h in b.hands
            ]
            for hd, h in zip(hands, b.hands, strict=True):
                hd["stood"] = h.done
            net = sum(h["net"] for h in hands)
            ins = None
            if b.insurance is not None:
                if b.insurance:
                    outcome, ins_net = r.settle_insurance(dealer, insurance_pays=rr.insurance_pays)
                    ins = {
                        "taken": True,
                        "stake": 0.5,
                        "outcome": outcome,
                        "ratio": rr.insurance_pays if outcome == "win" else "-1:1",
                        "net": float(ins_net),
                    }
                    net += float(ins_net)
                else:
                    ins = {"taken": False}
            boxes.append(
                {
                    "box": b.box,
                    "split": split,
                    "hands": hands,
                    "insurance": ins,
                    "stake": sum(hd["bet"] for hd in hands) + (0.5 if ins and ins["taken"] else 0),
                    "net": net,
                }
            )
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
            boxes=boxes,
            blackjack_pays=rr.blackjack_pays,
            insurance_pays=rr.insurance_pays,
            rule="seed 003 part III §2.1–2.3, §2.5.3: settled when the last card is scanned",
        )
        if s.last_hand is not None and s.hand >= s.last_hand:
            d.add(
                "shoe.ended",
                shoe=s.shoe,
                hands=s.hand,
                reason="cut-card",
                cards_out=s.out,
                rule="seed 003 part III §3.2.2: reshuffle at the end of the round the cut card came out in",
            )

    # -- cards -----------------------------------------------------------------------------

    def _place(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, *, by: str | None, entered: bool
    ) -> None:
        if s.phase != "dealing" or s.burn_incomplete or s.burn_due > 0:
            super()._place(t, s, d, h, by=by, entered=entered)
            return
        rd: Round = s.round  # type: ignore[attr-defined]
        card = h.card
        assert card is not None
        at: dict[str, Any] = {
            "shoe": s.shoe,
            "hand": s.hand,
            "shoe_position": s.out + 1,
            "device": h.device,
            "face_up": h.face_up,
        }
        if h.claimed_box is not None:
            at["claimed_box"] = h.claimed_box
        if entered:
            at["entered_by"] = by
        exp = self.expects(s)
        if exp is None or exp["expects"] not in ("card", "dealer-draws"):
            self._not_due(t, s, d, h, exp, at)
            return
        if h.claimed_box and h.claimed_box.isdigit() and rd.box(int(h.claimed_box)) is None:
            self._wrong_box(t, s, d, int(h.claimed_box), exp, h.device)
        if exp["to"] == "dealer":
            if exp.get("hole"):
                self._hole_card(t, s, rd, d, h, at)
                return
            pos = len(rd.dealer()) + 1
            d.add("card.dealt", card=card, box="dealer", position=pos, **at)
            return
        no, i = int(exp["to"]), int(exp["split_hand"])
        b = rd.box(no)
        assert b is not None
        d.add(
            "card.dealt",
            card=card,
            box=str(no),
            split_hand=i,
            position=len(b.hands[i].cards) + 1,
            **at,
        )

    def _hole_card(
        self, t: TableState, s: ShoeState, rd: Round, d: Decision, h: Held, at: dict[str, Any]
    ) -> None:
        """Journal the hole card as a secret; publish only its commitment (``docs/decisions.md``)."""
        card = h.card
        assert card is not None
        if h.face_up:
            # The hole card came out face up: it is exposed before the boxes played.
            d.add("card.dealt", card=card, box="dealer", position=2, hole=True, exposed=True, **at)
            self._hole_exposed(t, s, d, by=h.device, card=card)
            return
        salt = hmac.new(
            self.salt_key, f"{s.shoe}:{s.hand}:{s.out + 1}".encode(), "sha256"
        ).hexdigest()[:32]
        d.add(
            "card.dealt",
            card=None,
            box="dealer",
            position=2,
            hole=True,
            commitment=commitment(card, salt),
            secret={"card": card, "salt": salt},
            **at,
        )

    def _not_due(
        self,
        t: TableState,
        s: ShoeState,
        d: Decision,
        h: Held,
        exp: dict[str, Any] | None,
        at: dict[str, Any],
    ) -> None:
        """A card drawn when none is due: burned, the round goes on (house practice, seed 002)."""
        what = exp["text"] if exp else "nothing"
        rd: Round = s.round  # type: ignore[attr-defined]
        if exp is not None and exp["expects"] == "dealer-stands":
            why = f"the dealer drew at {r.total(rd.dealer()).text()}: the dealer stands on every 17 (§4.4.2)"
        elif exp is not None and exp["expects"] == "decision":
            why = f"box {exp['box']} has not asked for a card (§3.5.3: the dealer waits for the decision)"
        else:
            why = f"no card is due (the table expects {what})"
        aid = raise_alarm(
            t,
            d,
            "card-not-due",
            f"card {h.card} drawn when none was due in round {s.hand}: {why}",
            rule="house practice (as seed 002 for an extra card): a card drawn when none is due "
            "is given to no one; it is burned and the round goes on",
            action="set the card aside with the burn cards; clear the alarm",
            severity="warning",
            device=h.device,
            card=h.card,
            hand=s.hand,
        )
        d.add(
            "card.dealt",
            card=h.card,
            box="burn",
            position=0,
            misdeal=True,
            not_due=True,
            alarm=aid,
            **at,
        )

    def _wrong_box(
        self,
        t: TableState,
        s: ShoeState,
        d: Decision,
        claimed: int,
        exp: dict[str, Any],
        dev: str | None,
    ) -> None:
        raise_alarm(
            t,
            d,
            "card-to-box-not-betting",
            f"a card was laid on box {claimed}, which did not bet in round {s.hand}",
            rule="seed 002, seed 004 §5: shoe order decides, not where the card was put; "
            "seed 003 part III §3.4.1: cards go to the boxes that bet",
            action=f"move the card to where the table expects it ({exp['text']}); clear the alarm",
            severity="warning",
            device=dev,
            hand=s.hand,
        )

    def _extra_card(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
    ) -> None:
        """Between rounds every card drawn is burned, with an alarm (house practice, seed 002)."""
        rd: Round | None = getattr(s, "round", None)
        why = ""
        if rd is not None and rd.step == "over" and rd.revealed:
            tot = r.total(rd.dealer())
            if not tot.bust and tot.total >= 17:
                why = f": the dealer drew at {tot.text()} (§4.4.2: stands on every 17)"
            else:
                why = f": round {s.hand} was settled"
        aid = raise_alarm(
            t,
            d,
            "card-not-due",
            f"card {h.card} drawn between rounds{why}",
            rule="seed 002: an extra card drawn when none was due is a burn card; blackjack "
            "burns every such card (no box is known before betting closes)",
            action="set the card aside with the burn cards; clear the alarm",
            severity="warning",
            device=h.device,
            card=h.card,
        )
        d.add(
            "card.dealt",
            hand=s.hand + 1,
            box="burn",
            position=s.extra + 1,
            extra_card=True,
            alarm=aid,
            rule="seed 002: an extra card drawn when none was due is the next hand's burn card",
            **at,
        )

    def _hole_exposed(
        self, t: TableState, s: ShoeState, d: Decision, *, by: str, card: str | None
    ) -> None:
        raise_alarm(
            t,
            d,
            "hole-card-exposed",
            f"the dealer's hole card was exposed before the boxes played in round {s.hand}",
            rule="seed 003 part III §3.7: the hole card stays face down until every box has its "
            "cards; a dealing error that cannot be corrected voids the hand (seed 000/001 art. 10)",
            action="the round is void and the bets are returned; clear the alarm",
            hand=None,
        )
        self._void_hand(
            t,
            d.state().game,
            d,
            reason="hole-card-exposed",
            by=by,
            rule="seed 003 part III §3.7; seed 000/001 art. 10: the round is void, bets returned",
        )

    # -- commands ----------------------------------------------------------------------------

    def _command(self, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
        n = c.name
        rd: Round | None = getattr(s, "round", None)
        if n == "betting.close":
            if s.phase != "betting":
                d.refused = f"betting is not open (the table is {self.phase_text(s)})"
                return
            boxes, why = self._boxes_arg(c.args.get("boxes", c.args.get("box")))
            if why:
                d.refused = why
                return
            d.add("betting.closed", shoe=s.shoe, hand=s.hand, by=c.actor, boxes=boxes)
            return
        if n in ("box.hit", "box.stand", "box.double", "box.split"):
            self._decision(s, rd, c, d, n[4:])
            return
        if n == "box.insurance":
            self._insurance(s, rd, c, d)
            return
        if n == "hole.check":
            if rd is None or s.phase != "dealing" or rd.step != "hole-check":
                d.refused = (
                    f"the hole card is not to be checked now (the table expects {self._now(s)})"
                )
                return
            bj = r.is_blackjack((rd.up or "", rd.hole or "")) if rd.up and rd.hole else False
            d.add(
                "dealer.peeked",
                shoe=s.shoe,
                hand=s.hand,
                blackjack=bj,
                by=c.actor,
                rule="seed 003 part III §3.7: under an ace the dealer checks the hole card for blackjack",
            )
            if bj:
                self._reveal(s, rd, d)
            return
        if n == "decision.timeout":
            self._timeout(s, rd, c, d)
            return
        if n == "card.misplaced":
            try:
                no = int(str(c.args.get("box", "")))
            except ValueError:
                d.refused = "card.misplaced needs box=N"
                return
            if rd is None or s.phase != "dealing":
                d.refused = f"no round is being dealt (the table is {self.phase_text(s)})"
                return
            if rd.box(no) is not None:
                d.refused = f"box {no} bet in this round: a card there is not misplaced"
                return
            exp = self.expects(s) or {"text": "nothing"}
            self._wrong_box(t, s, d, no, exp, None)
            return
        if n == "card.exposed" and s.phase in ("dealing", "paused") and rd is not None:
            if rd.hole is not None and not rd.revealed:
                d.add(
                    "card.exposed",
                    shoe=s.shoe,
                    hand=s.hand,
                    card=None,
                    by=c.actor,
                    during="dealing",
                    hole=True,
                    rule="seed 003 part III §3.7: the hole card stays face down until the boxes played",
                )
                self._hole_exposed(t, s, d, by=c.actor, card=None)
                return
        super()._command(t, s, c, d)

    def _boxes_arg(self, raw: Any) -> tuple[list[int], str | None]:
        if raw is None or raw == "" or raw == []:
            return [], (
                "betting.close needs the boxes that bet, e.g. boxes=1,3,5 "
                "(seed 003 part III §3.4: a round deals only to boxes that bet)"
            )
        items = raw if isinstance(raw, list) else str(raw).replace(" ", "").split(",")
        try:
            boxes = sorted({int(x) for x in items if str(x) != ""})
        except ValueError:
            return [], f"boxes={raw!r}: expected box numbers like 1,3,5"
        bad = [b for b in boxes if not 1 <= b <= self.rules.boxes]
        if bad or not boxes:
            return [], f"boxes={raw!r}: this table has boxes 1 to {self.rules.boxes}"
        return boxes, None

    def _now(self, s: ShoeState) -> str:
        exp = self.expects(s)
        return exp["text"] if exp else self.phase_text(s)

    def _box_arg(self, c: Command, d: Decision) -> int | None:
        try:
            return int(str(c.args.get("box", "")))
        except ValueError:
            d.refused = f"{c.name} needs box=N"
            return None

    def _decision(self, s: ShoeState, rd: Round | None, c: Command, d: Decision, what: str) -> None:
        no = self._box_arg(c, d)
        if no is None:
            return
        exp = self.expects(s) if rd is not None else None
        if exp is None or exp["expects"] != "decision":
            d.refused = f"no decision is awaited: the table expects {self._now(s)}"
            return
        if rd.box(no) is None:  # type: ignore[union-attr]
            d.refused = f"box {no} did not bet in round {s.hand}"
            return
        if exp["box"] != no:
            d.refused = (
                f"it is box {exp['box']}'s turn, not box {no}'s (§3.5: the boxes play in order)"
            )
            return
        b = rd.box(no)  # type: ignore[union-attr]
        assert b is not None
        i = int(exp["split_hand"])
        h = b.hands[i].view()
        rr = self.rules
        why = None
        if what == "hit":
            why = r.can_hit(h, split_aces_one_card=rr.split_aces_one_card)
        elif what == "double":
            why = r.can_double(
                h,
                double_on=rr.double_on,
                double_after_split=rr.double_after_split,
                split_aces_one_card=rr.split_aces_one_card,
            )
        elif what == "split":
            why = r.can_split([x.view() for x in b.hands])
        if why is not None:
            d.refused = f"box {no} may not {what}: {why}"
            return
        d.add(
            "box.decision",
            shoe=s.shoe,
            hand=s.hand,
            box=no,
            split_hand=i,
            decision=what,
            by=c.actor,
            player=str(c.args.get("player", "")) or None,
        )

    def _insurance(self, s: ShoeState, rd: Round | None, c: Command, d: Decision) -> None:
        no = self._box_arg(c, d)
        if no is None:
            return
        if rd is None or s.phase != "dealing" or rd.step != "insurance":
            d.refused = f"insurance is not on offer now (§2.5.2: only under an ace, before the dealer draws; the table expects {self._now(s)})"
            return
        b = rd.box(no)
        if b is None:
            d.refused = f"box {no} did not bet in round {s.hand}"
            return
        if b.insurance is not None:
            d.refused = (
                f"box {no} has already {'taken' if b.insurance else 'declined'} insurance (§2.4)"
            )
            return
        take = str(c.args.get("take", "")).lower()
        if take not in ("yes", "no", "true", "false", "1", "0"):
            d.refused = "box.insurance needs take=yes or take=no"
            return
        d.add(
            "box.insurance",
            shoe=s.shoe,
            hand=s.hand,
            box=no,
            taken=take in ("yes", "true", "1"),
            by=c.actor,
            player=str(c.args.get("player", "")) or None,
        )

    def _timeout(self, s: ShoeState, rd: Round | None, c: Command, d: Decision) -> None:
        exp = self.expects(s) if rd is not None else None
        turn = str(c.args.get("turn", ""))
        if exp is None or exp["expects"] not in ("decision", "insurance") or str(rd.turn) != turn:  # type: ignore[union-attr]
            d.refused = f"no decision of turn {turn} is waiting (the table expects {self._now(s)})"
            return
        rule = "seed 003 part III §3.5.3: when the box's time runs out the dealer moves on; the box stands"
        if exp["expects"] == "decision":
            d.add(
                "box.decision",
                shoe=s.shoe,
                hand=s.hand,
                box=exp["box"],
                split_hand=exp["split_hand"],
                decision="stand",
                by=c.actor,
                timeout=True,
                rule=rule,
            )
            return
        for no in exp["boxes"]:
            d.add(
                "box.insurance",
                shoe=s.shoe,
                hand=s.hand,
                box=no,
                taken=False,
                by=c.actor,
                timeout=True,
                rule="seed 003 part III §3.7: insurance is offered for the time chosen; then declined",
            )

    # -- voids ------------------------------------------------------------------------------------

    def _void_hand(self, t: TableState, s: ShoeState, d: Decision, **kw: Any) -> None:
        super()._void_hand(t, s, d, **kw)
        rd: Round | None = getattr(s, "round", None)
        if rd is None:
            return
        void = next(x for x in reversed(d.drafts) if x.type == "hand.void")
        void.data["boxes"] = [
            {"box": b.box, "hands": [list(h.cards) for h in b.hands]} for b in rd.boxes
        ]
        # A void turns the hole card over too: its commitment is always opened.
        void.data["dealer"] = list(rd.dealer())
        if rd.hole is not None:
            void.data["hole"] = {"card": rd.hole, "salt": rd.salt, "commitment": rd.commitment}

    # ============================================================ apply

    def apply(self, s: ShoeState, type_: str, data: dict[str, Any]) -> ShoeState:
        rep = msgspec.structs.replace
        if type_ == "card.dealt" and data.get("box") not in ("burn", "void"):
            card = data.get("card") or (data.get("secret") or {}).get("card")
            if card is not None:
                s = rep(s, seen={**s.seen, card: s.seen.get(card, 0) + 1})
            s = rep(s, out=s.out + 1)
            dev = data.get("device")
            if dev and dev not in s.readers and not data.get("entered_by"):
                s = rep(s, readers=(*s.readers, dev))
            return rep(s, round=apply_round(s.round, type_, data, self.rules))  # type: ignore[attr-defined]
        out = super().apply(s, type_, data)
        if not isinstance(out, BlackjackState):  # the shoe procedures start a shoe afresh
            out = BlackjackState(**msgspec.structs.asdict(out))
        rd = apply_round(out.round, type_, data, self.rules)
        if type_ in ("hand.void", "shoe.started", "shoe.void"):
            rd = None
        if rd is not out.round:
            out = rep(out, round=rd)
        return out

    def helpers(self, submit: Any, state: Any) -> list[Any]:
        """The decision clock, and with ``virtual_players`` the demo's game server (:mod:`.clock`)."""
        from daemon.games.blackjack.clock import DecisionClock, VirtualPlayers

        out: list[Any] = [DecisionClock(submit, state, self)]
        if self.rules.virtual_players:
            out.append(VirtualPlayers(submit, state, self))
        return out

    def secret_in_play(self, s: ShoeState) -> bool:
        """From no more bets to the reveal a hole card is, or may be about to be, face down."""
        rd: Round | None = getattr(s, "round", None)
        return rd is not None and s.phase in ("dealing", "paused") and not rd.revealed

    # ============================================================ views

    def summary(self, s: ShoeState) -> dict[str, Any]:
        """``tablectl status`` and the simulator's resume: never the hole card before its reveal."""
        out = super().summary(s)
        out["cards"] = {}
        rd: Round | None = getattr(s, "round", None)
        out["round"] = None if rd is None else public_round(rd)
        out["expects"] = self.expects(s)
        return out


def _in_play(rd: Round) -> bool:
    """§4.4.3: a hand the dealer's total can still change (not bust, not a blackjack paid)."""
    for b in rd.boxes:
        for h in b.hands:
            if not r.total(h.cards).bust and not r.is_blackjack(h.cards, split=h.split):
                return True
    return False


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
