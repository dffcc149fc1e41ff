"""What a simulated Cammegh wheel can be told: its injectable faults, its timings, its
tuning answers and the ``[devices.sim]`` options of the SS2 (and, through
:class:`SpinOptions`, the Mercury 360), apart from the state machine that plays them.
"""

from __future__ import annotations

from typing import Final

import msgspec

from drivers.sim.options import Count, Seconds, SimOptions, known

FAULTS: Final = (
    "ball-direction",  # flag 2 in state 3 until *R or a re-spin (vendor: miss-spin)
    "launch-failure",  # flag 8 held in state 3, then a re-spin (vendor: failed launch)
    "ball-missing",  # flag 1 held in state 4, then a re-spin (vendor: ball not detected)
    "no-number",  # state 5 without a number and without the bare line
    "component-fault",  # flag 4 during the spin, then the wheel stops (state 6)
    "fault-code",  # *F 5 (motor) during the spin (mode bit 256), then the wheel stops
    "drop-to-idle",  # a silent drop from state 4 to state 6
    "counter-jump",  # the spin counter jumps by 5 at the next game
    "impossible-state",  # state 2 straight to state 5
    "repeat-number",  # the last number's bare line again while betting is open
)
#: faults that play out during one spin, in the order they are taken when several wait.
SPIN_FAULTS: Final = (
    "ball-direction",
    "launch-failure",
    "component-fault",
    "fault-code",
    "ball-missing",
    "no-number",
    "drop-to-idle",
)
#: faults that do not latch a device fault: what ``fault_every`` picks by default.
RECOVERABLE: Final = (
    "ball-direction",
    "launch-failure",
    "ball-missing",
    "no-number",
    "counter-jump",
    "repeat-number",
)
#: simulated seconds per state: shortened for demos (a real SS2 spends ~25 s in state 4).
DURATIONS: Final = {6: 1.0, 1: 1.5, 2: 4.0, 3: 3.0, 4: 4.0, 5: 3.0}
#: answers to ``*T <X>``, as the settings capture shows them [cap].
TUNING: Final = {
    "c": "8465",
    "d": "15",
    "g": "0",
    "h": "161",
    "i": "10",
    "j": "6705 3386 26 1",
    "k": "1900",
    "m": "20000.0",
    "n": "2920",
    "p": "50",
    "q": "800",
    "r": "23000 23000",
    "s": "16.0 18.0",
    "t": "1475",
    "z": "37",
}
#: the vendor's default mode for arcade use: reverse rotor, speed change, status every
#: 500 ms, games-per-hour wait (1157) [dev].
DEFAULT_MODE: Final = 1157
FIRMWARE: Final = "V2.50"


class SpinOptions(SimOptions):
    """What every simulated wheel takes (the SS2's and the Mercury 360's)."""

    seed: Count = 1
    period: Seconds = 0.5  # seconds between two status frames
    pace: Seconds | None = None  # the real wait per step (default: period; tests shorten it)
    durations: dict[str, Seconds] = msgspec.field(
        default_factory=dict
    )  # state number → seconds in it (DURATIONS)
    faults: tuple[str, ...] = ()  # faults to play, each at its next spin it can happen in
    fault_every: Count = 0  # one random fault (fault_kinds) every N spins (0: none)
    fault_kinds: tuple[str, ...] | None = None  # what fault_every picks from
    fault_hold: Seconds = 8.0
    recover_after: Seconds = 5.0

    def states(self) -> dict[int, float]:
        """``durations`` by state number, each a state the wheel has."""
        out: dict[int, float] = {}
        for k, v in self.durations.items():
            if not k.isdigit() or int(k) not in DURATIONS:
                raise ValueError(f"durations: no state {k!r} (states: 1-6)")
            out[int(k)] = v
        return out


class Options(SpinOptions):
    """``[devices.sim]`` of a simulated Cammegh SS2."""

    mode: Count | None = None  # the operating mode (default: the driver's, or DEFAULT_MODE)
    misrecord: tuple[Count, ...] = ()  # results (1 = the first) its log records wrongly

    def __post_init__(self) -> None:
        known("faults", self.faults, FAULTS, "wheel fault")
        known("fault_kinds", self.fault_kinds or (), FAULTS, "wheel fault")
        self.states()
