"""A simulated Cammegh Mercury 360 (manual wheel, in-rim reader) on a pty, at any of its levels.

The Mercury is a manual wheel: the dealer spins the ball and the in-rim reader
reports the game [int]. It reuses the SlingShot 2 simulator's clock, pty and
fault queue (:mod:`drivers.sim.wheel`) and speaks what the integration guide
gives each port level:

* ``basic``: ``*S`` when the ball is spun, ``*N`` at no more bets, ``*W nn`` with
  the number; nothing between games;
* ``advanced``: ``*X;state;count;win;flags;speed;dir`` every ``period``, and the
  bare number line before state 5 (``count`` is games played, 0-255, wrapping);
* ``extended``: the advanced frame plus ``;ext;revs;bdir;period;pocket``.

It answers ``*X`` with its level (``*X advanced``: on a Mercury ``*X`` is not a
status request [int]), ``*m <level>`` (sets the level), ``*V``. The faults are the
Mercury's own exceptions (:data:`M360_FAULTS`), each ending in the same events of
the spin procedure as the SS2's (``tests/test_wheel_e2e.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from drivers.sim.faults import FaultQueue
from drivers.sim.options import known
from drivers.sim.wheel import SpinOptions, WheelSimulator

M360_FAULTS: Final = (
    "ball-direction",  # flag 2 in state 3: the ball spun with the rotor; the dealer re-spins
    "wheel-void",  # flag 8 in state 4: the wheel voids (ball left the wheel); re-spin
    "rotor-speed",  # flag 1 during the spin: logged, the result stands
    "low-revolutions",  # extended: the ball made 2 revolutions (under the minimum)
    "no-number",  # basic: a new *S before any *W; advanced/extended: state 5 with no number
    "repeat-number",  # the last number again with no spin between (stuck sensor)
    "rim-sensor",  # flag 4: rim sensor failure, then the wheel closes (state 6); taken last
)
M360_RECOVERABLE: Final = ("ball-direction", "wheel-void", "rotor-speed", "no-number")
LEVELS: Final = ("basic", "advanced", "extended")
FIRMWARE: Final = "M2.10"


class Options(SpinOptions):
    """``[devices.sim]`` of a simulated Mercury 360 (its level is the driver's option)."""

    def __post_init__(self) -> None:
        known("faults", self.faults, M360_FAULTS, "Mercury fault")
        known("fault_kinds", self.fault_kinds or (), M360_FAULTS, "Mercury fault")
        self.states()


class M360Simulator(WheelSimulator):
    def __init__(
        self,
        *,
        level: str = "advanced",
        faults: Sequence[str] = (),
        fault_kinds: Sequence[str] = M360_RECOVERABLE,
        **kw: Any,
    ) -> None:
        if level not in LEVELS:
            raise ValueError(f"level {level!r}: one of {', '.join(LEVELS)}")
        FaultQueue(M360_FAULTS, "Mercury fault", faults)
        FaultQueue(M360_FAULTS, "Mercury fault", fault_kinds)
        super().__init__(mode=128, fault_kinds=(), **kw)
        self.pending = FaultQueue(M360_FAULTS, "Mercury fault", faults)
        self.fault_kinds = tuple(fault_kinds)
        self.level = level
        self.spin = 0  # games played, 0-255 [int]
        self.clockwise = False
        self.revs = 0
        self.ball_clockwise = True

    @classmethod
    def from_options(cls, m360: Any, o: Options) -> M360Simulator:  # type: ignore[override]
        return cls(
            level=str(getattr(m360, "level", "advanced")),
            seed=o.seed,
            period=o.period,
            pace=o.pace,
            durations=o.states(),
            double_zero=bool(getattr(m360, "double_zero", False)),
            faults=o.faults,
            fault_every=o.fault_every,
            fault_kinds=M360_RECOVERABLE if o.fault_kinds is None else o.fault_kinds,
            fault_hold=o.fault_hold,
            recover_after=o.recover_after,
        )

    # -- what goes on the wire ---------------------------------------------------------------

    def step(self) -> None:
        if self._stepped:
            self.now = round(self.now + self.period, 6)
            self._advance()
        self._stepped = True
        self._rotor()
        if self.state == 3:
            self.revs = min(0xFF, self.revs + 2)  # the ball slows in the track
        if self.level != "basic" and self.status_on:
            self._write(self.status_frame())

    def status_frame(self) -> str:
        win = "  " if self.last is None or self.blank else self._two(self.last)
        speed = min(600, round(self.rpm * 10))
        frame = (
            f"*X;{self.state};{self.spin:03d};{win};{self.flags:X};{speed:03d};"
            f"{0 if self.clockwise else 1}"
        )
        if self.level != "extended":
            return frame
        ext = 0x002 | (0x010 if self.clockwise else 0x020)
        if self.state in (3, 4):
            bdir = "0" if self.ball_clockwise else "1"
            period = f"{0x0A000 + self.revs * 0x100:05X}"
        else:
            bdir, period = "?", "?????"
        pocket = win.strip() and win if self.state == 5 else "??"
        revs = self.revs if self.state in (3, 4, 5) else 0
        return frame + f";{ext:04X};{revs:02X};{bdir};{period};{pocket or '??'}"

    # -- the game --------------------------------------------------------------------------

    def _new_game(self, *, count: bool) -> None:
        if count:
            self.spin = (self.spin + 1) % 256  # games played, 0-255 [int]
            self.games += 1
            if self.fault_every and self.games % self.fault_every == 0 and self.fault_kinds:
                self.pending.append(self.rng.choice(self.fault_kinds))
        self.blank, self.flags, self.fault = False, 0, None
        self.clockwise = not self.clockwise  # the dealer alternates the rotor each game
        self.revs = 0
        self._go(2)
        self.repeat_due = self.last is not None and self._take("repeat-number")

    def _respin(self) -> None:
        """flag 2 or 8: the game waits for the dealer to spin again, same game [int]."""
        self.flags, self.fault, self.revs = 0, None, 0
        self.ball_clockwise = not self.clockwise
        self._go(3)
        if self.level == "basic":
            self._write("*S")

    def _advance(self) -> None:
        s, lasted = self.state, self.now - self.entered
        held = lasted >= self.fault_hold
        if s == 2 and self.repeat_due:
            self.repeat_due = False
            last = self.last if self.last is not None else 0
            self._write(f"*W {self._two(last)}" if self.level == "basic" else self._two(last))
        if s == 2 and lasted >= self.durations[2]:
            self._launch()
        elif s == 3:
            if self.fault == "ball-direction" and held:
                self._respin()
            elif self.fault == "rim-sensor" and held:
                self._stop()
            elif self.fault not in ("ball-direction", "rim-sensor") and lasted >= self.durations[3]:
                self._go(4)
                if self.level == "basic":
                    self._write("*N")
                if self.fault == "wheel-void":
                    self.flags = 8
        elif s == 4:
            if self.fault == "wheel-void":
                if held:
                    self._respin()
            elif lasted >= self.durations[4]:
                self._result()
        elif s in (6, 1, 5):
            super()._advance()

    def _launch(self) -> None:
        """The dealer spins the ball against the rotor (or, for ``ball-direction``, with it)."""
        self.fault = next((k for k in M360_FAULTS if k != "repeat-number" and self._take(k)), None)
        self.ball_clockwise = (
            self.clockwise if self.fault == "ball-direction" else not self.clockwise
        )
        self.revs = 0
        self._go(3)
        if self.level == "basic":
            self._write("*S")
            if self.fault == "no-number":
                return
        self.flags = {"ball-direction": 2, "rotor-speed": 1, "rim-sensor": 4}.get(
            self.fault or "", 0
        )

    def _result(self) -> None:
        pockets = 38 if self.double_zero else 37
        n = self.rng.randrange(pockets)
        if self.fault == "low-revolutions":
            self.revs = 2
        if self.fault == "no-number":
            if self.level == "basic":
                # the reader missed the ball: the dealer spins again, and the wheel says *S
                self.fault = None
                self._go(3)
                self._write("*S")
                return
            self.blank = True
        else:
            self.last = n
            self.history.append(n)
            self._write(f"*W {self._two(n)}" if self.level == "basic" else self._two(n))
        self._go(5)

    # -- commands ------------------------------------------------------------------------------

    def _answer(self, letter: str, args: list[str]) -> None:
        if letter == "X":
            self._write(f"*X {self.level}")
        elif letter == "m" and args:
            if args[0] in LEVELS:
                self.level = args[0]
                self._write(f"*m {self.level}")
            else:
                self._write("*m ?")
        elif letter == "V":
            self._write(f"*V {FIRMWARE} tabled simulator - Mercury 360 Roulette Wheel")
        elif letter in ("s", "F", "K", "A", "P", "d"):
            super()._answer(letter, args)


def simulate(driver_options: Any, sim: Options) -> M360Simulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`): a Mercury 360 at the configured level."""
    return M360Simulator.from_options(driver_options, sim)
