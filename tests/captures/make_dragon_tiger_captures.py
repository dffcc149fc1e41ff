"""Write the synthetic Dragon Tiger captures in tests/captures/dragon-tiger/.

The same method as ``make_shoe_captures.py`` (whose :class:`Recorder` and
``hand`` this reuses): the shoe simulator deals to the real table offline,
this script plays croupier and supervisor. Run
``python tests/captures/make_dragon_tiger_captures.py``, then
``pytest tests/captures/dragon-tiger --regen-captures``. Each session checks
that it shows what its description promises, so a change of simulator or
rules that loses a case fails here rather than quietly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from make_shoe_captures import Recorder, hand

from drivers.sim.shoe import ShoeSimulator

HERE = Path(__file__).parent / "dragon-tiger"


class DragonTigerRecorder(Recorder):
    folder = HERE
    source = "tests/captures/make_dragon_tiger_captures.py (simulator dealing to the real table)"

    def draw_one(self, pace: float = 0.8) -> None:
        """The dealer draws one card of those due, and stops (to void a hand mid-deal)."""
        self.t += pace
        self.sim._want -= 1
        self.sim.draw()

    def results(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events("hand.result")]


def session(headers: dict[str, str], seed: int) -> DragonTigerRecorder:
    base = {"driver": "shoe-line", "game": "dragon-tiger", "name": "shoe", "table": "cap"}
    return DragonTigerRecorder(base | headers, ShoeSimulator(seed=seed, pace=0))


def full_shoe() -> None:
    r = session(
        {
            "game.start_burn": '"first-card"',
            "game.burn_between_hands": "1",
            "game.cut_card": "14",
            "game.decks": "8",
        },
        seed=5,
    )
    r.cmd("shoe.new actor=dealer1 role=dealer")
    r.deal()
    for n in range(1, 1000):
        if r.events("shoe.ended"):
            break
        hand(r)
        if n == 3:
            r.sim.inject("extra-card")
            r.deal()  # drawn when none was due: the next hand's burn card (seed 002)
    res = r.results()
    assert any(x["winner"] == "tie" and not x["suited_tie"] for x in res), "no plain tie"
    assert any(x["suited_tie"] for x in res), "no suited tie"
    assert any(e.data.get("extra_card") for e in r.events("card.dealt")), "no extra card"
    assert r.events("shoe.cut_card") and r.events("shoe.burn")
    r.save(
        "full-shoe.log",
        "a whole 8-deck shoe: first-card burn, a burn card between hands, an extra card "
        "(the next hand's burn), ties and suited ties, the cut card and the shoe's end",
    )


def procedures() -> None:
    r = session({"game.start_burn": '"fixed:1"', "game.demo_hands": "1"}, seed=3)
    r.cmd("shoe.new actor=dealer1 role=dealer")
    r.deal()  # the burn card
    # a demonstration hand (seed 000/001 art. 2.2): dealt while the table is in its demo phase
    r.sim._deal(2)
    r.deal()
    hand(r)
    # two extra cards after a result: the next hand's burn and its Dragon card (seed 002)
    r.sim.inject("two-extra-cards")
    hand(r)
    r.deal()
    hand(r)
    # a card exposed during betting voids the hand (seed 004 §4)
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.cmd("card.exposed actor=dealer1 role=dealer source=button", wait=3)
    # an unreadable card: the table pauses, the supervisor enters the card
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.cmd("betting.close actor=croupier role=dealer source=timer", wait=8)
    r.sim.inject("unreadable")
    r.deal()
    card = r.sim.history[-1]
    r.cmd(f"card.enter card={card} actor=pit-boss role=supervisor", wait=15)
    r.deal()
    # a card face up in the shoe stands (seed 000/001 art. 4)
    r.sim.inject("face-up")
    hand(r)
    # a supervisor voids a hand in the middle of the deal
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.cmd("betting.close actor=croupier role=dealer source=timer", wait=8)
    r.draw_one()
    r.cmd("hand.void reason=dealer_dropped_the_tiger_card actor=pit-boss role=supervisor", wait=5)
    hand(r)
    assert not r.replayer.stats.refused, r.replayer.stats.refused
    kinds = {e.type for e in r.replayer.events}
    assert {"hand.demo", "hand.void", "card.exposed", "table.resumed", "hand.result"} <= kinds
    assert any(e.data.get("carried") for e in r.events("card.dealt")), "no carried Dragon card"
    r.save(
        "procedures.log",
        "the shoe procedures on a Dragon Tiger table: a demo hand, two extra cards, a card "
        "exposed during betting, an unreadable card entered by a supervisor, a face-up card, "
        "a supervisor's void",
    )


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    full_shoe()
    procedures()
