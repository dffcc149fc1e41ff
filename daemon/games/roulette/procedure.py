"""The house's wheel procedure, checked on every spin the wheel starts: alarms, never voids.

A house may require its dealers to alternate the rotor's direction between spins, to
keep the rotor's speed inside a range, to keep the ball's revolutions under a ceiling,
and to keep under a pace of spins per hour (common surveillance rules against a dealer
aiming the ball or a wheel that is off; none of them is in the seeds, so each is a
house option, off by default: ``[game]`` in ``docs/config.md``, ``docs/procedures.md``,
Wheel procedure checks). An out-of-range spin is still a valid spin (seed 003 IV
§3.1.1 only asks the ball against the rotor and three revolutions), so each check
raises a warning alarm with its figure (``figure``, ``limit``) for surveillance,
one per cause while it is active (repeats counted), and the game goes on.

Judged from what the wheel reports in the frame that starts the spin (state 3: the
SlingShot 2's rotor direction and speed; the ball's revolutions only a Mercury 360 at
the extended level reports, in state 5). The direction and the pace compare a spin
with the wheel's previous game only (its spin counter one on, the same link and
daemon run): across a restart, a lost link or a game the table did not see, nothing
is judged.
"""

from __future__ import annotations

from typing import Any

from daemon.games.roulette.state import RouletteRules, RouletteState
from daemon.table import Decision, TableState, raise_or_repeat

R_HOUSE = "house procedure (docs/procedures.md, Wheel procedure checks): {what}"
ACTION = "surveillance reviews the spin; the result stands. Clear with `tablectl alarm clear ID`"


def consecutive(prev: int | None, now: int | None) -> bool:
    """The wheel's spin counter one on: the SS2's 256 → 1 and the Mercury's 255 → 0 included."""
    return prev is not None and now is not None and (now - prev) % 256 == 1


def check_start(
    rules: RouletteRules,
    t: TableState,
    d: Decision,
    g: RouletteState,
    r: Any,
    mono: float | None,
    device: str,
    frames: list[str],
) -> None:
    """The checks of a spin starting (``g`` the state before its ``spin.started``)."""
    after = consecutive(g.started_wheel_spin, r.spin)
    if rules.alternate_rotor and after and g.rotor_direction == r.direction:
        _alarm(
            t, d, "rotor-not-alternated", device, frames,
            f"wheel spin {r.spin}: the rotor turns {r.direction} again, as in spin "
            f"{g.started_wheel_spin}; the house alternates it",
            "the rotor's direction alternates between spins",
        )  # fmt: skip
    low, high = rules.rotor_rpm_min, rules.rotor_rpm_max
    if (low is not None and r.rpm < low) or (high is not None and r.rpm > high):
        limit = low if low is not None and r.rpm < low else high
        _alarm(
            t, d, "rotor-speed", device, frames,
            f"wheel spin {r.spin}: the rotor at {r.rpm:g} rpm, outside the house's "
            f"{_range(low, high)} rpm",
            "the rotor's speed inside the house's range",
            figure=float(r.rpm), limit=limit,
        )  # fmt: skip
    # a ceiling only: the real studio wheel idles between games for minutes (a break, a
    # closed table), so a slow pace is no spin's fault (cap: 713 s between two games)
    fast = rules.max_spins_per_hour
    if (
        fast is not None
        and after
        and mono is not None
        and g.started_mono is not None
        and mono > g.started_mono
        and (pace := 3600.0 / (mono - g.started_mono)) > fast
    ):
        _alarm(
            t, d, "spin-pace", device, frames,
            f"wheel spin {r.spin} started {mono - g.started_mono:.1f} s after the last: "
            f"{pace:.1f} spins an hour, more than the house's {fast:g}",
            "at most the house's spins per hour",
            figure=round(pace, 1), limit=fast,
        )  # fmt: skip


def check_revolutions(
    rules: RouletteRules,
    t: TableState,
    d: Decision,
    revs: int | None,
    device: str,
    frames: list[str],
) -> None:
    """More revolutions than the house's ceiling (a wheel that reports them: Mercury extended)."""
    top = rules.max_ball_revolutions
    if top is not None and revs is not None and revs > top:
        _alarm(
            t, d, "ball-revolutions-high", device, frames,
            f"the ball made {revs} revolutions, more than the house's {top}",
            "ball revolutions inside the house's range",
            figure=float(revs), limit=float(top),
        )  # fmt: skip


def _alarm(
    t: TableState,
    d: Decision,
    kind: str,
    device: str,
    frames: list[str],
    message: str,
    what: str,
    **figures: Any,
) -> None:
    raise_or_repeat(
        t,
        d,
        kind,
        message,
        device=device,
        rule=R_HOUSE.format(what=what),
        action=ACTION,
        severity="warning",
        frames=frames,
        **figures,
    )


def _range(low: float | None, high: float | None) -> str:
    if low is None:
        return f"at most {high:g}"
    if high is None:
        return f"at least {low:g}"
    return f"{low:g}–{high:g}"
