"""Mahjong Pai Gow's house rules, its state and the texts of its rules (each naming its source).

Pure data. The round's common part (betting, voids, the counters) is the
round procedure's (:mod:`daemon.procedures.round`); the state keeps its own
class, the shape its snapshots have.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from daemon.games.paigow import rules
from daemon.procedures.round import RoundRules

Phase = Literal["settling", "betting", "closed", "dealing", "paused"]
IN_ROUND: tuple[Phase, ...] = ("betting", "closed", "dealing", "paused")

R_CLOSE = (
    "house procedure: betting closes before the dice are thrown "
    "(as seed 003 §2.1.6: no more bets before the game is in motion)"
)
R_DICE = (
    "seed 002, 麻雀排九: three dice are thrown; their total, counted around the table from "
    "the banker as 1, decides who receives tiles first"
)
R_DICE_INVALID = "a throw that is not exactly three dice 1–6 is rejected, never used"
R_DICE_EARLY = (
    "house procedure: the dice are thrown after no more bets; a throw while betting is open "
    "does not count and the dice are thrown again once betting closes"
)
R_DICE_AGAIN = "the round's dice are already thrown: a second throw does not count"
R_RESHAKE = (
    "seed 002, 骰寳: stacked or leaning dice are thrown again (荷官随即再拍打三次), "
    "applied to the Pai Gow dice"
)
R_FAULT = (
    "ours: a shaker fault latches until a technician clears it; meanwhile the dealer throws "
    "the dice by hand and enters them (`tablectl dice A B C`)"
)
R_UNREADABLE = (
    "house procedure: a tile is never guessed; a supervisor enters it (as an unreadable card)"
)
R_FOREIGN = (
    "house procedure: the game plays only its set (seed 002: 共有20张牌; house rule `tiles`); "
    "a tile from outside it is a misread or a wrong set"
)
R_COUNT = (
    "house procedure: the set holds each tile only so often (house rule `tiles`); one more in "
    "a round is a misread or a wrong set"
)
R_EXPOSED = (
    "ours, after seed 004 §4 and seed 002 (百家乐, VIP: a card shown during betting voids it): "
    "a tile seen while betting is open voids the round; the tiles are shuffled again"
)
R_NO_DICE = (
    "seed 002, 麻雀排九: the dice decide who receives the first tile, so a tile before the "
    "dice is a misdeal (ours: the round is void and the tiles are shuffled again)"
)
R_EXTRA = (
    "seed 002, 百家乐 (a card drawn when none was needed: 所得出之结果将不受影响), applied to "
    "tiles: a 13th tile is set aside and the result stands"
)
R_ENTERED = "house procedure: the supervisor's entry is the tile; the round goes on in deal order"
R_OUTSIDE = "a tile belongs to a round: none is in play"
R_BANKER = (
    "seed 002, 麻雀排九: 闲家两张牌跟庄家两张牌一样, 牌例庄胜 (identical hands: the banker wins)"
)

PAUSE_ACTION = (
    "if the reader misread, a supervisor enters the tile it is (`tablectl tile 9p`); "
    "if the tile really is {what}, void the round (`tablectl void round --reason …`), "
    "check the set and shuffle again"
)


class PaiGowRules(RoundRules, forbid_unknown_fields=True, frozen=True):
    """House rules of a Mahjong Pai Gow table; ``docs/procedures.md`` gives each one's source.

    With the round's (:class:`~daemon.procedures.round.RoundRules`):
    ``system_failure_voids_round``, ``betting_seconds``, ``settle_seconds``."""

    #: the set, tile → copies (seed 002: 20 tiles, read as two of each dot tile and two white).
    tiles: dict[str, int] = msgspec.field(default_factory=lambda: dict(rules.DEFAULT_SET))
    #: ``stacks``: each position takes its two tiles in turn (一墩); ``rotation``: one each, twice.
    deal: rules.DealMode = "stacks"
    #: the 0-point hands the seed's table leaves out: ``equal`` or ordered ``by-high-tile``.
    zero_hands: rules.ZeroHands = "equal"

    def __post_init__(self) -> None:
        why = rules.tile_set_problem(self.tiles)
        if why is not None:
            raise ValueError(f"tiles: {why}")


class Held(msgspec.Struct, frozen=True):
    """A tile out of the box that is not placed yet: read (``tile``) or not (``code``)."""

    tile: str | None
    code: str
    device: str


class PaiGowState(msgspec.Struct, frozen=True):
    phase: Phase = "settling"
    round: int = 0  # the round in play, or the last one; never resets
    dice: tuple[int, ...] = ()
    order: tuple[str, ...] = ()  # the position of each of the 12 tiles, in deal order
    tiles: tuple[str, ...] = ()  # the tiles placed so far, in deal order
    held: tuple[Held, ...] = ()  # tiles waiting while the round is paused, in order
    paused: str | None = None
    pause_alarm: str | None = None
    alarms: tuple[str, ...] = ()  # alarms about this round: a void settles them
    last: str | None = None  # how the last round ended: "result" or "void"
    reshakes: int = 0  # dice thrown again in this round
    results: int = 0
    voids: int = 0
