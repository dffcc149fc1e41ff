"""A simulated tile reader and the dealer dealing past it, speaking tile-line on a pty.

It follows the table the way a dealer does: once the round's dice are in
(``round.dice``) it deals twelve tiles from a seeded shuffle of the set, one
every ``pace`` seconds, each after the table placed the one before; it stops
on a pause, a result or a void and goes on when the table resumes. It has no
copy of the game's rules. Dealer and reader errors are injected on request
(:meth:`inject`) so tests and demos show every procedure through a real pty.
"""

from __future__ import annotations

import random
from typing import Any, Final

from drivers.sim.dealer import DealerOptions, PacedDealer
from drivers.sim.options import Count

ERRORS: Final = (
    "unreadable",  # the next tile is sent as the read-error code
    "foreign",  # the next tile is read as a tile from another suit (5m)
    "extra-tile",  # a 13th tile after the result (seed 002 extra card, for tiles)
    "early-tile",  # a tile as soon as betting opens
    "garbage",  # line noise before the next tile
    "repeat",  # the next tile is sent twice
)
#: what ``error_every`` picks from: none of them needs a supervisor.
EVERYDAY: Final = ("extra-tile", "garbage", "repeat")
#: seed 002: 20 tiles, two of each dot tile and two white (the game's default set).
DEFAULT_SET: Final = {**{f"{n}p": 2 for n in range(1, 10)}, "wd": 2}
ROUND_TILES: Final = 12


class Options(DealerOptions):
    """``[devices.sim]`` of a simulated tile reader: the dealer's (``seed``, ``pace`` between
    two tiles, ``errors`` of :data:`ERRORS`, ``error_every`` N rounds) and the set."""

    FAULTS = ERRORS
    fault_name = "tile error"

    tiles: dict[str, Count] | None = None  # the set, tile → copies (default: DEFAULT_SET)


class TileSimulator(PacedDealer):
    """The dealer dealing a seeded shuffle of the set past the tile reader."""

    Options = Options

    def __init__(
        self,
        *,
        tiles: dict[str, int] | None = None,
        codes: dict[str, str] | None = None,
        **dealer: Any,
    ) -> None:
        """``tiles``: the set (default :data:`DEFAULT_SET`); ``codes``: the reader's own code
        for a tile; ``dealer``: :class:`PacedDealer`'s (seed, pace, read_error_code, errors,
        error_every)."""
        super().__init__(**dealer)
        self.set = dict(DEFAULT_SET if tiles is None else tiles)
        self.codes = {v: k for k, v in (codes or {}).items()}  # tile → the device's own code
        self.wall: list[str] = []  # the shuffled tiles still to deal, next last
        self.history: list[str] = []  # every tile dealt, as it really is
        self._rounds = 0
        self._dealing = False

    @classmethod
    def from_options(cls, reader: Any, o: Options) -> TileSimulator:
        return cls(
            tiles=dict(o.tiles) if o.tiles else None,
            codes=dict(reader.codes),
            **cls.dealer_args(o, reader.read_error_code),
        )

    # -- the pty ---------------------------------------------------------------------------

    def draw(self) -> None:
        """Deal the next tile past the reader (a capture generator calls it on its own clock)."""
        if not self.wall:
            self._shuffle(self._rounds + 1)
        t = self.wall.pop()
        self.history.append(t)
        self._send(self.codes.get(t, t), "foreign", "5m")

    def _shuffle(self, round_: int) -> None:
        """seed 002: the tiles are shuffled before every round (需将20张牌洗干净)."""
        tiles = [t for t, n in sorted(self.set.items()) for _ in range(n)]
        random.Random(self.seed * 1000 + round_).shuffle(tiles)
        self.wall = tiles

    # -- following the table -----------------------------------------------------------------

    def _on(self, t: str, data: dict[str, Any]) -> None:
        if t == "betting.opened":
            self._rounds = int(data["round"])
            self._shuffle(self._rounds)
            if self.error_every and self._rounds % self.error_every == 0:
                self.pending.append(self.rng.choice(EVERYDAY))
            if self.pending.take("early-tile"):
                self._deal()
        elif t == "round.dice":
            self._dealing = True
            self._deal()
        elif t in ("tile.dealt", "round.resumed") and self._dealing and self._want == 0:
            self._deal()
        elif t == "round.paused":
            self._want = 0
        elif t in ("round.result", "round.void"):
            self._dealing = False
            self._want = 0
            if t == "round.result" and self.pending.take("extra-tile"):
                self._deal()

    def resume(self, table: dict[str, Any]) -> None:
        """Carry on after a daemon restart from where the journal says the table is."""
        if table.get("round"):
            self._rounds = int(table["round"])
            self._shuffle(self._rounds)
            del self.wall[len(self.wall) - int(table.get("tiles_dealt", 0)) :]
        if table.get("phase") == "dealing":
            self._dealing = True
            self._deal()


def simulate(driver_options: Any, sim: Options) -> TileSimulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return TileSimulator.from_options(driver_options, sim)
