"""The shoe game's state and house rules: what a shoe is, what a hand plug must say.

Pure data and small pure functions; every other module of the package works on these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Protocol

import msgspec

Phase = Literal[
    "no-shoe", "burning", "demo", "settling", "betting", "dealing", "paused", "shoe-ended"
]


IN_HAND: tuple[Phase, ...] = ("betting", "dealing", "paused")
#: results on one scoreboard: more than any shoe deals (12 decks of Dragon Tiger: 312),
#: so only a continuous shuffler's endless shoe starts a fresh board now and then
ROAD_HANDS = 320


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
    #: the paytable in force (None: the game's shipped default, ``docs/settlement.md``), and the
    #: house's own paytables by name (``[game.paytables.<name>]``: a bet spot = its ratio)
    paytable: str | None = None
    paytables: dict[str, dict[str, Any]] = {}

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
    #: the winners of this shoe's real hands, for the scoreboards (a full board starts afresh)
    winners: tuple[str, ...] = ()

    def board(self) -> tuple[str, ...]:
        """The results on the scoreboard before the next one: a full board starts afresh."""
        return self.winners if len(self.winners) < ROAD_HANDS else ()


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


def held_from(data: Mapping[str, Any]) -> Held:
    return Held(
        card=data.get("card"),
        device=data.get("device", ""),
        face_up=bool(data.get("face_up")),
        claimed_box=data.get("claimed_box"),
        code=data.get("code", ""),
    )


class ShoeParts:
    """What every part of the shoe game (its mixins) holds: the house rules, the hand plug,
    the full shoe's card counts; and how a phase reads."""

    rules: ShoeRules
    hand_rules: ClassVar[HandRules]
    full: Mapping[str, int]

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
