"""A simulated electronic shoe and the dealer drawing from it, speaking shoe-line on a pty.

It deals a seeded, shuffled shoe the way a dealer follows the table: it
burns when a shoe starts, deals when betting closes and stops when the table
announces the result — so it needs no copy of the game's rules and serves
Baccarat and Dragon Tiger alike. The cut card comes out at its place in the
shoe. Dealer errors are injected on request (:meth:`inject`) so tests and
demos can show every procedure end to end through a real pty.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Final

import structlog

from drivers.card_codes import encode
from drivers.cards import DECK
from drivers.sim.dealer import DealerOptions, PacedDealer

log = structlog.get_logger("sim.shoe")

ERRORS: Final = (
    "extra-card",  # one card too many after a result (seed 002)
    "two-extra-cards",  # two too many (seed 002)
    "early-card",  # a card out while betting is open (seed 003 §2.1.6)
    "forgotten-burn",  # a new shoe dealt without its burn (seed 002)
    "unreadable",  # the next card cannot be read
    "face-up",  # the next card is face up in the shoe (seed 000/001 art. 4)
    "garbage",  # line noise on the wire
    "repeat",  # the next card is transmitted twice
)


class Options(DealerOptions):
    """``[devices.sim]`` of a simulated shoe (and of the USB scanner, which deals like one):
    ``seed``, ``pace`` (seconds between two cards), ``errors`` (of :data:`ERRORS`, in this
    order) and ``error_every`` (one everyday error every N hands)."""

    FAULTS = ERRORS
    fault_name = "dealer error"


class ShoeSimulator(PacedDealer):
    """The dealer drawing a seeded shoe's cards past the shoe's reader."""

    Options = Options

    def __init__(
        self,
        *,
        encoding: str = "rank-suit",
        cut_card_code: str | None = "CUT",
        face_up_marker: str | None = "!",
        **dealer: Any,
    ) -> None:
        """``dealer``: :class:`PacedDealer`'s (seed, pace, read_error_code, errors, error_every)."""
        super().__init__(**dealer)
        self.encoding = encoding
        self.cut_code = cut_card_code
        self.face_up_marker = face_up_marker
        self._emptied: asyncio.Event | None = None
        self.cards: list[str] = []
        self.cut_at = 0
        self.sent = 0
        self.history: list[str] = []  # every card drawn, in shoe order (what a camera would show)
        self._pos = 0  # cards dealt in the hand in play, for the boxed encoding's box letter
        self._task: asyncio.Task[None] | None = None
        self._hands = 0
        self._skip_burn = False
        self._burning = False
        self._dealing = False
        self._guided = False  # the table publishes table.expects: deal only what it asks

    @classmethod
    def from_options(cls, shoe: Any, o: Options, **more: Any) -> ShoeSimulator:
        """From the driver's options (encoding, marker codes), ``[devices.sim]`` and ``more``
        (a subclass's own arguments)."""
        return cls(
            **more,
            encoding=shoe.encoding,
            cut_card_code=shoe.cut_card_code,
            face_up_marker=shoe.face_up_marker,
            **cls.dealer_args(o, shoe.read_error_code),
        )

    # -- the pty ---------------------------------------------------------------------------

    async def free_run(self, decks: int = 8, cut_card: int = 14) -> None:
        """No table to follow (``tablectl sim``): shoe after shoe, every card dealt."""
        self._emptied = asyncio.Event()
        shoe = 0
        while True:
            shoe += 1
            self._on(
                "shoe.started", {"shoe": shoe, "decks": decks, "cut_card": cut_card, "burn": "none"}
            )
            self._dealing = True
            self._deal(decks * 52 + 1)  # one more than the shoe holds: the empty shoe is seen
            await self._emptied.wait()
            self._emptied.clear()

    def draw(self) -> None:
        if not self.cards:
            log.info("shoe is empty")
            self._want = 0
            if self._emptied is not None:
                self._emptied.set()
            return
        if self.cut_code and len(self.cards) == self.cut_at:
            self._line(self.cut_code)
        card = self.cards.pop()
        self.sent += 1
        self.history.append(card)
        letter = "ACBDE"[min(self._pos, 4)] if self._dealing else "A"
        self._pos += 1
        code = encode(card, self.encoding, letter)  # type: ignore[arg-type]
        self._send(code, "face-up", code + (self.face_up_marker or ""))

    def _take(self, kind: str) -> bool:
        """Errors happen in the order asked, each at its next chance."""
        return self.pending.take(kind)

    # -- following the table -----------------------------------------------------------------

    def _on(self, t: str, data: dict[str, Any]) -> None:
        if t == "shoe.started":
            self._new_shoe(int(data["shoe"]), int(data["decks"]), int(data["cut_card"]))
            if data["burn"] != "none" and not self._take("forgotten-burn"):
                self._burning = True
                self._deal()
        elif (
            t == "card.dealt"
            and data.get("box") == "burn"
            and self._burning
            and data.get("hand") == 0
        ):
            pass  # the burn goes on until shoe.burn; see the batch end below
        elif t == "shoe.burn":
            self._burning = False
            self._want = 0
        elif t == "betting.opened":
            if self._take("early-card"):
                self._deal()
        elif t == "betting.closed":
            self._dealing = True
            self._pos = 0
            self._deal()
        elif t == "card.dealt" and self._dealing:
            pass
        elif t in ("hand.result", "hand.void"):
            self._dealing = False
            self._want = 0
            self._hands += 1
            if self.error_every and self._hands % self.error_every == 0:
                self.pending.append(self.rng.choice(("extra-card", "face-up", "repeat", "garbage")))
            if self._take("two-extra-cards"):
                self._deal(2)
            elif self._take("extra-card"):
                self._deal(1)
        elif t in ("shoe.ended", "shoe.void"):
            self._dealing = self._burning = False
            self._want = 0
        elif t == "table.expects":
            # A table that says what it expects (blackjack) is followed: a card when one is
            # due, and none while it waits for a decision.
            self._guided = True
            if data.get("expects") in ("card", "dealer-draws"):
                if self._want == 0 and self._dealing:
                    self._deal()
            elif data.get("expects") != "round-over":  # an extra card after the result stays due
                self._want = 0
        self._after(t, data)

    def _after(self, t: str, data: dict[str, Any]) -> None:
        """One more card when the table took the last one and still wants cards."""
        if self._guided and not self._burning:
            return
        if t == "card.dealt" and (self._burning or self._dealing) and self._want == 0:
            self._deal()
        elif t == "card.held" and self._dealing and self._want == 0:
            self._deal()

    def resume(self, table: dict[str, Any]) -> None:
        """Carry on after a daemon restart from where the journal says the table is."""
        if not table.get("shoe") or table.get("phase") in ("no-shoe", "shoe-ended"):
            return
        self._new_shoe(int(table["shoe"]), int(table["decks"]), int(table["cut_card"]))
        del self.cards[len(self.cards) - int(table.get("cards_out", 0)) :]
        phase = table.get("phase")
        if phase == "burning":
            self._burning = True
            self._deal()
        elif phase == "dealing":
            self._dealing = True
            if (table.get("expects") or {"expects": "card"})["expects"] in ("card", "dealer-draws"):
                self._deal()

    def _new_shoe(self, shoe: int, decks: int, cut_card: int) -> None:
        rng = random.Random(self.seed * 1000 + shoe)
        cards = [c for c in DECK for _ in range(decks)]
        rng.shuffle(cards)
        self.cards = cards  # dealt from the end: pop()
        self.cut_at = cut_card
        self.sent = 0


def simulate(driver_options: Any, sim: Options) -> ShoeSimulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return ShoeSimulator.from_options(driver_options, sim)
