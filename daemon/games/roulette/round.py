"""The roulette round: a game opening, the ball launched, no more bets, the winning number,
a void and its re-spin; a fault that stops play. Every rule names its source.

Why long: one round's life, in the order a spin lives it: each step is short, but each
reads what the step before left (the round, the spin, a void awaiting its re-spin), and
the rule texts sit beside the decisions that cite them."""

from __future__ import annotations

from typing import Any

from tabled_client import paytables

from daemon.games.roulette import procedure
from daemon.games.roulette import rules as roulette
from daemon.games.roulette.state import (
    IN_PLAY,
    R_BALL_SEEN,
    R_DIRECTION,
    R_FAULT,
    R_REVOLUTIONS,
    R_SETTLE,
    R_SYSTEM,
    RouletteParts,
    RouletteState,
)
from daemon.games.roulette.wheel import (
    _At,
    _text,
)
from daemon.table import (
    R_NOISE,
    Command,
    Decision,
    TableState,
    line_noise_alarm,
    raise_alarm,
)
from drivers.readings import GameEvent, WinningNumber


class RouletteRound(RouletteParts):
    """Betting, the spin, the result and voids of one round (seed 003 part IV)."""

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
        if not late:
            procedure.check_start(self.rules, t, d, g, at.r, at.mono, at.device, at.frames)
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

    def on_line_noise(self, t: TableState, d: Decision, dev: str) -> None:
        """The wheel's line turned noisy: its frames may be noise, so the spin in play is void."""
        if dev == t.game.device:
            self._noise_stops_play(d, dev)

    def _noise_stops_play(self, d: Decision, dev: str) -> bool:
        now: TableState = d.state()
        noise = line_noise_alarm(now, dev)
        if noise is not None and now.game.phase in IN_PLAY:
            self._void(
                now,
                d,
                "line-noise",
                f"{R_NOISE}; [ours, fail safe] no spin is valid while the wheel's line is noisy",
                f"alarm {noise}: the wheel's line is noisy",
                [],
            )
            return True
        return False

    def _fault_stops_play(self, t: TableState, d: Decision, dev: str, at: _At | None) -> None:
        if self._noise_stops_play(d, dev):
            return
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

    def _ball_rules(self, t: TableState, d: Decision, at: _At) -> None:
        """seed 003 IV §3.1.1 where the wheel reports the ball (Mercury extended protocol)."""
        r = at.r
        if (
            self.rules.require_ball_against_rotor
            and r.state in (3, 4, 5, 7)
            and r.ball_direction in ("clockwise", "anticlockwise")
            and r.ball_direction == r.direction
            and d.state().game.phase in IN_PLAY  # last: the one test that folds the drafts
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
        procedure.check_revolutions(self.rules, t, d, revs, at.device, at.frames)
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
            paytable=self.rules.paytable
            or paytables.default_for("roulette", self.rules.double_zero),
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
