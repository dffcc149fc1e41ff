"""Sic Bo's house rules, its state and the texts of its rules (each naming its source).

Pure data. The round's common part (betting, voids, the counters) is the
round procedure's (:mod:`daemon.procedures.round`); the state keeps its own
class, the shape its snapshots have.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from daemon.procedures.round import RoundRules

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
R_NO_ROUND = "a throw belongs to a round: none is in play"


class SicBoRules(RoundRules, forbid_unknown_fields=True, frozen=True):
    """House rules of a Sic Bo table; ``docs/procedures.md`` gives each one's source.

    With the round's (:class:`~daemon.procedures.round.RoundRules`):
    ``system_failure_voids_round``, ``betting_seconds``, ``settle_seconds``."""

    #: re-shakes in one round before a supervisor must decide (ours; seed 002 sets no limit).
    max_reshakes: Annotated[int, msgspec.Meta(ge=0, le=20)] = 3
    #: a shaker fault during the throw: ``pause`` the round (bets stand) or ``void`` it.
    shaker_fault: Literal["pause", "void"] = "pause"


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
