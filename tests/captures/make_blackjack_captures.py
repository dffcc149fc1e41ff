"""Write the blackjack captures in tests/captures/blackjack/.

The shoe simulator deals to the real table offline, following the table's
``table.expects`` as it does in the daemon; this script plays the game server
(bets, random decisions among the allowed ones, insurance, the odd timeout)
and, where a capture asks for one, the dealer's errors. Seeded, so each
capture is a reproducible session: ``python tests/captures/make_blackjack_captures.py``
rewrites them, then ``pytest --regen-captures`` their expected events.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from make_shoe_captures import Recorder

from drivers.sim.shoe import ShoeSimulator

HERE = Path(__file__).parent / "blackjack"
GS = "actor=gs1 role=dealer"


class Table(Recorder):
    folder = HERE
    source = "tests/captures/make_blackjack_captures.py (simulator dealing to the real table)"

    def expects(self) -> dict[str, Any] | None:
        evs = self.events("table.expects")
        return evs[-1].data if evs else None


def session(seed: int, headers: dict[str, str] | None = None) -> Table:
    base = {
        "driver": "shoe-line",
        "game": "blackjack",
        "name": "shoe",
        "table": "bj",
        "game.start_burn": '"fixed:1"',
        "game.decks": "8",
        "game.cut_card": "208",
    }
    return Table(base | (headers or {}), ShoeSimulator(seed=seed, pace=0))


def play_round(
    r: Table, rng: random.Random, *, timeouts: float = 0.05, boxes: list[int] | None = None
) -> None:
    """One round: bets, the deal, every decision the table asks for, the dealer."""
    r.cmd(f"betting.open {GS} source=timer", wait=2)
    if boxes is None:
        boxes = sorted(rng.sample(range(1, 8), rng.randint(1, 5)))
    r.cmd(f"betting.close boxes={','.join(map(str, boxes))} {GS}", wait=6)
    r.deal()
    while True:
        r.deal()
        exp = r.expects()
        if exp is None or exp["expects"] in ("round-over", "card", "dealer-draws"):
            if r.sim._want == 0:
                return
            continue
        kind = exp["expects"]
        if kind == "insurance":
            for b in exp["boxes"]:
                if rng.random() < timeouts * 3:
                    r.cmd(
                        f"decision.timeout turn={exp['turn']} actor=decision-clock role=dealer source=timer",
                        wait=10,
                    )
                    break
                take = "yes" if rng.random() < 0.4 else "no"
                r.cmd(f"box.insurance box={b} take={take} {GS}", wait=1)
        elif kind == "hole-check":
            r.cmd("hole.check actor=dealer1 role=dealer source=button", wait=1)
        elif kind == "decision":
            if rng.random() < timeouts:
                r.cmd(
                    f"decision.timeout turn={exp['turn']} actor=decision-clock role=dealer source=timer",
                    wait=15,
                )
                continue
            allowed = exp["allowed"]
            weights = {"hit": 4, "stand": 4, "double": 2, "split": 3}
            what = rng.choices(allowed, [weights[a] for a in allowed])[0]
            r.cmd(f"box.{what} box={exp['box']} {GS}", wait=1.5)
        else:
            return


def whole_shoe(seed: int, name: str) -> Table:
    r = session(seed)
    rng = random.Random(seed)
    r.cmd("shoe.new actor=dealer1 role=dealer")
    r.deal()
    while not r.events("shoe.ended"):
        play_round(r, rng)
    return r


def dealer_errors() -> None:
    r = session(21, {"game.start_burn": '"none"'})
    rng = random.Random(21)
    r.cmd("shoe.new actor=dealer1 role=dealer")
    # a card drawn for box 1 while it has not asked (the dealer did not wait, §3.5.3)
    r.cmd(f"betting.open {GS} source=timer", wait=2)
    r.cmd(f"betting.close boxes=1,4 {GS}", wait=6)
    r.deal()
    if r.expects() and r.expects()["expects"] == "decision":
        r.sim._deal(1)
        r.deal()
        r.cmd("alarm.clear id=all reason=card_set_aside actor=pit-boss role=supervisor", wait=3)
    play_round_rest(r, rng)
    # the dealer draws once more after standing (at 17 or more): an extra card between rounds
    r.sim.inject("extra-card")
    play_round(r, rng, boxes=[2])
    r.deal()
    r.cmd("alarm.clear id=all reason=burned actor=pit-boss role=supervisor", wait=3)
    # a card out of the shoe while betting is open (seed 003 §2.1.3): set aside, the round goes on
    r.sim.inject("early-card")
    r.cmd(f"betting.open {GS} source=timer", wait=2)
    r.deal()
    r.cmd("alarm.clear id=all reason=burn_card actor=pit-boss role=supervisor", wait=3)
    r.cmd(f"betting.close boxes=3,5 {GS}", wait=6)
    play_round_rest(r, rng)
    # the hole card exposed before the boxes played: the round is void
    r.cmd(f"betting.open {GS} source=timer", wait=2)
    r.cmd(f"betting.close boxes=2,6 {GS}", wait=6)
    r.deal()
    r.cmd("card.exposed actor=dealer1 role=dealer source=button", wait=2)
    r.cmd("alarm.clear id=all reason=round_voided actor=pit-boss role=supervisor", wait=3)
    # a card laid on a box that did not bet
    r.cmd(f"betting.open {GS} source=timer", wait=2)
    r.cmd(f"betting.close boxes=1,7 {GS}", wait=6)
    r.deal()
    r.cmd("card.misplaced box=4 actor=dealer1 role=dealer source=button", wait=2)
    play_round_rest(r, rng)
    # decisions not allowed are refused (the commands are in the capture, no event follows)
    r.cmd(f"betting.open {GS} source=timer", wait=2)
    r.cmd(f"betting.close boxes=3,6 {GS}", wait=6)
    r.deal()
    r.cmd(f"box.hit box=6 {GS}", wait=1)  # not box 6's turn
    play_round_rest(r, rng)
    r.save(
        "dealer-errors.log",
        "dealer errors: a card not due, a draw after the dealer stood, a card before betting "
        "closed, the hole card exposed, a card on a box that did not bet",
    )


def play_round_rest(r: Table, rng: random.Random) -> None:
    """Finish the round in play (no new betting)."""
    while True:
        r.deal()
        exp = r.expects()
        if exp is None or exp["expects"] == "round-over":
            return
        if exp["expects"] == "insurance":
            for b in exp["boxes"]:
                r.cmd(f"box.insurance box={b} take=no {GS}", wait=1)
        elif exp["expects"] == "hole-check":
            r.cmd("hole.check actor=dealer1 role=dealer source=button", wait=1)
        elif exp["expects"] == "decision":
            if len(r.events("card.dealt")) and "double" not in exp["allowed"]:
                r.cmd(f"box.double box={exp['box']} {GS}", wait=1)  # refused: three cards
            what = "hit" if "hit" in exp["allowed"] and rng.random() < 0.5 else "stand"
            r.cmd(f"box.{what} box={exp['box']} {GS}", wait=1.5)
        elif r.sim._want == 0:
            return


def main() -> None:
    HERE.mkdir(exist_ok=True)
    r = whole_shoe(33, "whole-shoe.log")
    r.save(
        "whole-shoe.log",
        "a whole 8-deck shoe: random boxes and decisions, splits, doubles, insurance, timeouts, "
        "to the cut card 4 decks from the back",
    )
    r = whole_shoe(104, "whole-shoe-2.log")
    r.save("whole-shoe-2.log", "a second whole 8-deck shoe, another seed")
    dealer_errors()


if __name__ == "__main__":
    main()
