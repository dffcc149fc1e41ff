"""A simulated automatic dice shaker with result recognition, speaking dice-ref on a pty.

It follows the table the way a shaker operator would: it shakes when betting
closes, reports shaking, and after ``pace`` seconds a seeded throw of three
dice. It shakes again when the table rejects a claimed throw or a supervisor
resumes a paused round, and stops when the round is paused or void. It also
answers the host's commands (shake, status, version, self-test). Faults and
bad frames are injected on request (:meth:`inject`) so tests and demos show
every procedure end to end through a real pty.

Every write is one step of a queue (delay, frame): the daemon's loop plays
them with ``asyncio.sleep``; a capture generator plays them on its own clock
(:meth:`step`), so the same simulator makes live runs and captures.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Sequence
from typing import Any, Final

import structlog

from drivers.dice_ref import ACKS, Frame, Framer, encode_frame
from drivers.sim.base import Simulator
from drivers.sim.faults import FaultQueue
from drivers.sim.options import Count, Seconds, SimOptions, known

log = structlog.get_logger("sim.dice")

ERRORS: Final = (
    "stacked",  # the dice come to rest stacked: N 1, then the shaker shakes again (seed 002)
    "leaning",  # a die leans against the wall: N 2, shaken again (seed 002)
    "unreadable",  # the camera cannot read a die: N 3, shaken again
    "malformed",  # a result that is not three faces 1–6 (0 or 7, two or four faces)
    "fault",  # a shaker fault in the middle of the shake (no result follows)
    "garbage",  # line noise before the result
    "bad-checksum",  # the shaking report arrives with a broken checksum
    "early-shake",  # the shaker starts while betting is still open
)
#: what ``error_every`` picks from: none of them needs a supervisor.
EVERYDAY: Final = ("stacked", "leaning", "unreadable", "garbage", "bad-checksum", "early-shake")
NOT_FLAT_CODES: Final = {"stacked": 1, "leaning": 2, "unreadable": 3}


class Options(SimOptions):
    """``[devices.sim]`` of a simulated shaker."""

    seed: Count = 1
    pace: Seconds = 1.0  # seconds from the cover closing to the throw
    errors: tuple[str, ...] = ()  # shaker errors to play, each at its next chance (ERRORS)
    error_every: Count = 0  # one everyday error every N rounds (0: none)
    fault_code: Count = 1  # the code a "fault" error reports

    def __post_init__(self) -> None:
        known("errors", self.errors, ERRORS, "shaker error")


class DiceSimulator(Simulator):
    def __init__(
        self,
        *,
        seed: int = 1,
        pace: float = 1.0,
        errors: Sequence[str] = (),
        error_every: int = 0,
        fault_code: int = 1,
    ) -> None:
        self.seed = seed
        self.pace = pace
        self.rng = random.Random(seed)
        self.pending = FaultQueue(ERRORS, "shaker error", errors)
        self.error_every = error_every
        self.fault_code = fault_code
        self.steps: deque[tuple[float, bytes]] = deque()
        self.history: list[tuple[int, ...]] = []  # every throw claimed, in order
        self.shakes = 0
        self.link: Any = None
        self._gen = 0
        self._rounds = 0
        self._wake = asyncio.Event()

    @classmethod
    def from_options(cls, o: Options) -> DiceSimulator:
        return cls(
            seed=o.seed,
            pace=o.pace,
            errors=o.errors,
            error_every=o.error_every,
            fault_code=o.fault_code,
        )

    def inject(self, kind: str) -> None:
        self.pending.add(kind)

    def _take(self, kind: str) -> bool:
        return self.pending.take(kind)

    @property
    def busy(self) -> bool:
        return bool(self.steps)

    # -- the pty ---------------------------------------------------------------------------

    def attach(self, link: Any) -> None:
        self.link = link

    async def run(self) -> None:
        """Play the steps; answer commands. The link's ``opened`` gates every write."""
        server = asyncio.create_task(self._serve()) if hasattr(self.link, "read") else None
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self.steps:
                    await self.link.opened.wait()
                    gen = self._gen
                    await asyncio.sleep(self.steps[0][0])
                    if gen == self._gen and self.steps:
                        self.step()
        finally:
            if server is not None:
                server.cancel()

    def step(self) -> float:
        """Write the next step now; returns its delay (for a generator keeping its own clock)."""
        delay, frame = self.steps.popleft()
        self.link.write(frame)
        return delay

    async def _serve(self) -> None:
        framer = Framer()
        while True:
            await self.link.opened.wait()
            try:
                data = await self.link.read()
            except EOFError:
                framer = Framer()
                await asyncio.sleep(0.1)  # unplugged: wait for the replug
                continue
            for item in framer.feed(data):
                if isinstance(item, Frame):
                    self.link.write(self.answer(item))

    def answer(self, f: Frame) -> bytes:
        """The shaker's reply to one host command."""
        c = chr(f.cmd)
        if c == "V":
            return encode_frame(b"V", f"TABLED;DICE-SIM;1.0;SIM-{self.seed}".encode())
        if c == "Q":
            return encode_frame(b"Q", bytes([1 if self.busy else 0]))
        if c == "T":
            return encode_frame(b"T", bytes([0]))
        if c == "S":
            if self.busy:
                return encode_frame(b"A", bytes([f.cmd, 1]))
            self._shake(0.0)
            return encode_frame(b"A", bytes([f.cmd, 0]))
        return encode_frame(b"A", bytes([f.cmd, max(ACKS)]))

    # -- a shake ---------------------------------------------------------------------------

    def _plan(self, steps: list[tuple[float, bytes]]) -> None:
        self.steps.extend(steps)
        self._wake.set()

    def _stop(self) -> None:
        self.steps.clear()
        self._gen += 1

    def _faces(self) -> tuple[int, ...]:
        faces = tuple(self.rng.randint(1, 6) for _ in range(3))
        if self._take("malformed"):
            a, b, c = faces
            faces = self.rng.choice(
                [(0, b, c), (a, 7, c), (a, b), (a, b, c, self.rng.randint(1, 6))]
            )
        return faces

    def _shake(self, start: float) -> None:
        """One shake, decided at once: shaking, maybe not flat and shaken again, the result."""
        self.shakes += 1
        shaking = encode_frame(b"S")
        if self._take("bad-checksum"):
            shaking = shaking[:-2] + bytes([(shaking[-2] + 1) & 0xFF]) + shaking[-1:]
        steps = [(start, shaking)]
        for kind, code in NOT_FLAT_CODES.items():
            if self._take(kind):
                # seed 002: 荷官随即再拍打三次 — the machine shakes again by itself
                steps += [(self.pace, encode_frame(b"N", bytes([code]))), (0.2, encode_frame(b"S"))]
        if self._take("fault"):
            steps.append((self.pace / 2, encode_frame(b"F", bytes([self.fault_code]))))
            self._plan(steps)
            return
        if self._take("garbage"):
            noise = bytes(self.rng.randrange(256) for _ in range(12))
            steps.append((self.pace / 2, noise))
        faces = self._faces()
        self.history.append(faces)
        steps.append((self.pace, encode_frame(b"R", bytes(faces))))
        self._plan(steps)

    # -- following the table ---------------------------------------------------------------

    def on_events(self, events: Sequence[Any]) -> None:
        for ev in events:
            self._on(ev.type, ev.data)

    def _on(self, t: str, data: dict[str, Any]) -> None:
        if t == "betting.opened":
            self._rounds += 1
            if self.error_every and self._rounds % self.error_every == 0:
                self.pending.append(self.rng.choice(EVERYDAY))
            if self._take("early-shake"):
                self._shake(self.pace)
        elif t == "betting.closed" and not self.busy:
            self._shake(0.3 * self.pace)
        elif t == "dice.rejected" and data.get("reason") == "invalid" and not self.busy:
            self._shake(self.pace)  # the dealer has the dice shaken again; bets stand
        elif t == "round.resumed":
            self._stop()
            self._shake(self.pace)
        elif t in ("round.paused", "round.void"):
            self._stop()

    def resume(self, table: dict[str, Any]) -> None:
        """Carry on after a daemon restart from where the journal says the table is."""
        if table.get("phase") in ("closed", "shaking"):
            self._shake(self.pace)


def simulate(driver_options: Any, sim: Options) -> DiceSimulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return DiceSimulator.from_options(sim)
