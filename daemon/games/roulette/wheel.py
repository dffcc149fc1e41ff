"""Following a Cammegh wheel's status frames: its state numbers and the transitions it may make,
its flag masks, its spin counter's wrap, lost frames, the Mercury re-spin, the vendor's
exception table (flags persisting past their windows). The wheel's, not the round's: the
round (``round.py``) hears from here that a game opened, the ball is in the rim, bets
closed, a number came, or the spin is void.

Why long: the vendor's exception table is one state machine over frames — each window
(launch failure, ball missing) opens, runs and clears on the frames that follow, across
lost frames and reboots — and the transitions, the counter and the windows read the same
previous frame. Split by rule, each would keep its own copy of the previous frame."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from daemon.games.roulette.state import (
    IN_PLAY,
    R_DIRECTION,
    R_FAULT,
    R_LAUNCH,
    R_MISS_SPIN,
    R_MISSING,
    R_SYSTEM,
    RouletteParts,
    RouletteState,
)
from daemon.table import (
    Decision,
    TableState,
    device_fault,
    raise_alarm,
)
from drivers.cammegh import M360_FLAGS, M360_STATES, SS2_FLAGS, SS2_STATES, flag_names
from drivers.readings import WheelStatus

ALLOWED: dict[int, frozenset[int]] = {
    1: frozenset({2, 6, 7}),
    2: frozenset({1, 3, 6, 7}),
    3: frozenset({1, 2, 4, 6, 7}),
    4: frozenset({1, 2, 5, 6, 7}),
    5: frozenset({1, 2, 6}),
    6: frozenset({1, 2}),
    7: frozenset({1, 2, 3, 4, 5, 6}),
}

ALLOWED_M360: dict[int, frozenset[int]] = {**ALLOWED, 4: ALLOWED[4] | {3}}


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
    #: the frame before this one from the same wheel (None: the table saw none)
    prev: bytes | None

    @property
    def frames(self) -> list[str]:
        """The frames an alarm or a void quotes: the one before (if any) and this one. Made
        when asked: most status frames repeat the state and quote nothing."""
        frame = _text(self.r.frame)
        return [frame] if self.prev is None else [_text(self.prev), frame]


def _text(frame: bytes) -> str:
    return frame.decode("ascii", "backslashreplace")


def _counter_ok(old: int, r: WheelStatus, old_state: int | None) -> bool:
    """vendor SS2 status frame: +1 per game, 256 wraps to 1; Mercury: 0-255, reset on close."""
    new = r.spin
    if new == old + 1:
        return True
    if old >= 255 and new <= 1:
        return True  # the wrap
    # the wheel restarted (power on: state 6 or 1) and counts again from the start
    return new <= 1 and (r.state in (1, 6) or old_state in (1, 6))


class WheelTracking(RouletteParts):
    """The wheel's own state machine as the table follows it, frame by frame."""

    _seen: dict[str, _Seen]

    def _flag_table(self) -> dict[int, str]:
        return M360_FLAGS if self.rules.wheel_model == "m360" else SS2_FLAGS

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

    def _status(self, t: TableState, dev: str, r: WheelStatus, mono: float, d: Decision) -> None:
        g: RouletteState = t.game
        prev = self._seen.get(dev)
        gap, since = self._gap(g, prev, mono)
        self._seen[dev] = _Seen(mono, r.frame, r.state, r.spin)
        at = _At(dev, r, mono, gap, None if prev is None else prev.frame)
        if gap:
            d.add("wheel.resync", device=dev, gap=since, frame=_text(r.frame), mono=mono)

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
                frame=_text(r.frame),
            )
        self._flag_rules(t, d, at)
        self._ball_rules(t, d, at)

        if r.state == 5 and (changed or new_game) and d.state().game.phase in IN_PLAY:
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
                frame=_text(r.frame),
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
        # the state is asked last in each test below: most frames carry no flag (pure, so the
        # answer is the same whenever asked before the next draft)
        if rules.wheel_model == "m360":
            for bit in (8, 2):
                if f & bit and st in (3, 4, 7) and d.state().game.phase in IN_PLAY:
                    reason, rule = self._flag_reason(bit)
                    self._void(t, d, reason, rule, f"flag {bit} during the spin", at.frames, at=at)
                    return
            return
        if f & 2 and st in (3, 4) and d.state().game.phase in IN_PLAY:
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
        if (f & 1 or st == 7) and st in (3, 4, 7) and (g := d.state().game).phase in IN_PLAY:
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
        device_fault(
            t,
            d,
            dev,
            code,
            meaning,
            rule=R_FAULT,
            action="stop the game; run the wheel's self-test (*F) to identify the fault; a "
            "technician repairs it and clears this alarm (`tablectl alarm clear ID`)",
            frames=frames,
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
