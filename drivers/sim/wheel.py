"""A simulated Cammegh SlingShot 2 roulette wheel speaking its serial protocol on a pty.

It runs the wheel's own state machine ``6 → 1 → (2 → 3 → 4 → 5) …`` on its own
clock: every ``period`` simulated seconds (the vendor's 500 ms, mode bit 128) it
advances and sends a status frame ``*X;state;spin;win;flags;speed;dir``, sends
the bare number line just before state 5, and answers the commands a
controller or technician sends (``*X *V *S *R *u *F *T *O *o *q *P *d *s *K
*A``; log pages carry their checksum). Outcomes come from a seeded generator,
so a run is reproducible.

Every exception of the vendor's table and every sanity check of the spin
procedure can be injected (:meth:`inject`, or ``faults`` / ``fault_every``), so
tests and demos show each one end to end through a real pty. The simulated
clock only advances while the daemon has the port open (:attr:`PtyLink.opened`,
the pty echo caveat), and the real wait per step is ``pace`` (tests shorten it;
a demo keeps ``pace == period``).

The wheel follows the wire only: it never reads the table's events.

Why long: one state machine — the wheel's states, its counter, its command set and every
injectable exception — all moving the same clock and the same game; an exception is a few
lines inside the step it changes. Split, each fault would reach into the machine's
private state from outside.
The faults' names, the timings and the options are in
:mod:`drivers.sim.wheel_options`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from drivers.cammegh import DOUBLE_ZERO, LOG_PAGE_BYTES, log_page_checksum
from drivers.framing import LineFramer
from drivers.sim.base import Simulator
from drivers.sim.faults import FaultQueue
from drivers.sim.wheel_options import (
    DEFAULT_MODE,
    DURATIONS,
    FAULTS,
    FIRMWARE,
    RECOVERABLE,
    SPIN_FAULTS,
    TUNING,
    Options,
    SpinOptions,
)

__all__ = ["FAULTS", "Options", "SpinOptions", "WheelSimulator", "simulate"]

log = structlog.get_logger("sim.wheel")


class WheelSimulator(Simulator):
    def __init__(
        self,
        *,
        seed: int = 1,
        period: float = 0.5,
        pace: float | None = None,
        durations: dict[int, float] | None = None,
        double_zero: bool = False,
        mode: int = DEFAULT_MODE,
        faults: Sequence[str] = (),
        fault_every: int = 0,
        fault_kinds: Sequence[str] = RECOVERABLE,
        fault_hold: float = 8.0,
        recover_after: float = 5.0,
        misrecord: Sequence[int] = (),
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        wall: Callable[[], float] = time.time,
    ) -> None:
        FaultQueue(FAULTS, "wheel fault", fault_kinds)  # checks the random choices' names
        self.rng = random.Random(seed)
        self.period = period
        self.pace = period if pace is None else pace
        self.durations = {**DURATIONS, **(durations or {})}
        self.double_zero = double_zero
        self.mode = mode
        self.pending = FaultQueue(FAULTS, "wheel fault", faults)
        self.fault_every = fault_every
        self.fault_kinds = tuple(fault_kinds)
        self.fault_hold = fault_hold
        self.recover_after = recover_after
        self.sleep = sleep
        self.wall = wall
        self.link: Any = None
        # the wheel
        self.now = 0.0  # simulated seconds
        self.state = 6
        self.entered = 0.0
        self.spin = 1
        self.last: int | None = None
        self.flags = 0
        self.blank = False  # state 5 frames carry no number (fault "no-number")
        self.clockwise = True
        self.rpm = 0.0
        self.status_on = bool(mode & 128)
        self.powered = True
        self.fault: str | None = None  # the fault playing out in this spin
        self.recover_at = 0.0  # simulated time a stopped wheel is restarted
        self.repeat_due = False
        self.code_due = False
        self._stepped = False
        self.codes: list[int] = []  # what the next self-test reports
        self.history: list[int] = []  # every winning number, oldest first (the wheel's log)
        #: results (1 = the wheel's first) its log records wrongly: a planted memory fault,
        #: for tablectl wheel reconcile to find
        self.misrecord = frozenset(misrecord)
        self.games = 0
        self.sent: list[bytes] = []  # every line written, for tests
        self._framer = LineFramer(max_line=256)
        self._tuning = dict(TUNING)

    @classmethod
    def from_options(cls, ss2: Any, o: Options) -> WheelSimulator:
        """From the driver's options and the config's ``[devices.sim]`` table."""
        mode = (
            o.mode if o.mode is not None else getattr(ss2, "operating_mode", None) or DEFAULT_MODE
        )
        return cls(
            seed=o.seed,
            period=o.period,
            pace=o.pace,
            durations=o.states(),
            double_zero=bool(getattr(ss2, "double_zero", False)),
            mode=mode,
            faults=o.faults,
            fault_every=o.fault_every,
            fault_kinds=RECOVERABLE if o.fault_kinds is None else o.fault_kinds,
            fault_hold=o.fault_hold,
            recover_after=o.recover_after,
            misrecord=o.misrecord,
        )

    def inject(self, kind: str) -> None:
        """Play ``kind`` (one of :data:`FAULTS`) at the next spin it can happen in."""
        self.pending.add(kind)

    # -- the pty -----------------------------------------------------------------------

    def attach(self, link: Any) -> None:
        self.link = link

    def on_events(self, events: Sequence[Any]) -> None:
        """The wheel hears only the wire (``*R`` acknowledges a void), never the table."""

    async def run(self) -> None:
        """Answer commands and step the wheel every ``pace`` while the port is open."""
        reader = asyncio.create_task(self._commands(), name="sim.wheel.commands")
        try:
            while True:
                await self.link.opened.wait()
                self.step()
                await self.sleep(self.pace)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _commands(self) -> None:
        while True:
            await self.link.opened.wait()
            try:
                data = await self.link.read()
            except EOFError:
                self._framer.eof()
                await asyncio.sleep(self.pace)  # unplugged: wait for the replug
                continue
            self.receive(data)

    def _write(self, text: str) -> None:
        raw = text.encode("ascii") + b"\r\n"
        self.sent.append(raw)
        if self.link is not None and self.link.opened.is_set():
            self.link.write(raw)

    # -- the wheel's clock ---------------------------------------------------------------

    def step(self) -> None:
        """One period of simulated time: advance the state machine, then the status frame.

        The first step only reports: the wheel shows where it is (idle) before moving.
        """
        if self._stepped:
            self.now = round(self.now + self.period, 6)
            self._advance()
        self._stepped = True
        self._rotor()
        if self.status_on:
            self._write(self.status_frame())

    def status_frame(self) -> str:
        win = "  " if self.last is None or self.blank else self._two(self.last)
        speed = min(999, round(self.rpm * 10))
        direction = "0" if self.clockwise else "1"
        return f"*X;{self.state};{self.spin:03d};{win};{self.flags:X};{speed:03d};{direction}"

    def _two(self, n: int) -> str:
        return "00" if n == DOUBLE_ZERO else f"{n:>2}"

    def _go(self, state: int, *, commanded: bool = False) -> None:
        """Enter ``state``; a command's change shows from the next frame, so it counts from there."""
        self.state, self.entered = state, self.now + (self.period if commanded else 0.0)

    def _take(self, kind: str) -> bool:
        return self.pending.take(kind)

    def _advance(self) -> None:
        s, lasted = self.state, self.now - self.entered
        held = lasted >= self.fault_hold
        if s == 6:
            if self.powered and lasted >= self.durations[6] and self.now >= self.recover_at:
                self.fault, self.flags = None, 0
                self._go(1)
        elif s == 1:
            if lasted >= self.durations[1]:
                self._new_game(count=False)
        elif s == 2:
            if self.repeat_due:
                self.repeat_due = False
                self._write(self._two(self.last if self.last is not None else 0))
            if lasted >= self.durations[2]:
                self._launch()
        elif s == 3:
            self._in_rim(lasted, held)
        elif s == 4:
            self._no_more_bets(lasted, held)
        elif s == 5 and lasted >= self.durations[5]:
            self._new_game(count=True)

    def _stop(self) -> None:
        """The wheel stops on a component fault; a technician restarts it after a while."""
        self.flags = 0
        self.recover_at = self.now + self.recover_after
        self._go(6)

    def _new_game(self, *, count: bool) -> None:
        """State 2: a new game (the counter counts it; 256 wraps to 1) [dev]."""
        if count:
            step = 5 if self._take("counter-jump") else 1
            self.spin = (self.spin - 1 + step) % 256 + 1
            self.games += 1
            if self.fault_every and self.games % self.fault_every == 0 and self.fault_kinds:
                self.pending.append(self.rng.choice(self.fault_kinds))
        self.blank, self.flags, self.fault = False, 0, None
        if self.mode & 1:
            self.clockwise = not self.clockwise  # mode bit 1: reverse the rotor each game
        self._go(2)
        # the stuck number sensor repeats itself once betting is open
        self.repeat_due = self.last is not None and self._take("repeat-number")

    def _respin(self) -> None:
        """After a miss-spin or a failed launch the wheel re-spins the same game [dev]."""
        self.flags, self.fault = 0, None
        self._go(2)

    def _launch(self) -> None:
        if self._take("impossible-state"):
            self._result()  # 2 → 5: the ball never seen in the rim
            return
        self.fault = next((k for k in SPIN_FAULTS if self._take(k)), None)
        self._go(3)
        if self.fault == "ball-direction":
            self.flags = 2
        elif self.fault == "launch-failure":
            self.flags = 8
        elif self.fault == "component-fault":
            self.flags = 4
        self.code_due = self.fault == "fault-code"

    def _in_rim(self, lasted: float, held: bool) -> None:
        if self.code_due:
            self.code_due = False
            self._write("*F 5")  # mode bit 256: the motor fault, during play [dev]
            self.codes.append(5)
        if self.fault in ("ball-direction", "launch-failure") and held:
            self._respin()  # no *R came: the wheel re-spins by itself
        elif self.fault in ("component-fault", "fault-code") and held:
            self.codes = self.codes or [11]
            self._stop()
        elif self.fault not in (
            "ball-direction",
            "launch-failure",
            "component-fault",
            "fault-code",
        ):
            if lasted >= self.durations[3]:
                self._go(4)
                if self.fault == "ball-missing":
                    self.flags = 1

    def _no_more_bets(self, lasted: float, held: bool) -> None:
        if self.fault == "ball-missing":
            if held:
                self._respin()
            return
        if self.fault == "drop-to-idle" and lasted >= self.durations[4] / 2:
            self._stop()  # silently, no *F [dev: a component fault may show only like this]
            return
        if lasted >= self.durations[4]:
            self._result()

    def _result(self) -> None:
        pockets = 38 if self.double_zero else 37
        n = self.rng.randrange(pockets)
        if self.fault == "no-number":
            self.blank = True
        else:
            self.last = n
            wrong = len(self.history) + 1 in self.misrecord
            self.history.append((n + 1) % pockets if wrong else n)
            if not self.mode & 16:  # mode bit 16: no bare number line [dev]
                self._write(self._two(n))
        self._go(5)

    def _rotor(self) -> None:
        if self.state == 6:
            self.rpm = 0.0
        elif self.state == 1:
            self.rpm = min(18.0, self.rpm + 4.0)
        else:
            self.rpm = 17.0 + self.rng.uniform(-1.5, 1.5)

    # -- commands --------------------------------------------------------------------------

    def receive(self, data: bytes) -> None:
        """Bytes from the controller: answer each complete ``*`` command line."""
        for raw in self._framer.lines(data, []):  # a wheel ignores what it cannot read
            line = raw.decode("ascii", "replace").strip()
            if line.startswith("*") and len(line) >= 2:
                self._answer(line[1], line[2:].split())

    def _answer(self, letter: str, args: list[str]) -> None:
        s = self.state
        if letter == "X":
            self._write(self.status_frame())
        elif letter == "V":
            self._write(f"*V {FIRMWARE} tabled simulator - SlingShot 2 Roulette Wheel")
        elif letter == "S":
            self._write(f"*S {FIRMWARE}")
        elif letter == "R":
            self._write("*R OK")
            self.flags, self.fault, self.blank = 0, None, False
            self._go(1, commanded=True)  # back to state 1: the game restarts; acks a void [dev]
        elif letter == "u":
            self._write("*u OK")
        elif letter == "F":
            self._self_test()
        elif letter == "T":
            self._tuning_command(args)
        elif letter == "O":
            self._write(f"*O {s} 1 60 {self.mode}")
        elif letter == "o" and args and args[0].isdigit():
            self.mode = int(args[0]) & 0xFFFF
            self.status_on = bool(self.mode & 128)
            self._write(f"*o {self.mode}")
        elif letter == "q" and args:
            self.status_on = args[0] == "1"
            self._write("*q OK")
        elif letter == "P" and args:
            self._power(args[0] == "1")
        elif letter == "d":
            self._clock(args)
        elif letter == "s" and args[:1] == ["r"]:
            self._log_page(args[1] if len(args) > 1 else "0")
        elif letter == "K":
            self._write("*K CAM" if s == 6 else "*K OK")
        elif letter == "A":
            self._write(f"*A {self.rng.randrange(37)}")

    def _self_test(self) -> None:
        """``*F``: idle only; one line per fault code, ``*F 0`` when none [dev]."""
        if self.state != 6:
            self._write("*F BUSY")
            return
        for code in self.codes:
            self._write(f"*F {code}")
        if not self.codes:
            self._write("*F 0")
        self.codes = []  # found and repaired

    def _tuning_command(self, args: list[str]) -> None:
        if not args:
            return
        name = args[0]
        if name.isupper() and len(args) == 1:
            self._write(f"*T {name.lower()} {self._tuning.get(name.lower(), '0')}")
        elif name.islower() and len(args) > 1:
            self._tuning[name] = " ".join(args[1:])
            self._write("*T OK")

    def _power(self, on: bool) -> None:
        if on == self.powered:
            self._write("*P NO")
            return
        self._write("*P OK")
        self.powered = on
        if not on:
            self.flags = 0
            self._go(6, commanded=True)

    def _clock(self, args: list[str]) -> None:
        if args[:1] == ["g"]:
            t = time.gmtime(self.wall())
            self._write("*d g " + time.strftime("%H:%M:%S - %d/%m/%y", t))
        elif args[:1] == ["s"]:
            self._write("*d OK")

    def _log_page(self, page_text: str) -> None:
        """``*s r <page>``: 256 bytes of the wheel's log, value + 0x21, ``~`` unused [dev]."""
        if self.state != 6 or not page_text.isdigit():
            self._write("*s BUSY")
            return
        page = int(page_text)
        newest_first = self.history[::-1]
        chunk = newest_first[page * LOG_PAGE_BYTES : (page + 1) * LOG_PAGE_BYTES]
        data = "".join(chr(n + 0x21) for n in chunk).ljust(LOG_PAGE_BYTES, "~")
        check = log_page_checksum(data.encode("ascii"))
        self._write(f"*s r {page} {data}{check:02X}")


def simulate(driver_options: Any, sim: Options) -> WheelSimulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return WheelSimulator.from_options(driver_options, sim)
