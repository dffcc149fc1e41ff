"""The roulette game's state, house rules and rule texts: what every part of the round reads."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

Phase = Literal["waiting", "joined", "betting", "spinning", "closed", "settled", "voided"]
IN_PLAY: tuple[Phase, ...] = ("spinning", "closed")

R_DIRECTION = "seed 003 IV §3.1.1: the ball is spun against the wheel's rotation"
R_REVOLUTIONS = "seed 003 IV §3.1.1: the ball makes at least {n} revolutions for a valid spin"
R_MISS_SPIN = "vendor SS2 exception table: miss-spin (state 3, flag 2): void, then *R"
R_LAUNCH = "vendor SS2 exception table: failed launch (flag 8) persisting past {w:g} s"
R_MISSING = "vendor SS2 exception table: ball not detected (flag 1) persisting {w:g} s"
R_FAULT = "vendor SS2 exception table: component fault (flag 4, *F <code>, silent drop to 6)"
R_SYSTEM = "seed 003 IV §2.1.6: a system failure voids the plays"
R_BALL_SEEN = (
    "seed 003 IV §3.1.1: a valid spin has the ball going round; [ours] a spin the wheel never "
    "reported in the rim (state 3) or never closed to bets (state 4) has no result"
)
R_SETTLE = "seed 003 IV §2.1.3: a bet is settled by the pocket the ball stops in"


class RouletteRules(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """The spin procedure's settings; ``docs/procedures.md`` gives each source."""

    #: an American wheel: 38 pockets, 00 reported as 37 [ours]; seed 003 IV §1.2.1 is single zero.
    double_zero: bool = False
    #: seed 003 IV §3.1.1: at least three ball revolutions (some jurisdictions need 4);
    #: judged where the wheel reports them (Mercury extended protocol).
    min_ball_revolutions: Annotated[int, msgspec.Meta(ge=1, le=20)] = 3
    #: seed 003 IV §3.1.1: the ball is spun against the rotor.
    require_ball_against_rotor: bool = True
    #: vendor SS2 exception table: ignore flag 8 for the first 3 s, then alarm.
    launch_fail_window: Annotated[float, msgspec.Meta(ge=0)] = 3.0
    #: [ours] flag 8 still set this long into state 3 voids the spin (None: never;
    #: the vendor says "void or stop the game" without a time).
    launch_fail_void_after: Annotated[float, msgspec.Meta(ge=0)] | None = 6.0
    #: vendor SS2 exception table: ignore flag 1 for at least 5 s (10 frames), then void.
    ball_missing_window: Annotated[float, msgspec.Meta(ge=0)] = 5.0
    #: [ours] seconds between frames after which frames count as lost: the SS2 driver's
    #: ``stale_after`` default (6 missed 500 ms frames). Nothing is judged across a gap.
    frame_gap: Annotated[float, msgspec.Meta(gt=0)] = 3.0
    #: seed 003 IV §2.1.6: a system failure (daemon restart, wheel link lost) voids the spin
    #: in play at once; off, the wheel's next frames decide (a result not seen is void anyway).
    void_on_system_failure: bool = False
    #: [ours, fail safe] while a device-fault alarm is latched, every spin is void.
    fault_stops_play: bool = True
    #: whose flag table the status frames use: SlingShot 2 or Mercury 360 (vendor M360 guide).
    wheel_model: Literal["ss2", "m360"] = "ss2"
    #: house procedure checks (alarms, never voids; daemon/games/roulette/procedure.py): the
    #: rotor's direction alternates between spins, its speed (rpm) and the ball's revolutions
    #: inside the house's range, at most so many spins an hour between consecutive games.
    #: None/false: unchecked
    alternate_rotor: bool = False
    rotor_rpm_min: Annotated[float, msgspec.Meta(gt=0)] | None = None
    rotor_rpm_max: Annotated[float, msgspec.Meta(gt=0)] | None = None
    max_ball_revolutions: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    max_spins_per_hour: Annotated[float, msgspec.Meta(gt=0)] | None = None
    #: the paytable in force (None: the game's shipped default, ``docs/settlement.md``), and the
    #: house's own paytables by name (``[game.paytables.<name>]``: a bet spot = its ratio)
    paytable: str | None = None
    paytables: dict[str, dict[str, Any]] = {}

    def __post_init__(self) -> None:
        low, high = self.rotor_rpm_min, self.rotor_rpm_max
        if low is not None and high is not None and low > high:
            raise ValueError(f"rotor_rpm_min ({low:g}) is above rotor_rpm_max ({high:g})")
        v = self.launch_fail_void_after
        if v is not None and v < self.launch_fail_window:
            raise ValueError(
                f"launch_fail_void_after ({v}) must not be shorter than "
                f"launch_fail_window ({self.launch_fail_window})"
            )


class RouletteState(msgspec.Struct, frozen=True):
    device: str | None = None
    phase: Phase = "waiting"
    round: int = 1  # the round whose result is due; a void keeps it
    spin: int = 0  # the table's own spin counter: every spin started, never wraps
    results: int = 0
    voids: int = 0
    respin: bool = False  # the round had a spin voided: the next spin re-spins it
    wheel_state: int | None = None
    wheel_spin: int | None = None
    state_since: float | None = None
    flags: int = 0
    flag_since: dict[int, float] = {}
    closed: bool = False  # betting.closed published for the spin in play
    ball_since_result: bool = True  # a ball-in-rim state since the last result
    partial: bool = False  # frames were lost during the spin in play
    pending: int | None = None  # a bare number line waiting for state 5
    last_number: int | None = None
    rotor_direction: str | None = None
    rotor_rpm: float | None = None
    launch_alarm: str | None = None
    link_gap: bool = True  # a restart or a link loss since the last frame was judged
    boot: str | None = None  # the boot whose monotonic clock the saved times are on
    clock_lost: bool = False  # restarted on another boot: restart the windows at resync
    # the last spin.started's wheel counter and time, for the procedure checks (None: not
    # comparable: a restart or a lost link since)
    started_wheel_spin: int | None = None
    started_mono: float | None = None


class RouletteParts:
    """What every part of the roulette game (its mixins) holds, and how a phase reads."""

    rules: RouletteRules

    @staticmethod
    def phase_text(g: RouletteState) -> str:
        return {
            "waiting": "waiting for the wheel to start a game",
            "joined": "the wheel is in a game whose betting the table did not see; waiting "
            "for the next game",
            "betting": f"taking bets for round {g.round}",
            "spinning": f"spin {g.spin} in play, bets still open",
            "closed": f"spin {g.spin} in play, no more bets",
            "settled": f"round {g.round - 1} settled ({g.last_number})",
            "voided": f"spin {g.spin} void; waiting for the re-spin of round {g.round}",
        }[g.phase]
