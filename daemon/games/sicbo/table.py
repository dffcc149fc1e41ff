"""The Sic Bo round: betting, the shake, re-shakes, the result and voids. Pure decide/apply.

The shaker (``drivers/dice_ref.py`` or any driver speaking
:mod:`drivers.dice_readings`) reports shaking, dice not flat, a result and
faults; people and the croupier open and close betting. The rules of the
throw are :mod:`daemon.games.sicbo.rules`. Every rule names its source (seed 002,
骰寳; ``ours`` where the seeds are silent); ``docs/procedures.md``
lists them with their house-rule keys.

Phases::

    settling ─open─▶ betting ─close / shaking─▶ closed ─shaking─▶ shaking ─result─▶ settling
                                                   ▲   ◀─not flat (re-shake)──┘  │
                                                   └──────── resume ◀── paused ◀─┘ (fault, too many re-shakes)
    (a void from any phase of a round goes back to settling)

The round number counts every round the table ever opened and never resets.
A re-shake keeps the round and its bets (seed 002); only the final throw is a
``dice.result``. A claimed throw that is not three faces 1–6 is a
``dice.rejected`` with an alarm naming the faces, never a result.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec

from daemon.games.describe import Describer
from daemon.games.sicbo import rules as sicbo
from daemon.games.sicbo.describe import SicBoDescriber
from daemon.table import (
    R_NOISE,
    REASON,
    Command,
    CommandSpec,
    Decision,
    DeviceReading,
    Input,
    TableState,
    line_noise_alarm,
    raise_alarm,
    spec,
)
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault

Phase = Literal["settling", "betting", "closed", "shaking", "paused"]
IN_ROUND: tuple[Phase, ...] = ("betting", "closed", "shaking", "paused")
THROWING: tuple[Phase, ...] = ("closed", "shaking")

R_CLOSE = (
    "house procedure: betting closes before the dice are shaken "
    "(as seed 003 §2.1.6: no more bets before the game is in motion)"
)
R_RESHAKE = (
    "seed 002, 骰寳: stacked or leaning dice are re-shaken (有骰子相叠或斜靠不平时, 荷官随即再拍打三次); "
    "all bets stay valid and cannot be withdrawn"
)
R_RESHAKES = "ours: seed 002 sets no limit on re-shakes; past max_reshakes a supervisor decides"
R_INVALID = (
    "a result that is not exactly three dice 1–6 is rejected, never published "
    "(docs/protocols/sources.md)"
)
R_EXPOSED = "ours, after seed 004 §4: a throw seen while betting is open voids the round"
R_FAULT = "ours: a shaker fault latches until a technician clears it"
R_FAULT_PAUSE = "house rule shaker_fault = pause: the round waits, bets stand, a supervisor decides"
R_FAULT_VOID = (
    "house rule shaker_fault = void: seed 003 §2.1.8 (a system failure voids the hand in play)"
)
R_SYSTEM = "seed 003 §2.1.8: a system failure voids the hand in play"
R_VOID = "house procedure: a supervisor voids the round; bets are returned"
R_NO_ROUND = "a throw belongs to a round: none is in play"


class SicBoRules(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """House rules of a Sic Bo table; ``docs/procedures.md`` gives each one's source."""

    #: re-shakes in one round before a supervisor must decide (ours; seed 002 sets no limit).
    max_reshakes: Annotated[int, msgspec.Meta(ge=0, le=20)] = 3
    #: a shaker fault during the throw: ``pause`` the round (bets stand) or ``void`` it.
    shaker_fault: Literal["pause", "void"] = "pause"
    #: seed 003 §2.1.8: a system failure (daemon restart mid-throw) voids the round in play.
    system_failure_voids_round: bool = False
    #: the croupier opens betting ``settle_seconds`` after a result and closes it after
    #: ``betting_seconds`` (None: people or backends open and close betting).
    betting_seconds: Annotated[float, msgspec.Meta(gt=0)] | None = None
    settle_seconds: Annotated[float, msgspec.Meta(ge=0)] = 3.0


class DiceState(msgspec.Struct, frozen=True):
    phase: Phase = "settling"
    round: int = 0  # the round in play, or the last one; never resets
    shakes: int = 0  # shaking reports in this round
    reshakes: int = 0  # re-shakes in this round (seed 002)
    paused: str | None = None  # why the round waits for a supervisor
    pause_alarm: str | None = None
    alarms: tuple[str, ...] = ()  # alarms about this round: a void settles them
    results: int = 0
    voids: int = 0


class SicBoGame:
    """A Sic Bo table with an automatic shaker (seed 002, 骰寳)."""

    name: ClassVar[str] = "sicbo"
    Rules: ClassVar[type[SicBoRules]] = SicBoRules
    State: ClassVar[type[DiceState]] = DiceState
    STATE_VERSION: ClassVar[int] = 1
    describe: ClassVar[Describer] = SicBoDescriber()

    commands: ClassVar[dict[str, CommandSpec]] = {
        "betting.open": spec("open betting for the next round", "dealer", "supervisor"),
        "betting.close": spec("no more bets: the dice may be shaken", "dealer", "supervisor"),
        "round.void": spec(
            "void the round in play, bets returned",
            "supervisor",
            words=("void", "round"),
            args=(REASON,),
        ),
        "round.resume": spec("go on with a paused round: shake again, bets stand", "supervisor"),
    }

    def __init__(self, rules: SicBoRules) -> None:
        self.rules = rules

    def initial(self) -> DiceState:
        return DiceState()

    def summary(self, g: DiceState) -> dict[str, Any]:
        """The game state as a technician reads it (``tablectl status``; the simulator's resume)."""
        return {
            "phase": g.phase,
            "text": self.phase_text(g),
            "round": g.round,
            "shakes": g.shakes,
            "reshakes": g.reshakes,
            "paused": g.paused,
            "results": g.results,
            "voids": g.voids,
        }

    @staticmethod
    def phase_text(g: DiceState) -> str:
        return {
            "settling": "between rounds",
            "betting": f"taking bets for round {g.round}",
            "closed": f"round {g.round}: no more bets, waiting for the shake",
            "shaking": f"round {g.round}: the dice are shaking",
            "paused": f"round {g.round} paused ({g.paused}) until a supervisor resumes or voids it",
        }[g.phase]

    # ====================================================================== decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        g: DiceState = t.game
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, DiceShaking):
                self._shaking(t, g, d, dev)
            elif isinstance(r, DiceResult):
                self._result(t, g, d, dev, list(r.faces))
            elif isinstance(r, DiceNotFlat):
                self._not_flat(t, g, d, dev, r)
            elif isinstance(r, ShakerFault):
                self._fault(t, g, d, dev, r)
        elif isinstance(inp, Command):
            self._command(g, inp, d)

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 §2.1.8: when the house says so, a system failure voids the round in play."""
        g: DiceState = t.game
        if self.rules.system_failure_voids_round and g.phase in ("closed", "shaking", "paused"):
            self._void(d, g, reason="system-failure", by="table", rule=R_SYSTEM)

    # -- commands ----------------------------------------------------------------------

    def _command(self, g: DiceState, c: Command, d: Decision) -> None:
        n, by = c.name, c.actor
        if n == "betting.open":
            if g.phase != "settling":
                d.refused = f"cannot open betting: the table is {self.phase_text(g)}"
                return
            # closes_in: the croupier closes betting this long after this event's time
            d.add("betting.opened", round=g.round + 1, by=by, closes_in=self.rules.betting_seconds)
        elif n == "betting.close":
            if g.phase != "betting":
                d.refused = f"betting is not open (the table is {self.phase_text(g)})"
                return
            d.add("betting.closed", round=g.round, by=by, source=c.source)
        elif n == "round.void":
            if g.phase not in IN_ROUND:
                d.refused = f"no round is in play to void (the table is {self.phase_text(g)})"
                return
            self._void(d, g, reason=str(c.args.get("reason") or "supervisor"), by=by, rule=R_VOID)
        elif n == "round.resume":
            if g.phase != "paused":
                d.refused = f"no round is paused (the table is {self.phase_text(g)})"
                return
            d.add("round.resumed", round=g.round, by=by, alarm=g.pause_alarm, rule=R_RESHAKE)
            if g.pause_alarm is not None and g.pause_alarm in d.state().alarms:
                d.add("alarm.cleared", id=g.pause_alarm, by=by, reason="round resumed")

    # -- the shaker --------------------------------------------------------------------

    def _close_by_shaker(self, d: Decision, g: DiceState, dev: str) -> DiceState:
        """The dice move while betting is open: no more bets, now."""
        d.add("betting.closed", round=g.round, by=dev, source="shaker", rule=R_CLOSE)
        now: DiceState = d.state().game
        return now

    def _shaking(self, t: TableState, g: DiceState, d: Decision, dev: str) -> None:
        if g.phase == "betting":
            g = self._close_by_shaker(d, g, dev)
        if g.phase == "closed":
            d.add("dice.shaking", round=g.round, shake=g.shakes + 1, device=dev)
        # already shaking (a repeat), paused (a supervisor decides) or no round: nothing to say

    def _not_flat(self, t: TableState, g: DiceState, d: Decision, dev: str, r: DiceNotFlat) -> None:
        if g.phase == "betting":
            g = self._close_by_shaker(d, g, dev)
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
            d.add(
                "round.paused",
                round=g.round,
                reason="too-many-reshakes",
                alarm=aid,
                device=dev,
                rule=R_RESHAKES,
            )
            return
        d.add(
            "dice.reshake",
            round=g.round,
            reshake=g.reshakes + 1,
            reason=r.reason,
            code=r.code,
            device=dev,
            rule=R_RESHAKE,
        )

    def on_line_noise(self, t: TableState, d: Decision, dev: str) -> None:
        """The shaker's line turned noisy: a round being thrown waits for a supervisor."""
        self._noise_pause(d, t.game, dev)

    def _noise_pause(self, d: Decision, g: DiceState, dev: str) -> str | None:
        noise = line_noise_alarm(d.state(), dev)
        if noise is None or g.phase not in THROWING:
            return None
        d.add(
            "round.paused",
            round=g.round,
            reason="line-noise",
            alarm=noise,
            device=dev,
            rule=R_NOISE,
        )
        return noise

    def _result(self, t: TableState, g: DiceState, d: Decision, dev: str, faces: list[int]) -> None:
        why = sicbo.problem(faces)
        noise = self._noise_pause(d, g, dev)
        if noise is not None:
            # the faces are on the record, not a result: the supervisor re-shakes or voids
            detail = "the shaker's line is noisy: the faces may be noise"
            self._rejected(d, g.round, dev, faces, "line-noise", detail, noise, R_NOISE)
            return
        if g.phase in THROWING and why is None:
            d.add(
                "dice.result",
                round=g.round,
                device=dev,
                shakes=g.shakes,
                reshakes=g.reshakes,
                **sicbo.result(faces),
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
            self._rejected(d, g.round, dev, faces, "invalid", why, aid, R_INVALID)
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
            self._rejected(d, g.round, dev, faces, "betting-open", detail, aid, R_EXPOSED)
            self._void(d, g, reason="result-during-betting", by="table", rule=R_EXPOSED, keep=aid)
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
            self._rejected(d, g.round, dev, faces, "paused", why or "", aid, R_FAULT_PAUSE)
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
            self._rejected(d, None, dev, faces, "no-round", why or "", aid, R_NO_ROUND)

    @staticmethod
    def _rejected(
        d: Decision,
        round_: int | None,
        dev: str,
        faces: list[int],
        reason: str,
        detail: str,
        alarm: str,
        rule: str,
    ) -> None:
        d.add(
            "dice.rejected",
            round=round_,
            device=dev,
            faces=faces,
            reason=reason,
            detail=detail,
            alarm=alarm,
            rule=rule,
        )

    def _fault(self, t: TableState, g: DiceState, d: Decision, dev: str, r: ShakerFault) -> None:
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
            f"{dev}: {r.meaning} (code {r.code})",
            rule=R_FAULT,
            action="run the shaker's self-test; a technician repairs it and clears this alarm",
            device=dev,
            code=r.code,
        )
        throwing = g.phase in THROWING
        d.add(
            "device.fault",
            device=dev,
            code=r.code,
            meaning=r.meaning,
            alarm=alarm,
            round=g.round if g.phase in IN_ROUND else None,
        )
        if not throwing:
            return
        if self.rules.shaker_fault == "void":
            self._void(d, g, reason="shaker-fault", by="table", rule=R_FAULT_VOID, keep=alarm)
        else:
            d.add(
                "round.paused",
                round=g.round,
                reason="shaker-fault",
                alarm=alarm,
                device=dev,
                rule=R_FAULT_PAUSE,
            )

    def _void(
        self, d: Decision, g: DiceState, *, reason: str, by: str, rule: str, keep: str | None = None
    ) -> None:
        about: tuple[str, ...] = d.state().game.alarms
        d.add(
            "round.void",
            round=g.round,
            reason=reason,
            by=by,
            rule=rule,
            shakes=g.shakes,
            reshakes=g.reshakes,
        )
        # The void settles the alarms that were about this round (a bad claim, a pause),
        # except the one that says why the table voided it.
        active = d.state().alarms
        for a in about:
            if a != keep and a in active:
                d.add("alarm.cleared", id=a, by=by, reason="round voided")

    # ======================================================================= apply

    def apply(self, g: DiceState, type_: str, data: dict[str, Any]) -> DiceState:
        rep = msgspec.structs.replace
        if type_ == "betting.opened":
            return DiceState(round=data["round"], phase="betting", results=g.results, voids=g.voids)
        if type_ == "betting.closed":
            return rep(g, phase="closed")
        if type_ == "dice.shaking":
            return rep(g, phase="shaking", shakes=g.shakes + 1)
        if type_ == "dice.reshake":
            return rep(g, phase="closed", reshakes=g.reshakes + 1)
        if type_ == "dice.rejected" and data["reason"] == "invalid":
            return rep(g, phase="closed")
        if type_ == "dice.result":
            return rep(g, phase="settling", results=g.results + 1, alarms=())
        if type_ == "round.void":
            return rep(
                g, phase="settling", voids=g.voids + 1, paused=None, pause_alarm=None, alarms=()
            )
        if type_ == "round.paused":
            return rep(g, phase="paused", paused=data["reason"], pause_alarm=data["alarm"])
        if type_ == "round.resumed":
            return rep(g, phase="closed", paused=None, pause_alarm=None)
        if (
            type_ == "alarm.raised"
            and g.phase in IN_ROUND
            and data.get("round") is not None
            and data["round"] == g.round
        ):
            return rep(g, alarms=(*g.alarms, data["id"]))
        return g
