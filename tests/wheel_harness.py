"""A Cammegh wheel's traffic in the words of the game, for the roulette procedure tests.

A test says what the wheel does — ``h.place_bets(4)``, ``h.ball_launched(4)``,
``h.no_more_bets(6)``, ``h.number_line(17)``, ``h.winning_number(2, shows=17)`` — and the
harness writes the frames the wheel would send for it (``*X;<state>;<counter>;<number>;
<flags>;<rpm>;<rotor>``, one every 500 ms of an injected clock, or ``after=`` seconds for a
gap) and feeds them through the real ``SS2Protocol`` / ``M360Protocol`` and the real
table. The state numbers are the vendor's (``drivers/cammegh/``, ``SS2_STATES``); the
Mercury 360 numbers its states the same way (3 is its "finish betting").
"""

from __future__ import annotations

from typing import Any

import msgspec
from table_harness import Evs, TableHarness, of

from daemon.games.roulette.table import RouletteGame, RouletteRules, RouletteState
from daemon.table import Command, DeviceReading, Table
from drivers.cammegh import M360Protocol, SS2Protocol
from drivers.readings import DeviceReply, GameEvent, WheelFault, WheelStatus, WinningNumber

# the wheel's states, as its status frame numbers them [dev]
BEFORE_GAME, PLACE_BETS, BALL_IN_RIM, NO_MORE_BETS, WINNING_NUMBER, TABLE_CLOSED = 1, 2, 3, 4, 5, 6
BALL_NOT_DETECTED = 7  # SS2 firmware V2.52+

# SS2 status flags [dev]
BALL_MISSING = 1  # ball removed / not detected
SAME_DIRECTION = 2  # the ball turning the same way as the rotor
COMPONENT_FAULT = 4  # sensor stuck, motor or encoder fault
LAUNCH_FAILED = 8  # ball launch failed, retrying
# Mercury 360 status flags [int]
ROTOR_SPEED = 1  # rotor speed out of limits
WHEEL_VOID = 8  # ball left the wheel, launch too slow or rotor tamper


def pocket(number: int | str | None) -> str:
    """The two characters a frame gives a number: `` 8``, ``17``, ``00``; blank for none."""
    if number is None:
        return "  "
    return number if isinstance(number, str) else f"{number:>2}"


class WheelHarness(TableHarness):
    """One roulette table on one wheel (``wheel``), moved frame by frame."""

    device = "wheel"

    def __init__(self, level: str | None = None, **rules: Any) -> None:
        if level is not None:
            rules.setdefault("wheel_model", "m360")
        self.rules = msgspec.convert(rules, RouletteRules)
        super().__init__(RouletteGame(self.rules), ["wheel"])
        dz = self.rules.double_zero
        self.proto = SS2Protocol(dz) if level is None else M360Protocol(level, dz)  # type: ignore[arg-type]
        self.t = 100.0
        self.counter = 1  # the wheel's game counter
        self.field = "  "  # the status frame's last-number field

    # -- what the wheel sends ------------------------------------------------------------

    def says(self, line: str, after: float = 0.5) -> Evs:
        """One line from the wheel, ``after`` seconds after the last."""
        self.t += after
        out: Evs = []
        for r in self.proto.feed(line.encode("ascii") + b"\r\n", self.t):
            assert isinstance(
                r, WheelStatus | WinningNumber | GameEvent | WheelFault | DeviceReply
            ), r
            out += self.run(DeviceReading("wheel", r, self.t))
        return out

    def status(
        self,
        state: int,
        n: int = 1,
        *,
        flags: int = 0,
        counter: int | None = None,
        after: float = 0.5,
        rpm: int = 170,
        rotor: int = 1,
        ext: str = "",
    ) -> Evs:
        """``n`` status frames in ``state``, each ``after`` seconds after the last."""
        out: Evs = []
        c = self.counter if counter is None else counter
        for _ in range(n):
            line = f"*X;{state};{c:03d};{self.field};{flags:X};{rpm:03d};{rotor}{ext}"
            out += self.says(line, after)
        return out

    def before_game(self, n: int = 1, **kw: Any) -> Evs:
        return self.status(BEFORE_GAME, n, **kw)

    def place_bets(self, n: int = 1, **kw: Any) -> Evs:
        return self.status(PLACE_BETS, n, **kw)

    def ball_launched(self, n: int = 1, **kw: Any) -> Evs:
        """The ball in the rim (SS2 state 3; the Mercury's "finish betting")."""
        return self.status(BALL_IN_RIM, n, **kw)

    def no_more_bets(self, n: int = 1, **kw: Any) -> Evs:
        return self.status(NO_MORE_BETS, n, **kw)

    def winning_number(self, n: int = 1, *, shows: int | str | None = None, **kw: Any) -> Evs:
        """State 5; ``shows``: the number field reads it from now on (else it stays)."""
        if shows is not None:
            self.shows(shows)
        return self.status(WINNING_NUMBER, n, **kw)

    def table_closed(self, n: int = 1, **kw: Any) -> Evs:
        """State 6: closed or idle (also how a wheel powers on)."""
        return self.status(TABLE_CLOSED, n, **kw)

    def ball_not_detected(self, n: int = 1, **kw: Any) -> Evs:
        """SS2 state 7: the ball not detected in the track."""
        return self.status(BALL_NOT_DETECTED, n, **kw)

    def number_line(self, number: int | str, after: float = 0.5) -> Evs:
        """The bare winning-number line the SS2 sends beside its status frames."""
        return self.says(pocket(number), after)

    def shows(self, number: int | str | None) -> None:
        """The status frames' last-number field reads ``number`` from the next frame on."""
        self.field = pocket(number)

    def counter_moves(self, by: int = 1) -> None:
        """The wheel counts a game (its counter wraps at 256; the test says where)."""
        self.counter += by

    # -- whole games -----------------------------------------------------------------------

    def power_on(self) -> None:
        """The wheel starts: closed, then before the game."""
        self.table_closed(2)
        self.before_game(2)

    def to_no_more_bets(self) -> Evs:
        """Bets, the ball launched, no more bets: a spin in play, its number not yet come."""
        return self.place_bets(4) + self.ball_launched(4) + self.no_more_bets(6)

    def spin(self, number: int | None, *, line: bool = True, next_game: bool = True) -> Evs:
        """One normal game: bets, ball launched, no more bets, the number line, the winning
        number (``None``: the wheel found none), and the counter moves on (``next_game``)."""
        out = self.to_no_more_bets()
        if number is not None and line:
            out += self.number_line(number, after=0.3)
        self.shows(number)
        out += self.winning_number(3)
        if next_game:
            self.counter_moves()
        return out

    # -- the table ---------------------------------------------------------------------------

    def cmd(self, name: str, role: str = "supervisor", source: str = "control", **args: Any) -> Evs:
        return self.run(Command(name, args, "pit", role, source=source, mono=self.t))

    def restarted(self) -> None:
        """A new process on the same state: the game's in-memory view of the wheel is gone."""
        self.table = Table(RouletteGame(self.rules), ["wheel"])

    @property
    def g(self) -> RouletteState:
        return self.state.game  # type: ignore[no-any-return]


# -- what the table published ----------------------------------------------------------------


def results(evs: Evs) -> list[dict[str, Any]]:
    return of(evs, "spin.result")


def numbers(evs: Evs) -> list[int]:
    """The winning numbers the table settled."""
    return [r["number"] for r in results(evs)]


def invalid_spins(evs: Evs) -> list[dict[str, Any]]:
    return of(evs, "spin.void")


def invalid_spin(evs: Evs) -> str | None:
    """Why the (first) spin in ``evs`` was declared invalid, or None when none was."""
    voids = invalid_spins(evs)
    return voids[0]["reason"] if voids else None


def alarms(evs: Evs, kind: str) -> list[dict[str, Any]]:
    return [d for d in of(evs, "alarm.raised") if d["kind"] == kind]
