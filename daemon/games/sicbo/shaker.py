"""What the shaker reports, decided for the Sic Bo round: shaking, dice not flat, a throw, faults.

The shaker (``drivers/dice_ref.py`` or any driver speaking
:mod:`drivers.dice_readings`) closes betting by starting to shake (the round
procedure's ``close_by_shaker``). Only the final, flat throw of three faces
1–6 is a ``dice.result``; everything else goes on the record as what it was
(a re-shake, a rejected throw, a pause) with the rule that says so.
"""

from __future__ import annotations

from daemon.games.sicbo import rules as sicbo
from daemon.games.sicbo.state import (
    IN_ROUND,
    R_CLOSE,
    R_EXPOSED,
    R_FAULT,
    R_FAULT_PAUSE,
    R_FAULT_VOID,
    R_INVALID,
    R_NO_ROUND,
    R_RESHAKE,
    R_RESHAKES,
    THROWING,
    DiceState,
    SicBoRules,
)
from daemon.procedures.paytable import in_force
from daemon.procedures.round import RoundGame
from daemon.table import (
    R_NOISE,
    Decision,
    TableState,
    device_fault,
    line_noise_alarm,
    raise_alarm,
)
from drivers.dice_readings import DiceNotFlat, ShakerFault


class SicBoShaker(RoundGame):
    """The shaker's readings in the round, each with its procedure."""

    rules: SicBoRules

    def _shaking(self, t: TableState, g: DiceState, d: Decision, dev: str) -> None:
        if g.phase == "betting":
            g = self.close_by_shaker(d, g, dev, R_CLOSE)
        if g.phase == "closed":
            d.add("dice.shaking", round=g.round, shake=g.shakes + 1, device=dev)
        # already shaking (a repeat), paused (a supervisor decides) or no round: nothing to say

    def _not_flat(self, t: TableState, g: DiceState, d: Decision, dev: str, r: DiceNotFlat) -> None:
        if g.phase == "betting":
            g = self.close_by_shaker(d, g, dev, R_CLOSE)
        if g.phase not in THROWING:
            return
        if g.reshakes >= self.rules.max_reshakes:
            aid = raise_alarm(
                t,
                d,
                "too-many-reshakes",
                f"round {g.round}: the dice are not flat ({r.reason}) after {g.reshakes} re-shake(s)",
                rule=R_RESHAKES,
                action="check the shaker and the dice; then a supervisor resumes the round "
                "(round.resume: shaken again, bets stand) or voids it (round.void: bets returned)",
                device=dev,
                round=g.round,
            )
            self._pause(d, g, "too-many-reshakes", aid, dev, R_RESHAKES)
            return
        self.reshake(d, g, dev, r, R_RESHAKE)

    @staticmethod
    def _pause(d: Decision, g: DiceState, reason: str, alarm: str, dev: str, rule: str) -> None:
        """The round waits for a supervisor (``round.resume`` or ``round.void``); bets stand."""
        d.add("round.paused", round=g.round, reason=reason, alarm=alarm, device=dev, rule=rule)

    def on_line_noise(self, t: TableState, d: Decision, dev: str) -> None:
        """The shaker's line turned noisy: a round being thrown waits for a supervisor."""
        self._noise_pause(d, t.game, dev)

    def _noise_pause(self, d: Decision, g: DiceState, dev: str) -> str | None:
        noise = line_noise_alarm(d.state(), dev)
        if noise is None or g.phase not in THROWING:
            return None
        self._pause(d, g, "line-noise", noise, dev, R_NOISE)
        return noise

    def _result(self, t: TableState, g: DiceState, d: Decision, dev: str, faces: list[int]) -> None:
        why = sicbo.problem(faces)
        noise = self._noise_pause(d, g, dev)
        if noise is not None:
            # the faces are on the record, not a result: the supervisor re-shakes or voids
            detail = "the shaker's line is noisy: the faces may be noise"
            self.dice_rejected(d, g.round, dev, faces, "line-noise", detail, noise, R_NOISE)
            return
        if g.phase in THROWING and why is None:
            d.add(
                "dice.result",
                round=g.round,
                device=dev,
                shakes=g.shakes,
                reshakes=g.reshakes,
                **sicbo.result(faces),
                paytable=in_force(self.name, self.rules),
            )
            return
        if g.phase in THROWING:
            assert why is not None
            aid = raise_alarm(
                t,
                d,
                "dice-result-invalid",
                f"{dev} claimed the faces {faces}: {why}",
                rule=R_INVALID,
                action="the dice are shaken again and the round goes on (seed 002: bets stand); "
                "if it repeats, check the shaker's recognition, or void the round",
                device=dev,
                round=g.round,
                faces=faces,
            )
            self.dice_rejected(d, g.round, dev, faces, "invalid", why, aid, R_INVALID)
        elif g.phase == "betting":
            detail = "the dice were thrown while betting was open" + (f"; {why}" if why else "")
            aid = raise_alarm(
                t,
                d,
                "dice-before-betting-closed",
                f"{dev} reported the faces {faces} while betting was open for round {g.round}",
                rule=R_EXPOSED,
                action="the round is void and its bets returned; check why the shaker ran "
                "before no more bets, then clear this alarm",
                device=dev,
                round=g.round,
                faces=faces,
            )
            self.dice_rejected(d, g.round, dev, faces, "betting-open", detail, aid, R_EXPOSED)
            self.void_round(
                d, g, reason="result-during-betting", by="table", rule=R_EXPOSED, keep=aid
            )
        elif g.phase == "paused":
            aid = raise_alarm(
                t,
                d,
                "dice-result-while-paused",
                f"{dev} reported the faces {faces} while round {g.round} is paused",
                rule=R_FAULT_PAUSE,
                action="not a result; resume or void the paused round",
                severity="warning",
                device=dev,
                round=g.round,
                faces=faces,
            )
            self.dice_rejected(d, g.round, dev, faces, "paused", why or "", aid, R_FAULT_PAUSE)
        else:
            aid = raise_alarm(
                t,
                d,
                "dice-outside-round",
                f"{dev} reported the faces {faces} with no round in play",
                rule=R_NO_ROUND,
                action="not a result; check who shook the dice",
                severity="warning",
                device=dev,
                round=None,
                faces=faces,
            )
            self.dice_rejected(d, None, dev, faces, "no-round", why or "", aid, R_NO_ROUND)

    def _fault(self, t: TableState, g: DiceState, d: Decision, dev: str, r: ShakerFault) -> None:
        alarm = device_fault(
            t,
            d,
            dev,
            r.code,
            r.meaning,
            rule=R_FAULT,
            action="run the shaker's self-test; a technician repairs it and clears this alarm",
            round=g.round if g.phase in IN_ROUND else None,
        )
        throwing = g.phase in THROWING
        if not throwing:
            return
        if self.rules.shaker_fault == "void":
            self.void_round(d, g, reason="shaker-fault", by="table", rule=R_FAULT_VOID, keep=alarm)
        else:
            self._pause(d, g, "shaker-fault", alarm, dev, R_FAULT_PAUSE)
