"""The roulette spin procedure: a wheel's frames in, rounds, results and voids out. Pure.

The wheel (Cammegh SlingShot 2 or Mercury 360, ``drivers/cammegh.py``) reports its
own state machine ``6 → 1 → (2 → 3 → 4 → 5)…`` every 500 ms; the table follows it
and journals only what changes: a game opening (``betting.opened``), the ball in
the rim (``spin.started``), no more bets (``betting.closed``), the winning number
(``spin.result``) or a void (``spin.void``), plus flag changes and alarms. Every
rule names its source: seed 003 part IV (``seed 003 IV §3.1.1``), the vendor's
exception table (``vendor SS2 exception table``), the Mercury integration guide
(``vendor M360 guide``), or ``ours`` where both are silent; ``docs/procedures.md``
lists them with their settings.

A void keeps the round: the wheel re-spins and the next result belongs to the same
round (seed 003 IV §3.1.1: an invalid spin is no spin; bets stand).

Time comes only from the readings' ``mono``. The one memory outside the journaled
state is the last frame seen per device (:class:`_Seen`), used to tell consecutive
frames from frames with a gap between them; it is exactly what a fresh process
lacks, and a fresh process treats its first frame as following a gap, so nothing
is ever judged across a restart, a reconnection or a hole in a capture.

The persistence windows' starts (``state_since``, ``flag_since``) are monotonic times
in the saved state, and the monotonic clock restarts at every boot: a start taken on
another boot (``daemon.started``'s ``boot`` differs, or is unknown) is restarted at
the first frame after the restart (its ``wheel.resync``). A window then counts only
what this boot's clock saw: it may run up to one window longer, never shorter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import msgspec

from daemon.games.describe import Describer
from daemon.games.roulette import rules as roulette
from daemon.games.roulette.describe import RouletteDescriber
from daemon.table import (
    REASON,
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
from drivers.cammegh import M360_FLAGS, M360_STATES, SS2_FLAGS, SS2_STATES, flag_names
from drivers.readings import GameEvent, WheelFault, WheelStatus, WinningNumber

Phase = Literal["waiting", "joined", "betting", "spinning", "closed", "settled", "voided"]
IN_PLAY: tuple[Phase, ...] = ("spinning", "closed")

#: state changes a wheel can make between two consecutive frames (vendor SS2 state list,
#: vendor M360 guide); anything else is an ``impossible-state`` alarm [ours].
ALLOWED: dict[int, frozenset[int]] = {
    1: frozenset({2, 6, 7}),
    2: frozenset({1, 3, 6, 7}),
    3: frozenset({1, 2, 4, 6, 7}),
    4: frozenset({1, 2, 5, 6, 7}),
    5: frozenset({1, 2, 6}),
    6: frozenset({1, 2}),
    7: frozenset({1, 2, 3, 4, 5, 6}),
}
#: the Mercury pauses a game on flag 2 or 8 "until a respin" (vendor M360 guide): the
#: dealer's re-spin is seen in the track again (state 3) within the same game.
ALLOWED_M360: dict[int, frozenset[int]] = {**ALLOWED, 4: ALLOWED[4] | {3}}

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

    def __post_init__(self) -> None:
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


@dataclass(slots=True)
class _Seen:
    """The last status frame of one device, outside the journal (see the module docstring).

    Only status frames count: a reply between two status frames says the link is up, not
    that no status frame was lost.
    """

    mono: float
    frame: bytes
    state: int
    spin: int


@dataclass(slots=True)
class _At:
    """One status frame being decided."""

    device: str
    r: WheelStatus
    mono: float
    gap: bool
    frames: list[str]


def _text(frame: bytes) -> str:
    return frame.decode("ascii", "backslashreplace")


class RouletteGame:
    """Roulette on a wheel that reports its own state machine (Cammegh SS2, Mercury 360)."""

    name: ClassVar[str] = "roulette"
    Rules: ClassVar[type[RouletteRules]] = RouletteRules
    State: ClassVar[type[RouletteState]] = RouletteState
    STATE_VERSION: ClassVar[int] = 1
    describe: ClassVar[Describer] = RouletteDescriber()

    commands: ClassVar[dict[str, CommandSpec]] = {
        "spin.void": spec(
            "void the spin in play",
            "supervisor",
            words=("void", "spin"),
            args=(REASON,),
        ),
    }

    def __init__(self, rules: RouletteRules) -> None:
        self.rules = rules
        self._seen: dict[str, _Seen] = {}

    def initial(self) -> RouletteState:
        return RouletteState()

    def summary(self, g: RouletteState) -> dict[str, Any]:
        """The game as a technician reads it (``tablectl status``)."""
        names = M360_STATES if self.rules.wheel_model == "m360" else SS2_STATES
        return {
            "phase": g.phase,
            "text": self.phase_text(g),
            "round": g.round,
            "spin": g.spin,
            "results": g.results,
            "voids": g.voids,
            "last_number": g.last_number,
            "wheel_state": g.wheel_state,
            "wheel_state_name": names.get(g.wheel_state or 0),
            "wheel_spin": g.wheel_spin,
            "flags": flag_names(g.flags, self._flag_table()),
            "layout": roulette.layout(self.rules.double_zero),
        }

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

    def _flag_table(self) -> dict[int, str]:
        return M360_FLAGS if self.rules.wheel_model == "m360" else SS2_FLAGS

    # ====================================================================== decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, WheelStatus):
                self._status(t, dev, r, inp.mono, d)
            elif isinstance(r, WinningNumber):
                self._line(t, dev, r, inp.mono, d)
            elif isinstance(r, GameEvent):
                self._milestone(t, dev, r, inp.mono, d)
            elif isinstance(r, WheelFault):
                self._fault(t, d, dev, r.code, r.meaning, [_text(r.frame)])
        elif isinstance(inp, DeviceHealth):
            g: RouletteState = t.game
            if inp.health != "ok" and inp.device == g.device:
                self._system_failure(t, d, f"wheel {inp.health}: {inp.reason}")
        elif isinstance(inp, Command) and inp.name == "spin.void":
            self._void_command(t, inp, d)

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 IV §2.1.6: when the house says so, a restart voids the spin in play."""
        self._system_failure(t, d, "the daemon restarted during the spin")

    def _system_failure(self, t: TableState, d: Decision, why: str) -> None:
        g: RouletteState = d.state().game
        if self.rules.void_on_system_failure and g.phase in IN_PLAY:
            self._void(t, d, "system-failure", R_SYSTEM, why, [])

    def _void_command(self, t: TableState, c: Command, d: Decision) -> None:
        g: RouletteState = t.game
        if g.phase not in IN_PLAY:
            d.refused = f"no spin is in play to void (the table is {self.phase_text(g)})"
            return
        reason = str(c.args.get("reason") or "supervisor")
        self._void(
            t,
            d,
            reason,
            "seed 003 IV §3.1.1: a spin that is not valid is no spin; a supervisor decides",
            f"voided by {c.actor}",
            [],
            by=c.actor,
        )

    # -- frames and gaps -----------------------------------------------------------------

    def _gap(self, g: RouletteState, prev: _Seen | None, mono: float) -> tuple[bool, float | None]:
        """Whether frames may be missing before this one, and for how long (None: unknown)."""
        if prev is None:
            return True, None
        since = round(mono - prev.mono, 3)
        lost = (
            g.link_gap
            or since < 0
            or since > self.rules.frame_gap
            # a commit that failed left the journal behind what this process saw
            or prev.state != g.wheel_state
            or prev.spin != g.wheel_spin
        )
        return lost, since

    # -- status frames -----------------------------------------------------------------

    def _status(self, t: TableState, dev: str, r: WheelStatus, mono: float, d: Decision) -> None:
        g: RouletteState = t.game
        prev = self._seen.get(dev)
        gap, since = self._gap(g, prev, mono)
        self._seen[dev] = _Seen(mono, r.frame, r.state, r.spin)
        frame = _text(r.frame)
        at = _At(dev, r, mono, gap, [_text(prev.frame), frame] if prev else [frame])
        if gap:
            d.add("wheel.resync", device=dev, gap=since, frame=frame, mono=mono)

        old_state, old_spin = g.wheel_state, g.wheel_spin
        changed = r.state != old_state
        new_game = old_spin is not None and r.spin != old_spin
        allowed = ALLOWED_M360 if self.rules.wheel_model == "m360" else ALLOWED
        impossible = (
            not gap
            and changed
            and old_state is not None
            and r.state not in allowed.get(old_state, frozenset())
        )
        self._sanity(t, d, at, old_state, old_spin, impossible)

        # The spin in play ends when the wheel moves on: with its announced number, or void.
        moved_on = new_game or (changed and r.state in (1, 2, 6))
        if moved_on and g.phase in IN_PLAY:
            self._unfinished(t, d, g, at, old_state)

        joined = False
        now: RouletteState = d.state().game
        ignore = now.phase in ("voided", "joined") and not moved_on
        if ignore and self._mercury_respin(now, r, changed):
            ignore, changed = False, True
        if r.state == 2 and (changed or new_game):
            # closes_in None: the wheel closes betting (state 4) on its own clock
            d.add("betting.opened", **self._common(now, at), respin=now.respin, closes_in=None)
        elif r.state in (3, 4, 5) and (changed or new_game) and not ignore:
            if old_state is None or (gap and new_game):
                joined = True  # a game whose betting this table never saw is not its game
            else:
                self._enter_spin(t, d, at, old_state if impossible else None)

        now = d.state().game
        if r.flags != now.flags:
            d.add(
                "wheel.flags",
                device=dev,
                flags=r.flags,
                names=flag_names(r.flags, self._flag_table()),
                state=r.state,
                wheel_spin=r.spin,
                mono=mono,
                frame=frame,
            )
        self._flag_rules(t, d, at)
        self._ball_rules(t, d, at)

        now = d.state().game
        if r.state == 5 and (changed or new_game) and now.phase in IN_PLAY:
            self._result(t, d, at, r.last_number)

        now = d.state().game
        if now.wheel_state != r.state or now.wheel_spin != r.spin or joined:
            names = M360_STATES if self.rules.wheel_model == "m360" else SS2_STATES
            d.add(
                "wheel.state",
                device=dev,
                wheel_state=r.state,
                name=names.get(r.state, "unknown"),
                previous=old_state,
                wheel_spin=r.spin,
                mono=mono,
                joined=joined,
                frame=frame,
            )

    def _mercury_respin(self, g: RouletteState, r: WheelStatus, changed: bool) -> bool:
        """vendor M360 guide: after flag 2 or 8 the game waits for the dealer's re-spin, seen
        as the ball back in the track (state 3) or as the void flag clearing."""
        if self.rules.wheel_model != "m360" or g.phase != "voided" or r.flags & 0xA:
            return False
        return r.state in (3, 4, 7) and ((changed and r.state == 3) or bool(g.flags & 0xA))

    def _sanity(
        self,
        t: TableState,
        d: Decision,
        at: _At,
        old_state: int | None,
        old_spin: int | None,
        impossible: bool,
    ) -> None:
        """Protocol-sanity alarms, judged only between consecutive frames [ours]."""
        r = at.r
        if not at.gap and old_spin is not None and r.spin != old_spin:
            if not _counter_ok(old_spin, r, old_state):
                raise_alarm(
                    t,
                    d,
                    "spin-counter",
                    f"the wheel's spin counter went from {old_spin} to {r.spin}",
                    rule="vendor SS2 status frame: the counter counts games, 1-256, and wraps "
                    "(vendor M360 guide: 0-255, reset when the table closes)",
                    action="check the wheel's link and firmware; results stand",
                    severity="warning",
                    device=at.device,
                    frames=at.frames,
                )
        if impossible:
            raise_alarm(
                t,
                d,
                "impossible-state",
                f"the wheel went from state {old_state} straight to state {r.state}",
                rule="vendor SS2 state list: 6 → 1 → (2 → 3 → 4 → 5) …",
                action="check the wheel's sensors; a spin it lands in past the ball-in-rim "
                "state is void",
                device=at.device,
                frames=at.frames,
            )

    def _enter_spin(self, t: TableState, d: Decision, at: _At, impossible_from: int | None) -> None:
        """States 3-5 of a game the table follows: start, close bets, judge the landing."""
        r = at.r
        now: RouletteState = d.state().game
        if now.phase not in IN_PLAY:
            self._start(t, d, at, late=r.state != 3 or at.gap)
        now = d.state().game
        if r.state >= 4 and now.phase in IN_PLAY and not now.closed:
            # seed 003 IV §2.1.1: bets are taken until no more bets
            d.add("betting.closed", **self._common(now, at))
        if impossible_from is not None and r.state in (4, 5):
            self._void(
                t,
                d,
                "impossible-state",
                R_BALL_SEEN,
                f"state {impossible_from} → {r.state}: the ball was never in the rim or bets "
                "never closed",
                at.frames,
                at=at,
            )

    def _common(self, g: RouletteState, at: _At) -> dict[str, Any]:
        return {
            "device": at.device,
            "round": g.round,
            "spin": g.spin,
            "wheel_spin": at.r.spin,
            "wheel_state": at.r.state,
            "mono": at.mono,
        }

    def _start(self, t: TableState, d: Decision, at: _At, *, late: bool) -> None:
        """seed 003 IV §3.1.1: the ball is in the rim; bets stay open until no more bets."""
        g: RouletteState = d.state().game
        data = self._common(g, at)
        data["spin"] = g.spin + 1
        d.add(
            "spin.started",
            **data,
            rotor_direction=at.r.direction,
            rotor_rpm=at.r.rpm,
            respin=g.respin,
            late=late,
        )
        self._fault_stops_play(t, d, at.device, at)

    def _fault_stops_play(self, t: TableState, d: Decision, dev: str, at: _At | None) -> None:
        now: TableState = d.state()
        latched = [a.id for a in now.alarms.values() if a.kind == "device-fault"]
        if self.rules.fault_stops_play and latched and now.game.phase in IN_PLAY:
            self._void(
                t,
                d,
                "device-fault",
                f"[ours, fail safe] no spin is valid while a device fault is latched; {R_FAULT}",
                f"device fault {', '.join(latched)} is not cleared",
                at.frames if at else [],
                at=at,
            )

    def _unfinished(
        self, t: TableState, d: Decision, g: RouletteState, at: _At, old_state: int | None
    ) -> None:
        """The wheel moved on while a spin was in play: its number if announced, else a void."""
        r = at.r
        if g.pending is not None:
            self._settle(
                t,
                d,
                g.pending,
                "number-line",
                device=at.device,
                frames=at.frames,
                gap=at.gap,
                wheel_spin=g.wheel_spin,
            )
            return
        if at.gap:
            self._void(
                t,
                d,
                "result-not-seen",
                R_SYSTEM + "; [ours] frames were lost while the spin was in play",
                f"frames resumed in state {r.state} (wheel spin {r.spin}) without the result of "
                f"wheel spin {g.wheel_spin}",
                at.frames,
                wheel_spin=g.wheel_spin,
            )
            return
        if r.state == 6 and old_state in (3, 4, 7):
            self._fault(
                t,
                d,
                at.device,
                None,
                f"silent drop from state {old_state} to state 6 during the spin",
                at.frames,
                wheel_spin=g.wheel_spin,
            )
            return
        reason, rule = self._flag_reason(g.flags)
        self._void(
            t,
            d,
            reason,
            rule,
            f"the wheel left state {old_state} for state {r.state} without a result",
            at.frames,
            wheel_spin=g.wheel_spin,
        )

    def _flag_reason(self, flags: int) -> tuple[str, str]:
        r = self.rules
        if self.rules.wheel_model == "m360":
            if flags & 8:
                return "wheel-void", "vendor M360 guide: flag 8, the wheel voids the game"
            if flags & 2:
                return "ball-direction", R_DIRECTION + " (vendor M360 guide: flag 2)"
        else:
            if flags & 2:
                return "ball-direction", f"{R_DIRECTION}; {R_MISS_SPIN}"
            if flags & 8:
                return "launch-failure", R_LAUNCH.format(w=r.launch_fail_window)
            if flags & 1:
                return "ball-missing", R_MISSING.format(w=r.ball_missing_window)
        return "spin-abandoned", "[ours] a spin the wheel abandons without a result has no result"

    # -- flags and the ball ---------------------------------------------------------------

    @staticmethod
    def _persisted(g: RouletteState, bit: int | None, mono: float) -> float:
        """How long ``bit`` (None: the state itself) has lasted in the current wheel state."""
        since = g.state_since if g.state_since is not None else mono
        if bit is not None:
            since = max(since, g.flag_since.get(bit, mono))
        return mono - since

    def _flag_rules(self, t: TableState, d: Decision, at: _At) -> None:
        r, rules = at.r, self.rules
        f, st = r.flags, r.state
        if f & 4:
            if not t.game.flags & 4:
                meaning = flag_names(4, self._flag_table())[0]
                self._fault(t, d, at.device, None, f"status flag 4: {meaning}", at.frames, at=at)
            else:
                self._void(t, d, "component-fault", R_FAULT, "status flag 4", at.frames, at=at)
        in_play = d.state().game.phase in IN_PLAY
        if rules.wheel_model == "m360":
            for bit in (8, 2):
                if f & bit and st in (3, 4, 7) and in_play:
                    reason, rule = self._flag_reason(bit)
                    self._void(t, d, reason, rule, f"flag {bit} during the spin", at.frames, at=at)
                    return
            return
        if f & 2 and st in (3, 4) and in_play:
            self._void(
                t,
                d,
                "ball-direction",
                f"{R_DIRECTION}; {R_MISS_SPIN}",
                f"flag 2 in state {st}: the ball turns the same way as the rotor",
                at.frames,
                at=at,
                acknowledge=True,
            )
        self._launch(t, d, at)
        g: RouletteState = d.state().game
        if (f & 1 or st == 7) and st in (3, 4, 7) and g.phase in IN_PLAY:
            lasted = self._persisted(g, 1 if f & 1 else None, at.mono)
            if lasted >= rules.ball_missing_window:
                self._void(
                    t,
                    d,
                    "ball-missing",
                    R_MISSING.format(w=rules.ball_missing_window),
                    f"ball not detected for {lasted:.1f} s in state {st}",
                    at.frames,
                    at=at,
                )

    def _launch(self, t: TableState, d: Decision, at: _At) -> None:
        """Flag 8: alarm past the vendor's window (states 2-3), void when it lasts in state 3.

        The vendor puts it in state 3; the real traffic has it only in state 2, where the
        wheel waits after a misfire until the ball fires [cap]: nothing is at stake there
        yet, so it is an alarm that clears itself.
        """
        r, rules = at.r, self.rules
        now: TableState = d.state()
        g: RouletteState = now.game
        if not (r.flags & 8 and r.state in (2, 3)):
            if g.launch_alarm is not None and g.launch_alarm in now.alarms:
                d.add("alarm.cleared", id=g.launch_alarm, by="table", reason="flag 8 cleared")
            return
        lasted = self._persisted(g, 8, at.mono)
        if lasted >= rules.launch_fail_window and g.launch_alarm is None:
            raise_alarm(
                t,
                d,
                "launch-failure",
                f"ball launch failing for {lasted:.1f} s in state {r.state} (flag 8)",
                rule=R_LAUNCH.format(w=rules.launch_fail_window),
                action="the wheel retries by itself; if it goes on, check the ball and the "
                "launcher (the alarm clears itself when flag 8 does)",
                severity="warning",
                device=at.device,
                frames=at.frames,
            )
        void_after = rules.launch_fail_void_after
        if r.state == 3 and g.phase in IN_PLAY and void_after is not None and lasted >= void_after:
            self._void(
                t,
                d,
                "launch-failure",
                R_LAUNCH.format(w=rules.launch_fail_window)
                + f"; [ours] void after {void_after:g} s",
                f"flag 8 for {lasted:.1f} s in state 3",
                at.frames,
                at=at,
            )

    def _ball_rules(self, t: TableState, d: Decision, at: _At) -> None:
        """seed 003 IV §3.1.1 where the wheel reports the ball (Mercury extended protocol)."""
        r = at.r
        g: RouletteState = d.state().game
        if (
            self.rules.require_ball_against_rotor
            and g.phase in IN_PLAY
            and r.state in (3, 4, 5, 7)
            and r.ball_direction in ("clockwise", "anticlockwise")
            and r.ball_direction == r.direction
        ):
            self._void(
                t,
                d,
                "ball-direction",
                R_DIRECTION + " (vendor M360 guide: extended ball direction)",
                f"ball and rotor both {r.direction}",
                at.frames,
                at=at,
            )

    # -- results -------------------------------------------------------------------------

    def _result(self, t: TableState, d: Decision, at: _At, number: int | None) -> None:
        """State 5 entered: the number in the frame, cross-checked with the bare line."""
        g: RouletteState = d.state().game
        pending = g.pending
        if number is None and pending is None:
            self._void(
                t,
                d,
                "no-winning-number",
                R_SETTLE + "; vendor SS2 status frame: state 5 carries the winning number",
                "state 5 without a winning number",
                at.frames,
                at=at,
            )
            return
        if number is not None and pending is not None and number != pending:
            self._mismatch(t, d, at.device, pending, number, at.frames)
            self._void(
                t,
                d,
                "number-mismatch",
                "[ours] the bare number line and the state-5 frame must agree (no checksum)",
                f"number line {pending}, state 5 {number}",
                at.frames,
                at=at,
            )
            return
        revs = at.r.ball_revolutions
        if revs is not None and revs < self.rules.min_ball_revolutions:
            self._void(
                t,
                d,
                "ball-revolutions",
                R_REVOLUTIONS.format(n=self.rules.min_ball_revolutions),
                f"the ball made {revs} revolutions",
                at.frames,
                at=at,
            )
            return
        if number is None:
            n, source = pending, "number-line"
        else:
            n, source = number, ("status+line" if pending is not None else "status")
        assert n is not None
        self._settle(t, d, n, source, device=at.device, frames=at.frames, gap=at.gap, status=at)

    def _settle(
        self,
        t: TableState,
        d: Decision,
        n: int,
        source: str,
        *,
        device: str,
        frames: list[str],
        gap: bool = False,
        wheel_spin: int | None = None,
        status: _At | None = None,
    ) -> None:
        """seed 003 IV §2.1.3: the pocket settles every bet; checked once more, then published."""
        g: RouletteState = d.state().game
        if not roulette.is_pocket(n, self.rules.double_zero):
            raise_alarm(
                t,
                d,
                "invalid-number",
                f"the wheel reported {n}, not a pocket of a "
                f"{roulette.layout(self.rules.double_zero)} wheel",
                rule="[ours] game.double_zero and the driver's double_zero must agree",
                action="check both settings; the spin is void",
                device=device,
                frames=frames,
            )
            self._void(t, d, "invalid-number", R_SETTLE, f"number {n}", frames, at=status)
            return
        if n == g.last_number and not g.ball_since_result and not gap:
            self._repeat_alarm(t, d, device, n, frames)
            self._void(t, d, "repeat-number", R_BALL_SEEN, f"{n} repeated", frames, at=status)
            return
        self._fault_stops_play(t, d, device, status)
        g = d.state().game
        if g.phase not in IN_PLAY:
            return
        if not g.closed:  # a result closes bets at the latest (seed 003 IV §2.1.1)
            d.add("betting.closed", device=device, round=g.round, spin=g.spin)
            g = d.state().game
        data = roulette.result_data(n, self.rules.double_zero)
        r = status.r if status is not None else None
        extra: dict[str, Any] = {}
        if status is not None:
            extra = {"wheel_state": status.r.state, "mono": status.mono}
        d.add(
            "spin.result",
            device=device,
            round=g.round,
            spin=g.spin,
            wheel_spin=wheel_spin if wheel_spin is not None else (r.spin if r else g.wheel_spin),
            **data,
            rotor_direction=g.rotor_direction,
            rotor_rpm=g.rotor_rpm,
            ball_revolutions=r.ball_revolutions if r else None,
            ball_direction=r.ball_direction if r else None,
            source=source,
            complete=not g.partial,
            respin=g.respin,
            **extra,
        )

    def _mismatch(
        self, t: TableState, d: Decision, dev: str, line: int, status: int, frames: list[str]
    ) -> None:
        raise_alarm(
            t,
            d,
            "number-mismatch",
            f"the number line said {line} and the status frame {status}",
            rule="[ours] the two sources of a result are cross-checked: live frames carry no "
            "checksum (vendor SS2 protocol)",
            action="check the wheel's link (noise, wrong cable); compare with the camera",
            device=dev,
            frames=frames,
        )

    # -- bare number lines and Mercury basic milestones -----------------------------------

    def _line(self, t: TableState, dev: str, r: WinningNumber, mono: float, d: Decision) -> None:
        """The bare number line (SS2, Mercury advanced) or ``*W nn`` (Mercury basic)."""
        g: RouletteState = t.game
        prev = self._seen.get(dev)
        gap = prev is None or g.link_gap or not 0 <= mono - prev.mono <= self.rules.frame_gap
        frames = [_text(r.frame)]
        st = g.wheel_state
        if st is None:
            if self.rules.wheel_model == "m360":
                self._basic_result(t, d, dev, r.number, frames)
            return  # SS2: a number with no state seen yet belongs to no spin we know
        if g.phase in ("voided", "joined"):
            return  # the number of a void spin, or of a game that is not the table's
        if st in (4, 7) and g.phase in IN_PLAY:
            if g.pending is not None and g.pending != r.number:
                self._mismatch(t, d, dev, g.pending, r.number, frames)
                self._void(t, d, "number-mismatch", R_SETTLE, "two number lines", frames)
            elif g.pending is None:
                # vendor SS2: sent when the number is detected, just before state 5; held
                # until the state-5 frame confirms it.
                d.add(
                    "wheel.number",
                    device=dev,
                    round=g.round,
                    spin=g.spin,
                    number=r.number,
                    pocket=roulette.label(r.number),
                    frame=frames[0],
                )
            return
        if st == 5 and g.phase == "settled":
            if g.last_number is not None and r.number != g.last_number:
                self._mismatch(t, d, dev, r.number, g.last_number, frames)
            return
        if r.number == g.last_number and not g.ball_since_result and not gap:
            self._repeat_alarm(t, d, dev, r.number, frames)
            return
        raise_alarm(
            t,
            d,
            "number-out-of-sequence",
            f"number line {r.number} in state {st}, where no result is due",
            rule="vendor SS2: the number line comes just before state 5",
            action="ignored; check the wheel if it repeats",
            severity="warning",
            device=dev,
            frames=frames,
        )

    def _repeat_alarm(
        self, t: TableState, d: Decision, dev: str, n: int, frames: list[str]
    ) -> None:
        raise_alarm(
            t,
            d,
            "repeat-number",
            f"{n} reported again with no ball in the rim since the last result",
            rule="[ours] sensor-stuck check: a new number needs a new spin (seed 003 IV §3.1.1)",
            action="check the wheel's number sensor; no result comes from this report",
            device=dev,
            frames=frames,
        )

    def _basic_result(
        self, t: TableState, d: Decision, dev: str, n: int, frames: list[str]
    ) -> None:
        """Mercury basic level (``*W nn``): the number line is the result (vendor M360 guide)."""
        g: RouletteState = d.state().game
        if g.phase == "voided":
            return
        if g.phase not in IN_PLAY:
            if n == g.last_number and not g.ball_since_result:
                self._repeat_alarm(t, d, dev, n, frames)
                return
            self._basic_start(t, d, dev, late=True)
        g = d.state().game
        if g.phase in IN_PLAY and not g.closed:
            d.add("betting.closed", device=dev, round=g.round, spin=g.spin)
        self._settle(t, d, n, "number-line", device=dev, frames=frames)

    def _basic_start(self, t: TableState, d: Decision, dev: str, *, late: bool) -> None:
        g: RouletteState = d.state().game
        d.add(
            "spin.started",
            device=dev,
            round=g.round,
            spin=g.spin + 1,
            rotor_direction=None,
            rotor_rpm=None,
            respin=g.respin,
            late=late,
        )
        self._fault_stops_play(t, d, dev, None)

    def _milestone(self, t: TableState, dev: str, r: GameEvent, mono: float, d: Decision) -> None:
        """Mercury basic ``*S`` (ball spun) and ``*N`` (no more bets) (vendor M360 guide)."""
        g: RouletteState = t.game
        if r.what == "started":
            if g.phase in IN_PLAY:
                self._void(
                    t,
                    d,
                    "no-winning-number",
                    R_SETTLE,
                    "a new game started before the last one's number (*W)",
                    [_text(r.frame)],
                )
            self._basic_start(t, d, dev, late=False)
        elif r.what == "no-more-bets":
            if g.phase == "voided":
                return
            if g.phase not in IN_PLAY:
                self._basic_start(t, d, dev, late=True)
            now: RouletteState = d.state().game
            if now.phase in IN_PLAY and not now.closed:
                d.add("betting.closed", device=dev, round=now.round, spin=now.spin)

    # -- faults and voids ----------------------------------------------------------------

    def _fault(
        self,
        t: TableState,
        d: Decision,
        dev: str,
        code: int | None,
        meaning: str,
        frames: list[str],
        *,
        at: _At | None = None,
        wheel_spin: int | None = None,
    ) -> None:
        """vendor SS2 exception table: a component fault latches until a technician clears it."""
        active = next(
            (
                a.id
                for a in d.state().alarms.values()
                if a.kind == "device-fault" and a.device == dev
            ),
            None,
        )
        alarm = active or raise_alarm(
            t,
            d,
            "device-fault",
            f"{dev}: {meaning}" + (f" (code {code})" if code is not None else ""),
            rule=R_FAULT,
            action="stop the game; run the wheel's self-test (*F) to identify the fault; a "
            "technician repairs it and clears this alarm (`tablectl alarm clear ID`)",
            severity="supervisor",
            device=dev,
            code=code,
            frames=frames,
        )
        d.add(
            "device.fault",
            device=dev,
            code=code,
            meaning=meaning,
            frames=frames,
            alarm=alarm,
        )
        if d.state().game.phase in IN_PLAY:
            self._void(
                t,
                d,
                "component-fault",
                f"{R_FAULT}; {R_SYSTEM}",
                meaning,
                frames,
                at=at,
                wheel_spin=wheel_spin,
            )

    def _void(
        self,
        t: TableState,
        d: Decision,
        reason: str,
        rule: str,
        message: str,
        frames: list[str],
        *,
        at: _At | None = None,
        by: str = "table",
        acknowledge: bool = False,
        wheel_spin: int | None = None,
    ) -> None:
        """The spin in play is no spin: no result ever comes from it; the round stays open."""
        g: RouletteState = d.state().game
        if g.phase not in IN_PLAY:
            return
        data: dict[str, Any] = {
            "device": g.device if at is None else at.device,
            "round": g.round,
            "spin": g.spin,
            "wheel_spin": wheel_spin if wheel_spin is not None else g.wheel_spin,
            "reason": reason,
            "rule": rule,
            "message": message,
            "frames": frames,
            "by": by,
            # vendor SS2 exception table: the daemon sends *R (when the driver's
            # acknowledge_void is on) to acknowledge a miss-spin void.
            "acknowledge": acknowledge,
        }
        if at is not None and wheel_spin is None:
            data.update(wheel_spin=at.r.spin, wheel_state=at.r.state, mono=at.mono)
        d.add("spin.void", **data)

    # ======================================================================= apply

    def apply(self, g: RouletteState, type_: str, data: dict[str, Any]) -> RouletteState:
        rep = msgspec.structs.replace
        if type_ == "daemon.started":
            boot = data.get("boot")
            lost = g.clock_lost or boot is None or boot != g.boot
            return rep(g, link_gap=True, boot=boot, clock_lost=lost)
        if type_ in ("device.stale", "device.disconnected"):
            return g if g.link_gap else rep(g, link_gap=True)
        if type_ == "alarm.raised":
            if data.get("kind") == "launch-failure":
                return rep(g, launch_alarm=data["id"])
            return g
        if type_ == "alarm.cleared":
            return rep(g, launch_alarm=None) if data.get("id") == g.launch_alarm else g
        head = type_.partition(".")[0]
        if head not in ("wheel", "betting", "spin"):
            return g
        g = self._track(g, data)
        if type_ == "wheel.resync":
            g = rep(g, link_gap=False, partial=g.partial or g.phase in IN_PLAY)
            return self._new_clock(g, data.get("mono")) if g.clock_lost else g
        if type_ == "wheel.flags":
            return self._apply_flags(g, data)
        if type_ == "wheel.number":
            return rep(g, pending=data["number"])
        if type_ == "wheel.state":
            if data.get("joined"):
                return rep(g, phase="joined", closed=False, pending=None)
            if data["wheel_state"] in (1, 6):
                return rep(g, phase="waiting", closed=False, pending=None)
            return g
        if type_ == "betting.opened":
            return rep(g, phase="betting", closed=False, pending=None)
        if type_ == "spin.started":
            late = bool(data.get("late"))
            return rep(
                g,
                phase="spinning",
                spin=data["spin"],
                closed=False,
                ball_since_result=g.ball_since_result or not late,
                partial=late,
                pending=None,
                rotor_direction=data.get("rotor_direction"),
                rotor_rpm=data.get("rotor_rpm"),
            )
        if type_ == "betting.closed":
            return rep(g, phase="closed", closed=True)
        if type_ == "spin.result":
            return rep(
                g,
                phase="settled",
                round=g.round + 1,
                results=g.results + 1,
                last_number=data["number"],
                respin=False,
                pending=None,
                ball_since_result=False,
            )
        if type_ == "spin.void":
            return rep(g, phase="voided", voids=g.voids + 1, respin=True, pending=None)
        return g

    @staticmethod
    def _track(g: RouletteState, data: dict[str, Any]) -> RouletteState:
        """Follow the wheel's state and counter through the events that carry them."""
        rep = msgspec.structs.replace
        if g.device is None and data.get("device"):
            g = rep(g, device=data["device"])
        ws = data.get("wheel_state")
        if ws is not None and ws != g.wheel_state:
            g = rep(
                g,
                wheel_state=ws,
                state_since=data.get("mono"),
                ball_since_result=g.ball_since_result or ws == 3,
            )
        spin = data.get("wheel_spin")
        if spin is not None and spin != g.wheel_spin and "wheel_state" in data:
            g = rep(g, wheel_spin=spin)
        return g

    @staticmethod
    def _new_clock(g: RouletteState, mono: float | None) -> RouletteState:
        """[ours] The windows' saved starts are on a lost clock: they start again now."""
        if mono is None:  # a journal from before resyncs carried their time
            return g
        return msgspec.structs.replace(
            g,
            clock_lost=False,
            state_since=None if g.state_since is None else mono,
            flag_since=dict.fromkeys(g.flag_since, mono),
        )

    @staticmethod
    def _apply_flags(g: RouletteState, data: dict[str, Any]) -> RouletteState:
        new, old = int(data["flags"]), g.flags
        since = dict(g.flag_since)
        for bit in (1, 2, 4, 8):
            if not new & bit:
                since.pop(bit, None)
            elif not old & bit:
                since[bit] = data["mono"]
        return msgspec.structs.replace(g, flags=new, flag_since=since)


def _counter_ok(old: int, r: WheelStatus, old_state: int | None) -> bool:
    """vendor SS2 status frame: +1 per game, 256 wraps to 1; Mercury: 0-255, reset on close."""
    new = r.spin
    if new == old + 1:
        return True
    if old >= 255 and new <= 1:
        return True  # the wrap
    # the wheel restarted (power on: state 6 or 1) and counts again from the start
    return new <= 1 and (r.state in (1, 6) or old_state in (1, 6))
