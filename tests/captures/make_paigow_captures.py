"""Write the synthetic Mahjong Pai Gow captures in tests/captures/tile-line/.

The same method as ``make_shoe_captures.py`` (its :class:`Recorder` is reused):
the tile reader simulator deals seeded shuffles of the 20-tile set to the
real table offline, following the table's events; this script plays
croupier, dealer (the dice, thrown by hand and entered) and supervisor. Run
``python tests/captures/make_paigow_captures.py``, then
``pytest tests/captures/tile-line --regen-captures``.
"""

from __future__ import annotations

import random
from pathlib import Path

from make_shoe_captures import Recorder

from drivers.sim.tiles import TileSimulator

HERE = Path(__file__).parent / "tile-line"


class TileRecorder(Recorder):
    sim: TileSimulator  # type: ignore[assignment]

    def one(self, pace: float = 0.8) -> None:
        """Deal one tile now, whatever the table waits for."""
        self.t += pace
        self.sim._want = 0
        self.sim.draw()

    @property
    def phase(self) -> str:
        return str(self.replayer.state.game.phase)

    def open_close(self) -> None:
        self.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
        self.cmd("betting.close actor=croupier role=dealer source=timer", wait=8)

    def dice(self, faces: tuple[int, int, int]) -> None:
        self.cmd(f"dice.enter faces={','.join(map(str, faces))} actor=dealer1 role=dealer", 3)

    def round(self, faces: tuple[int, int, int]) -> None:
        self.open_close()
        self.dice(faces)
        self.deal()

    folder = HERE
    source = "tests/captures/make_paigow_captures.py (simulator dealing to the real table)"


def session(headers: dict[str, str], seed: int) -> TileRecorder:
    base = {"driver": "tile-line", "game": "paigow", "name": "tiles", "table": "cap"}
    return TileRecorder(base | headers, TileSimulator(seed=seed, pace=0))  # type: ignore[arg-type]


def throw(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))


def random_rounds(name: str, seed: int, rounds: int, headers: dict[str, str]) -> None:
    r = session(headers, seed)
    rng = random.Random(seed)
    for _ in range(rounds):
        r.round(throw(rng))
    assert len(r.events("round.result")) == rounds, "every round has its result"
    assert not r.replayer.stats.refused, r.replayer.stats.refused
    r.save(name, f"{rounds} rounds: seeded shuffles of the 20-tile set, random dice entered")


def procedures() -> None:
    r = session({}, 5)
    rng = random.Random(5)
    r.round(throw(rng))
    # an unreadable tile: a dealer may not enter it, the supervisor does
    r.open_close()
    r.dice(throw(rng))
    r.sim.inject("unreadable")
    for _ in range(3):  # the dealer goes on: two tiles wait behind the unreadable one
        r.one()
    assert r.phase == "paused", r.phase
    r.cmd("tile.enter tile=9p actor=dealer1 role=dealer", wait=5)  # refused: supervisor only
    r.cmd("alarm.clear id=all reason=try actor=pit-boss role=supervisor", wait=2)
    r.cmd(f"tile.enter tile={r.sim.history[-3]} actor=pit-boss role=supervisor", wait=5)
    assert r.phase == "dealing", r.phase
    r.deal()
    # a tile from another suit: the supervisor enters the tile it really is
    r.open_close()
    r.dice(throw(rng))
    r.sim.inject("foreign")
    r.deal()
    assert r.phase == "paused", r.phase
    r.cmd(f"tile.enter tile={r.sim.history[-1]} actor=pit-boss role=supervisor", wait=5)
    assert r.phase == "dealing", r.phase
    r.deal()
    # one tile more than the set holds: read as a tile the round has used up
    spent: list[str] = []
    while not spent:
        assert r.phase == "settling", (
            r.phase
        )  # the first round in which a tile is used up before its 12th tile
        r.open_close()
        r.dice(throw(rng))
        while r.phase == "dealing":
            g = r.replayer.state.game
            spent = [t for t in sorted(set(g.tiles)) if g.tiles.count(t) == 2]
            if spent:
                break
            r.one()
    true_tile = r.sim.wall.pop()
    r.sim.history.append(true_tile)
    r.t += 0.8
    r._line("rx", f"{spent[0]}\r\n".encode())
    assert r.phase == "paused", r.phase
    r.cmd(f"tile.enter tile={spent[0]} actor=pit-boss role=supervisor", wait=5)  # refused
    r.cmd(f"tile.enter tile={true_tile} actor=pit-boss role=supervisor", wait=5)
    r.deal()
    # a 13th tile after the result: set aside, the result stands
    r.open_close()
    r.dice(throw(rng))
    r.sim.inject("extra-tile")
    r.deal()
    r.deal()
    # a tile while betting is open: the round is void
    r.sim.inject("early-tile")
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.deal()
    r.cmd("alarm.clear id=all reason=tiles_reshuffled actor=pit-boss role=supervisor", wait=10)
    # a tile after no more bets but before the dice: a misdeal, the round is void
    r.open_close()
    r.dice((9, 1, 1))  # refused: not a throw
    r.deal()
    r.one()
    r.cmd("alarm.clear id=all reason=tiles_reshuffled actor=pit-boss role=supervisor", wait=10)
    # line noise on the wire, a tile sent twice (not dropped: this reader does not repeat),
    # then a supervisor voids the round mid-deal
    r.open_close()
    r.dice(throw(rng))
    r.sim.inject("garbage")
    r.one()
    r.cmd("round.void reason=dealer_dropped_a_tile actor=pit-boss role=supervisor", wait=4)
    r.round(throw(rng))
    kinds = [e.data["kind"] for e in r.events("alarm.raised")]
    for k in (
        "tile-unreadable",
        "tile-not-in-set",
        "tile-over-count",
        "extra-tile",
        "tile-before-betting-closed",
        "tile-before-dice",
    ):
        assert k in kinds, (k, kinds)
    r.save(
        "procedures.log",
        "an unreadable tile, a foreign tile, a tile over its count, a 13th tile, a tile during "
        "betting, a tile before the dice, refused entries, line noise and a supervisor's void",
    )


if __name__ == "__main__":
    random_rounds("random-rounds.log", 2026, 60, {})
    random_rounds("random-rounds-rotation.log", 7, 30, {"game.deal": '"rotation"'})
    procedures()
