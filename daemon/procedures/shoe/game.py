"""Shoe procedures for card games dealt from a shoe: pure decide/apply.

Burn, demonstration hands, cut card, shoe change, continuous shuffling, and
the dealer-error procedures of the house rules, each citing its seed
(``../shared/RULES.md``; ``docs/procedures.md``). What a hand is — which box
is due the next card and what the result is — comes from a
:class:`HandRules` plug, so Baccarat and Dragon Tiger share every procedure.

Phases::

    no-shoe ─shoe.new─▶ burning ─▶ demo ─▶ settling ─open─▶ betting ─close─▶ dealing ─result─▶ settling
    (paused while a supervisor must enter or accept a card; shoe-ended after the last hand or a void)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Protocol

import msgspec

from daemon.cards import CardError, shoe_composition
from daemon.cards import card as parse_card
from daemon.games.describe import Describer
from daemon.procedures.shoe.describe import ShoeDescriber
from daemon.table import (
    REASON,
    Arg,
    Command,
    CommandSpec,
    Decision,
    DeviceHealth,
    DeviceReading,
    Input,
    TableState,
    raise_alarm,
    spec,
)
from drivers.readings import (
    CardDrawn,
    CardUnreadable,
    CutCardOut,
    Reading,
    ShoeInserted,
    ShoeRemoved,
)
from drivers.shuffler_readings import (
    ShuffleCountMismatch,
    ShuffleDone,
    ShufflerDoorClosed,
    ShufflerDoorOpen,
    ShufflerFault,
    ShufflerJam,
    ShuffleStarted,
)

SHUFFLER_READINGS = (
    ShuffleStarted,
    ShuffleDone,
    ShuffleCountMismatch,
    ShufflerJam,
    ShufflerDoorOpen,
    ShufflerDoorClosed,
    ShufflerFault,
)

Phase = Literal[
    "no-shoe", "burning", "demo", "settling", "betting", "dealing", "paused", "shoe-ended"
]
IN_HAND: tuple[Phase, ...] = ("betting", "dealing", "paused")


class ShoeRules(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """House rules of a shoe game; ``docs/procedures.md`` gives each one's seed and default."""

    decks: Annotated[int, msgspec.Meta(ge=6, le=12)] = 8
    #: cards left behind the cut card (seed 000/001 art. 2.1: about 12; seed 003 §3.3.4: 7).
    cut_card: Annotated[int, msgspec.Meta(ge=0)] = 14
    #: ``first-card`` (seed 000/001 art. 2.1, 002, 004), ``decks``, ``fixed:N``, ``none``.
    start_burn: Annotated[str, msgspec.Meta(pattern=r"^(first-card|decks|none|fixed:\d{1,2})$")] = (
        "first-card"
    )
    #: cards burned before every hand (seed 000/001 art. 8; seed 002).
    burn_between_hands: Annotated[int, msgspec.Meta(ge=0, le=5)] = 0
    #: demonstration hands at the start of a shoe (seed 000/001 art. 2.2).
    demo_hands: Annotated[int, msgspec.Meta(ge=0, le=3)] = 0
    #: seed 000/001 art. 3.1: the cut card's hand is the last, or (house option) one more.
    cut_card_rule: Literal["last-hand", "one-more-hand"] = "last-hand"
    #: seed 000/001 art. 2.3, 7.2: no cut card, no burn, cards return after every hand.
    continuous_shuffler: bool = False
    #: seed 004 §4 (manager's option), seed 002 VIP: an exposed card voids the rest of the shoe.
    exposed_card_voids_shoe: bool = False
    #: seed 003 §2.1.8: a system failure (daemon restart mid-hand) voids the hand in play.
    system_failure_voids_hand: bool = False
    #: the croupier opens betting ``settle_seconds`` after a result and closes it after
    #: ``betting_seconds`` (None: people or backends open and close betting).
    betting_seconds: Annotated[float, msgspec.Meta(gt=0)] | None = None
    settle_seconds: Annotated[float, msgspec.Meta(ge=0)] = 3.0
    #: the croupier starts a new shoe by itself when one ends (demo tables).
    auto_new_shoe: bool = False
    #: a new shoe starts only from a shuffler's completed shuffle with the right card count
    #: (a counting shuffler's wrong count takes the cards out of play: COMAR 36.05.03.27 C)
    require_shuffle: bool = False

    def __post_init__(self) -> None:
        if self.cut_card >= self.decks * 52:
            raise ValueError(
                f"cut_card ({self.cut_card}) must be fewer than the shoe's {self.decks * 52} cards"
            )

    def first_burn(self) -> int:
        """Cards to burn when a shoe starts (1 for first-card: the exposed card decides the rest)."""
        b = "none" if self.continuous_shuffler else self.start_burn
        if b == "none":
            return 0
        if b == "decks":
            return self.decks
        if b == "first-card":
            return 1
        return int(b.split(":")[1])


class Held(msgspec.Struct, frozen=True):
    """A card out of the shoe that waits for a supervisor before it is placed."""

    card: str | None  # None: the shoe could not read it
    device: str
    face_up: bool = False
    claimed_box: str | None = None
    code: str = ""


class ShoeState(msgspec.Struct, frozen=True):
    phase: Phase = "no-shoe"
    shoe: int = 0
    hand: int = 0  # number of the real hand in play or last played in this shoe
    demo_hand: int = 0  # demonstration hands started in this shoe
    demo: bool = False  # a demonstration hand is being dealt
    burn_due: int = 0  # cards still to burn (start of shoe or start of a hand)
    burn_first_pending: bool = False  # first-card rule: the next card is exposed
    burned: tuple[str, ...] = ()  # start-of-shoe burn cards
    boxes: dict[str, tuple[str, ...]] = {}  # the hand in play, box → cards in dealing order
    carried: tuple[str, ...] = ()  # cards drawn between hands that belong to the next hand
    extra: int = 0  # cards drawn since the last result with none due
    seen: dict[str, int] = {}  # cards out of this shoe
    out: int = 0
    cut_card_out: bool = False
    last_hand: int | None = None  # set when the cut card comes out
    burn_incomplete: bool = False  # betting opened before the start-of-shoe burn was done
    paused: str | None = None  # "card-entry" | "decision"
    resume: Phase = "dealing"
    held: tuple[Held, ...] = ()
    pause_alarm: str | None = None
    results: int = 0
    #: the last completed shuffle that passed the count, not yet made a shoe (id, device)
    shuffle: dict[str, Any] | None = None
    #: devices that have read cards at this table: a hand depends on them
    readers: tuple[str, ...] = ()


class HandRules(Protocol):
    """What a shoe game says about its hands."""

    boxes: tuple[str, ...]

    def next_box(self, boxes: Mapping[str, tuple[str, ...]]) -> str | None: ...

    def result(
        self, boxes: Mapping[str, tuple[str, ...]], rules: Any, hand: int
    ) -> dict[str, Any]: ...


def burn_count(first_card: str) -> int:
    """seed 000/001 art. 2.1; seed 002 "规则"; seed 004: the first card's value, 10/J/Q/K = 10."""
    r = first_card[0]
    return 1 if r == "A" else 10 if r in "TJQK" else int(r)


def _held(data: Mapping[str, Any]) -> Held:
    return Held(
        card=data.get("card"),
        device=data.get("device", ""),
        face_up=bool(data.get("face_up")),
        claimed_box=data.get("claimed_box"),
        code=data.get("code", ""),
    )


class ShoeGame:
    """A card game dealt from a shoe: the table's game for Baccarat and Dragon Tiger."""

    name: ClassVar[str]
    Rules: ClassVar[type[ShoeRules]] = ShoeRules
    State: ClassVar[type[ShoeState]] = ShoeState
    STATE_VERSION: ClassVar[int] = 1
    hand_rules: ClassVar[HandRules]

    describe: ClassVar[Describer] = ShoeDescriber()
    commands: ClassVar[dict[str, CommandSpec]] = {
        "betting.open": spec("open betting for the next hand", "dealer", "supervisor"),
        "betting.close": spec("no more bets: the hand may be dealt", "dealer", "supervisor"),
        "shoe.new": spec("a new shoe is in (shuffled and cut)", "dealer", "supervisor"),
        "shoe.cut-card": spec(
            "the cut card came out", "dealer", "supervisor", words=("cut-card",)
        ),
        "card.exposed": spec(
            "a card was exposed out of turn",
            "dealer",
            "supervisor",
            words=("exposed",),
            args=(Arg("card", "the exposed card, e.g. KD, when it is known", required=False),),
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

    def __init__(self, rules: ShoeRules) -> None:
        self.rules = rules
        self.full = shoe_composition(rules.decks)

    def initial(self) -> ShoeState:
        return ShoeState()

    def held_alarm(self, s: ShoeState) -> str | None:
        """The alarm a paused hand waits on, which only its own commands may settle."""
        return s.pause_alarm if s.paused in ("card-entry", "decision") else None

    def summary(self, s: ShoeState) -> dict[str, Any]:
        """The game state as a technician reads it (``tablectl status``)."""
        return {
            "phase": s.phase,
            "text": self.phase_text(s),
            "shoe": s.shoe,
            "hand": s.hand,
            "cards": {k: list(v) for k, v in s.boxes.items()},
            "cards_out": s.out,
            "cards_left": self.rules.decks * 52 - s.out,
            "decks": self.rules.decks,
            "cut_card": self.rules.cut_card,
            "cut_card_out": s.cut_card_out,
            "last_hand": s.last_hand,
            "paused": s.paused,
            "results": s.results,
        }

    # ====================================================================== decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        s: ShoeState = t.game
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, CardDrawn):
                self._card(
                    t,
                    s,
                    d,
                    Held(
                        card=r.card,
                        device=dev,
                        face_up=r.face_up,
                        claimed_box=r.box,
                        code=r.frame.decode("ascii", "replace"),
                    ),
                )
            elif isinstance(r, CardUnreadable):
                self._card(t, s, d, Held(card=None, device=dev, code=r.code))
            elif isinstance(r, CutCardOut):
                self._cut_card(t, s, d, source=dev)
            elif isinstance(r, ShoeRemoved):
                d.add("shoe.removed", shoe=s.shoe, device=dev)
            elif isinstance(r, ShoeInserted):
                d.add("shoe.inserted", shoe=s.shoe, device=dev)
            elif isinstance(r, SHUFFLER_READINGS):
                self._shuffler(t, s, d, dev, r)
        elif isinstance(inp, Command):
            self._command(t, s, inp, d)
        elif isinstance(inp, DeviceHealth) and inp.device in s.readers:
            self._reader_health(t, s, d, inp)

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

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 §2.1.8: when the house says so, a system failure voids the hand in play."""
        s: ShoeState = t.game
        if self.rules.system_failure_voids_hand and s.phase in ("dealing", "paused"):
            self._void_hand(
                t,
                s,
                d,
                reason="system-failure",
                by="table",
                rule="seed 003 §2.1.8: a system failure voids the hand in play",
            )

    # -- commands ----------------------------------------------------------------------

    def _command(self, t: TableState, s: ShoeState, c: Command, d: Decision) -> None:
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
            d.add(
                "shoe.started",
                shuffle=s.shuffle,
                shoe=s.shoe + 1,
                decks=r.decks,
                burn="none" if r.continuous_shuffler else r.start_burn,
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
            self._void_hand(t, s, d, reason=reason or "supervisor", by=by)
        elif n == "shoe.void":
            if s.phase in ("no-shoe", "shoe-ended"):
                d.refused = f"there is no shoe in play to void (the table is {self.phase_text(s)})"
                return
            if s.phase in IN_HAND:
                self._void_hand(t, s, d, reason=reason or "shoe voided", by=by, end_shoe=False)
            d.add(
                "shoe.void",
                shoe=s.shoe,
                reason=reason or "supervisor",
                by=by,
                rule="seed 000/001 art. 10: a supervisor decides",
            )

    def _shuffler(self, t: TableState, s: ShoeState, d: Decision, dev: str, r: Reading) -> None:
        """The shuffler's word is untrusted: counts are checked, and no deck order is ever kept."""
        full = self.rules.decks * 52
        if isinstance(r, ShuffleStarted):
            d.add("shuffle.started", device=dev, shuffle_id=r.shuffle_id, decks=r.decks)
        elif isinstance(r, ShuffleDone):
            problems = []
            if r.decks != self.rules.decks:
                problems.append(f"{r.decks} decks shuffled, the table plays {self.rules.decks}")
            if r.cards != full:
                problems.append(f"{r.cards} cards counted, {full} expected")
            if r.rank_counts:
                bad = {k: v for k, v in r.rank_counts.items() if v != self.rules.decks * 4}
                if bad:
                    problems.append(f"rank counts off: {bad}")
            ok = not problems
            d.add(
                "shuffle.completed",
                device=dev,
                shuffle_id=r.shuffle_id,
                decks=r.decks,
                cards=r.cards,
                ok=ok,
                problems=problems,
            )
            if not ok:
                self._count_alarm(t, d, dev, r.shuffle_id, "; ".join(problems))
        elif isinstance(r, ShuffleCountMismatch):
            d.add(
                "shuffle.completed",
                device=dev,
                shuffle_id=r.shuffle_id,
                decks=self.rules.decks,
                cards=r.counted,
                ok=False,
                problems=[f"{r.counted} cards counted, {r.expected} expected"],
            )
            self._count_alarm(
                t, d, dev, r.shuffle_id, f"{r.counted} cards counted, {r.expected} expected"
            )
        elif isinstance(r, ShufflerFault | ShufflerJam):
            what = (
                f"fault {r.code}: {r.meaning}"
                if isinstance(r, ShufflerFault)
                else f"jam {r.where}".strip()
            )
            raise_alarm(
                t,
                d,
                "shuffler-fault",
                f"the shuffler reports {what}",
                rule="a shuffler malfunction mid-round ends the round, wagers returned "
                "(mini-baccarat rule 12.4)",
                action="clear the jam or fault, run the shuffler's self-test, then clear the alarm",
                device=dev,
            )
            if s.phase in IN_HAND and not s.demo:
                self._void_hand(
                    t,
                    s,
                    d,
                    reason="shuffler-fault",
                    by="table",
                    rule="mini-baccarat rule 12.4: wagers returned",
                )
        elif isinstance(r, ShufflerDoorOpen):
            raise_alarm(
                t,
                d,
                "shuffler-door-open",
                "the shuffler's door is open",
                rule="cards must not be reachable during play",
                action="close the door",
                severity="warning",
                device=dev,
            )
        elif isinstance(r, ShufflerDoorClosed):
            # the door's own alarm settles itself; a fault or a count never does
            for a in t.alarms.values():
                if a.kind == "shuffler-door-open" and a.device == dev:
                    d.add("alarm.cleared", id=a.id, by=dev, reason="door closed")

    def _count_alarm(
        self, t: TableState, d: Decision, dev: str, shuffle_id: int, what: str
    ) -> None:
        raise_alarm(
            t,
            d,
            "shuffle-count-mismatch",
            f"shuffle {shuffle_id}: {what}; the cards are out of play",
            rule="a counting shuffler's wrong count takes the deck out of play (COMAR 36.05.03.27 C)",
            action="take the cards out, recount or replace them, shuffle again",
            device=dev,
        )

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

    def _not_now(self, s: ShoeState, what: str) -> str:
        if s.phase == "no-shoe":
            return f"cannot {what}: no shoe is in play (start one with `shoe new`)"
        if s.phase == "shoe-ended":
            return f"cannot {what}: shoe {s.shoe} has ended (start a new shoe)"
        return f"cannot {what}: the table is {self.phase_text(s)}"

    @staticmethod
    def phase_text(s: ShoeState) -> str:
        return {
            "no-shoe": "waiting for a shoe",
            "burning": f"burning cards ({s.burn_due} to go)",
            "demo": "dealing demonstration hands",
            "settling": "between hands",
            "betting": f"taking bets for hand {s.hand}",
            "dealing": f"dealing hand {s.hand}",
            "paused": f"paused until a supervisor {'enters' if s.paused == 'card-entry' else 'decides on'} a card",
            "shoe-ended": f"at the end of shoe {s.shoe}",
        }[s.phase]

    # -- cards -------------------------------------------------------------------------

    def _card(
        self,
        t: TableState,
        s: ShoeState,
        d: Decision,
        h: Held,
        *,
        by: str | None = None,
        entered: bool = False,
        accepted: bool = False,
    ) -> None:
        if s.paused is not None:
            # Shoe order decides: a card drawn while an earlier one waits queues behind it.
            d.add(
                "card.held",
                shoe=s.shoe,
                hand=s.hand,
                card=h.card,
                device=h.device,
                face_up=h.face_up,
                claimed_box=h.claimed_box,
                code=h.code,
                position=len(s.held) + 1,
                reason="waiting for the card before it",
            )
            return
        if h.card is None:
            self._pause(
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
            raise_alarm(
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
            )
            return
        if (
            not accepted
            and not self.rules.continuous_shuffler
            and s.seen.get(h.card, 0) >= self.full[h.card]
        ):
            self._pause(
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
        at = {
            "shoe": s.shoe,
            "card": card,
            "shoe_position": s.out + 1,
            "device": h.device,
            "face_up": h.face_up,
        }
        if h.claimed_box is not None:
            at["claimed_box"] = h.claimed_box
        if entered:
            at["entered_by"] = by
        if h.face_up:
            at["face_up_rule"] = "seed 000/001 art. 4: a reversed card stands"
        p = s.phase
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
            aid = raise_alarm(
                t,
                d,
                "card-before-betting-closed",
                f"card {card} left the shoe while betting was open for hand {s.hand}",
                rule="seed 003 §2.1.6: a hand's first card leaves the shoe only after betting closed",
                action="`tablectl void hand` returns the bets; or clear the alarm: the card is "
                "set aside as a burn card and the hand goes on",
                device=h.device,
                card=card,
                hand=s.hand,
            )
            d.add("card.dealt", hand=s.hand, box="burn", position=0, misdeal=True, alarm=aid, **at)
        elif p == "demo" or (p == "settling" and s.demo):
            if not s.demo:
                d.add("hand.started", shoe=s.shoe, hand=s.demo_hand + 1, demo=True)
            self._deal(s, d, at, hand=s.demo_hand + (0 if s.demo else 1), demo=True)
        elif p == "settling":
            self._extra_card(t, s, d, h, at)
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
            elif s.burn_due > 0:
                d.add(
                    "card.dealt",
                    hand=s.hand,
                    box="burn",
                    position=self.rules.burn_between_hands - s.burn_due + 1,
                    rule="seed 000/001 art. 8; seed 002: burn before the hand",
                    **at,
                )
            else:
                self._deal(s, d, at, hand=s.hand, demo=False)

    def _burn_rule(self) -> str:
        r = self.rules.start_burn
        if r == "first-card":
            return "seed 000/001 art. 2.1, seed 002, seed 004: the first card's value says how many to burn"
        if r == "decks":
            return "seed 000/001 art. 2.1: as many cards as decks"
        return f"house rule {r}"

    def _extra_card(
        self, t: TableState, s: ShoeState, d: Decision, h: Held, at: dict[str, Any]
    ) -> None:
        """seed 002: an extra card burns for the next hand; a second is the next hand's first card."""
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
            aid = raise_alarm(
                t,
                d,
                "too-many-extra-cards",
                f"card {h.card} is extra card {n} drawn between hands",
                rule="seed 002 covers two extra cards; more is a dealing error (seed 000/001 art. 10)",
                action="a supervisor decides: clear the alarm to set the card aside, or "
                "`tablectl void shoe`",
                device=h.device,
                card=h.card,
            )
            d.add(
                "card.dealt",
                hand=s.hand + 1,
                box="burn",
                position=n,
                extra_card=True,
                misdeal=True,
                alarm=aid,
                **at,
            )

    def _deal(
        self, s: ShoeState, d: Decision, at: dict[str, Any], *, hand: int, demo: bool
    ) -> None:
        boxes = s.boxes or {b: () for b in self.hand_rules.boxes}
        box = self.hand_rules.next_box(boxes)
        if box is None:
            return  # a complete hand is settled in the same decision; nothing is due
        if at.get("claimed_box") not in (None, box, "third"):
            at["order_rule"] = (
                "seed 002, seed 004 §5: shoe order decides, not where the card was put"
            )
        position = sum(len(v) for v in boxes.values()) + 1
        d.add("card.dealt", hand=hand, box=box, position=position, demo=demo, **at)
        after = {**boxes, box: (*boxes[box], at["card"])}
        if self.hand_rules.next_box(after) is not None:
            return
        data = self.hand_rules.result(after, self.rules, hand)
        data.update(shoe=s.shoe, hand=hand, demo=demo)
        if demo:
            d.add("hand.demo", **data)
            return
        d.add("hand.result", **data)
        if s.last_hand is not None and hand >= s.last_hand:
            d.add(
                "shoe.ended",
                shoe=s.shoe,
                hands=hand,
                reason="cut-card",
                cards_out=s.out + 1,
                rule="seed 000/001 art. 3.1: the cut card's hand was the last",
            )

    def _cut_card(self, t: TableState, s: ShoeState, d: Decision, source: str) -> None:
        if self.rules.continuous_shuffler or s.phase in ("no-shoe", "shoe-ended") or s.cut_card_out:
            why = (
                "a continuous shuffler has no cut card (seed 000/001 art. 2.3)"
                if self.rules.continuous_shuffler
                else "no shoe is in play"
                if s.phase == "no-shoe"
                else "the cut card is already out"
                if s.cut_card_out
                else f"shoe {s.shoe} has already ended"
            )
            raise_alarm(
                t,
                d,
                "cut-card-unexpected",
                f"cut card reported but {why}",
                rule="one cut card per shoe",
                action="check the shoe and the report's source",
                severity="warning",
                device=source,
            )
            return
        if s.phase in ("dealing", "paused") and self.rules.cut_card_rule == "last-hand":
            last, why = (
                s.hand,
                "seed 000/001 art. 3.1: the hand in which the cut card appears is the last",
            )
        elif s.phase in ("dealing", "paused"):
            last, why = s.hand + 1, "house rule one-more-hand: one more hand after the cut card's"
        else:
            last = s.hand if s.phase == "betting" else s.hand + 1
            why = "seed 000/001 art. 3.1: a cut card between hands makes the next hand the last"
        d.add(
            "shoe.cut_card",
            shoe=s.shoe,
            hand=s.hand,
            last_hand=last,
            source=source,
            rule=why,
            cards_out=s.out,
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
            self._void_hand(
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

    def _void_hand(
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
        hand = s.demo_hand if s.demo else s.hand
        d.add(
            "hand.void",
            shoe=s.shoe,
            hand=hand,
            reason=reason,
            by=by,
            rule=rule,
            cards={k: list(v) for k, v in s.boxes.items()},
            demo=s.demo,
        )
        # The void settles the alarms that were about this hand (a misdeal, a card to enter).
        for a in t.alarms.values():
            if a.hand is not None and a.hand == s.hand and not s.demo:
                d.add("alarm.cleared", id=a.id, by=by, reason="hand voided")
        if end_shoe and not s.demo and s.last_hand is not None and s.hand >= s.last_hand:
            d.add(
                "shoe.ended",
                shoe=s.shoe,
                hands=s.hand,
                reason="cut-card",
                cards_out=s.out,
                rule="seed 000/001 art. 3.1: the cut card's hand was the last",
            )

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

    # ======================================================================= apply

    def apply(self, s: ShoeState, type_: str, data: dict[str, Any]) -> ShoeState:
        rep = msgspec.structs.replace
        if type_ == "card.dealt":
            card, box = data["card"], data["box"]
            s = rep(s, seen={**s.seen, card: s.seen.get(card, 0) + 1}, out=s.out + 1)
            dev = data.get("device")
            if dev and dev not in s.readers and not data.get("entered_by"):
                s = rep(s, readers=(*s.readers, dev))
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
            if data.get("carried"):
                return rep(s, extra=s.extra + 1, carried=(*s.carried, card))
            boxes = s.boxes or {b: () for b in self.hand_rules.boxes}
            return rep(s, boxes={**boxes, box: (*boxes[box], card)})
        if type_ == "hand.started":
            return rep(
                s, demo=True, demo_hand=data["hand"], boxes={b: () for b in self.hand_rules.boxes}
            )
        if type_ == "shuffle.completed":
            return rep(
                s,
                shuffle={"shuffle_id": data["shuffle_id"], "device": data["device"]}
                if data["ok"]
                else None,
            )
        if type_ == "shoe.started":
            due = self.rules.first_burn() if data["burn"] != "none" else 0
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
                phase="demo" if self.rules.demo_hands else "settling",
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
            boxes = {b: () for b in self.hand_rules.boxes}
            if s.carried:
                boxes[self.hand_rules.boxes[0]] = s.carried
            between = self.rules.burn_between_hands if s.hand > 1 else 0
            return rep(
                s,
                phase="dealing",
                boxes=boxes,
                carried=(),
                extra=0,
                burn_due=max(0, between - min(s.extra, between)),
            )
        if type_ == "hand.demo":
            phase = "demo" if data["hand"] < self.rules.demo_hands else "settling"
            return rep(s, phase=phase, demo=False, boxes={})
        if type_ == "hand.result":
            phase = (
                "shoe-ended"
                if s.last_hand is not None and data["hand"] >= s.last_hand
                else "settling"
            )
            # seed 000/001 art. 7.2: a continuous shuffler takes the cards back after every hand.
            seen = {} if self.rules.continuous_shuffler else s.seen
            return rep(s, phase=phase, boxes={}, results=s.results + 1, seen=seen, extra=0)
        if type_ == "hand.void":
            if data.get("demo"):
                return rep(
                    s,
                    phase="demo" if s.demo_hand < self.rules.demo_hands else "settling",
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
                held=tuple(_held(x) for x in data["held"]),
                pause_alarm=data["alarm"],
            )
        if type_ == "card.held":
            return rep(s, held=(*s.held, _held(data)))
        if type_ == "table.resumed":
            return rep(s, phase=s.resume, paused=None, held=(), pause_alarm=None)
        return s
