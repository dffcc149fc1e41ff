"""A simulated card shuffler speaking the reference protocol (``shuffler-ref``) on a pty.

It answers the four commands (status, start shuffle, version, self-test),
shuffles seeded decks so every run is reproducible, and reports the shuffle
as a counting, card-recognising machine would: started, then completed with
the card count and per-rank counts. Faults are injected on request
(:meth:`ShufflerSimulator.inject`) so tests and demos can show what the
table does with each: a wrong count, a jam, an open door, a fault code, a
leaked deck order (which the driver must drop unread), line noise and a bad
checksum. It parses what the daemon writes with the driver's own framer, as
gpsd's tools share one framer.

Device faults (``wrong-count``, ``jam``, ``door-open``, ``fault``,
``deck-order``) apply to the next shuffle; wire faults (``garbage``,
``bad-checksum``) to the next frame sent, whatever it is. After a jam or a
fault the machine refuses to shuffle until a self-test passes.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any, Final

import structlog

from drivers.framing import encode_stx_frame
from drivers.shuffler_ref import FAULTS, RANKS, command
from drivers.shuffler_ref import framer as new_framer
from drivers.sim.base import Simulator
from drivers.sim.faults import FaultQueue, noise
from drivers.sim.options import Count, Seconds, SimOptions, known

log = structlog.get_logger("sim.shuffler")

INJECTABLE: Final = (
    "wrong-count",  # the next shuffle counts one card short → M instead of C
    "jam",  # the next shuffle jams in the elevator → J, machine in FAULT
    "door-open",  # the door opens during the next shuffle → O;OPEN, shuffle aborted, O;CLOSED
    "fault",  # the next shuffle stops on a motor fault → F;5, machine in FAULT
    "deck-order",  # the next shuffle also reports its deck order (D frame)
    "garbage",  # line noise before the next frame
    "bad-checksum",  # the next frame has a wrong checksum
)
_SUITS: Final = "SHDC"


class Options(SimOptions):
    """``[devices.sim]`` of a simulated shuffler."""

    seed: Count = 1
    decks: Count = 8
    shuffle_time: Seconds = 2.0
    recognises_cards: bool = True  # it reads each card's face (it reports the deck order)
    follow_table: bool = True  # it shuffles when the table starts a new shoe
    faults: tuple[str, ...] = ()  # faults to play, each at its next chance (INJECTABLE)

    def __post_init__(self) -> None:
        known("faults", self.faults, INJECTABLE, "shuffler fault")


class ShufflerSimulator(Simulator):
    def __init__(
        self,
        *,
        seed: int = 1,
        decks: int = 8,
        shuffle_time: float = 2.0,
        recognises_cards: bool = True,
        follow_table: bool = True,
        faults: Sequence[str] = (),
    ) -> None:
        self.seed = seed
        self.decks = decks
        self.shuffle_time = shuffle_time
        self.recognises_cards = recognises_cards
        self.follow_table = follow_table
        self.pending = FaultQueue(INJECTABLE, "shuffler fault", faults)
        self.state = "IDLE"
        self.shuffles = 0
        self.link: Any = None
        self.rng = random.Random(seed)
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def from_options(cls, o: Options) -> ShufflerSimulator:
        return cls(
            seed=o.seed,
            decks=o.decks,
            shuffle_time=o.shuffle_time,
            recognises_cards=o.recognises_cards,
            follow_table=o.follow_table,
            faults=o.faults,
        )

    def inject(self, kind: str) -> None:
        self.pending.add(kind)

    def _take(self, kind: str) -> bool:
        return self.pending.take(kind)

    # -- the pty -----------------------------------------------------------------------------

    def attach(self, link: Any) -> None:
        self.link = link

    async def run(self) -> None:
        """Answer commands for as long as the simulator lives (across unplugs)."""
        framer = new_framer()
        while True:
            await self.link.opened.wait()
            try:
                data = await self.link.read()
            except EOFError:  # unplugged: wait to be plugged in and opened again
                framer = new_framer()
                await asyncio.sleep(0.05)
                continue
            for item in framer.feed(data):
                if isinstance(item, bytes):
                    self._command(item.decode("ascii"))

    def _send(self, kind: str, *fields: str | int) -> None:
        if self.link is None:
            return
        frame = command(kind, *fields)
        if self._take("garbage"):
            self.link.write(noise(self.rng))
        if self._take("bad-checksum"):
            bad = (int(frame[-4:-2], 16) ^ 0x5A) & 0xFF
            frame = frame[:-4] + b"%02X\r\n" % bad
        self.link.write(frame)

    def _command(self, body: str) -> None:
        kind, _, rest = body.partition(";")
        if kind == "V":
            self._send("V", "tabled", "reference shuffler simulator", "1.0", f"SIM-{self.seed}")
        elif kind == "Q":
            self._send("Q", self.state)
        elif kind == "T":
            if self.state == "SHUFFLING":
                self._send("T", "FAIL", 0, "busy shuffling")
            else:
                self.state = "IDLE"
                self._send("T", "PASS")
        elif kind == "G":
            decks = int(rest) if rest.isdigit() and 1 <= int(rest) <= 12 else self.decks
            refusal = {"SHUFFLING": "BUSY", "FAULT": "FAULT", "DOOR-OPEN": "DOOR OPEN"}
            if self.state in refusal:
                self._send("G", "NO", refusal[self.state])
                return
            self._send("G", "OK")
            self.start(decks)
        else:
            log.info("unknown command", body=body)

    # -- shuffling -----------------------------------------------------------------------------

    def start(self, decks: int | None = None) -> None:
        """Start a shuffle, as the dealer's button or a G command does."""
        if self.state in ("SHUFFLING", "FAULT", "DOOR-OPEN"):
            return
        self.state = "SHUFFLING"
        self._task = asyncio.get_running_loop().create_task(self._shuffle(decks or self.decks))

    async def _shuffle(self, decks: int) -> None:
        self.shuffles += 1
        sid = self.shuffles
        rng = random.Random(self.seed * 1000 + sid)
        cards = [r + s for r in RANKS for s in _SUITS for _ in range(decks)]
        rng.shuffle(cards)
        await self.link.opened.wait()
        self._send("S", sid, decks)
        await asyncio.sleep(self.shuffle_time / 2)
        if self._take("jam"):
            self.state = "FAULT"
            self._send("J", "ELEVATOR")
            return
        if self._take("fault"):
            self.state = "FAULT"
            self._send("F", 5, FAULTS[5])
            return
        if self._take("door-open"):
            self.state = "DOOR-OPEN"
            self._send("O", "OPEN")
            await asyncio.sleep(self.shuffle_time / 2)
            self.state = "IDLE"
            self._send("O", "CLOSED")
            return
        await asyncio.sleep(self.shuffle_time / 2)
        if self._take("wrong-count"):
            cards.pop(rng.randrange(len(cards)))
            self.state = "READY"
            self._send("M", sid, decks * 52, len(cards))
            return
        self.state = "READY"
        if self.recognises_cards:
            counts = ",".join(str(sum(c[0] == r for c in cards)) for r in RANKS)
            self._send("C", sid, decks, len(cards), counts)
        else:
            self._send("C", sid, decks, len(cards))
        if self._take("deck-order"):
            # What a leaky machine does (CVE-2025-34503): the driver must drop it unread.
            self.link.write(encode_stx_frame(("D;" + ",".join(cards)).encode("ascii")))

    # -- following the table ---------------------------------------------------------------------

    def on_events(self, events: Sequence[Any]) -> None:
        """The dealer puts the used cards in the shuffler when the table ends a shoe."""
        if not self.follow_table:
            return
        for ev in events:
            if ev.type in ("shoe.ended", "shoe.void"):
                self.start()

    def resume(self, table: dict[str, Any]) -> None:
        """At start-up with no shoe in play, the dealer shuffles the cards for the first
        one (a ``require_shuffle`` table starts a shoe only from a counted shuffle)."""
        if self.follow_table and table.get("phase") in ("no-shoe", "shoe-ended"):
            self.start()


def simulate(driver_options: Any, sim: Options) -> ShufflerSimulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return ShufflerSimulator.from_options(sim)
