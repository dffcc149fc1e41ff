"""Write the synthetic dice-ref captures in tests/captures/dice-ref/.

The same method as ``make_shoe_captures.py`` (its :class:`Recorder` is reused):
the dice shaker simulator plays to the real Sic Bo table offline, following
the table's events; this script plays croupier and supervisor. Run
``python tests/captures/make_dice_captures.py``, then
``pytest tests/captures/dice-ref --regen-captures``. Each session checks that
it shows what its description promises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from make_shoe_captures import Recorder

from drivers.dice_ref import VERSION, Frame, Framer
from drivers.sim.dice import DiceSimulator

HERE = Path(__file__).parent / "dice-ref"


class DiceRecorder(Recorder):
    """The wire between the shaker simulator and the table: one rx line per frame written."""

    sim: DiceSimulator  # type: ignore[assignment]

    def write(self, data: bytes) -> None:
        self._line("rx", data)

    def ask(self, command: bytes) -> None:
        """The daemon sends a command; the shaker answers at once."""
        self.t += 0.05
        self._line("tx", command)
        for f in Framer().feed(command):
            assert isinstance(f, Frame)
            self.t += 0.05
            self.write(self.sim.answer(f))

    def play(self) -> None:
        """Let the shaker do everything it has planned, on the capture's clock."""
        while self.sim.steps:
            self.t += self.sim.steps[0][0]
            self.sim.step()

    @property
    def phase(self) -> str:
        return str(self.replayer.state.game.phase)

    def round(self, *inject: str) -> None:
        for kind in inject:
            self.sim.inject(kind)
        self.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
        self.play()  # an early shake closes betting by itself
        if self.phase == "betting":
            self.cmd("betting.close actor=croupier role=dealer source=timer", wait=8)
        self.play()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events(kind)]

    folder = HERE
    source = "tests/captures/make_dice_captures.py (simulator shaking for the real table)"

    def save(self, name: str, what: str) -> None:
        assert not self.replayer.stats.refused, self.replayer.stats.refused
        super().save(name, what)


def session(headers: dict[str, str], seed: int) -> DiceRecorder:
    base = {"driver": "dice-ref", "game": "sicbo", "name": "shaker", "table": "cap"}
    r = DiceRecorder(base | headers, DiceSimulator(seed=seed, pace=1.5))  # type: ignore[arg-type]
    r.ask(VERSION)
    return r


def rounds() -> None:
    r = session({"game.max_reshakes": "3"}, seed=2)
    plan = {3: ("stacked",), 5: ("leaning", "stacked"), 7: ("early-shake",), 9: ("garbage",)}
    plan[10] = ("bad-checksum",)
    for n in range(1, 40):
        r.round(*plan.get(n, ()))
        if n >= 12 and any(x["triple"] for x in r.of("dice.result")):
            break
    res = r.of("dice.result")
    assert any(x["triple"] for x in res), "no triple"
    assert any(x["reshakes"] == 2 for x in res), "no round shaken three times"
    assert any(e.get("source") == "shaker" for e in r.of("betting.closed")), "no early shake"
    assert not r.of("dice.rejected") and not r.of("alarm.raised")
    r.save(
        "rounds.log",
        "Sic Bo rounds: stacked and leaning dice re-shaken in the same round (seed 002), "
        "betting closed by the shaker's own shaking report, line noise, a shaking report with "
        "a bad checksum, and a triple (big and small lose)",
    )


def malformed_and_fault() -> None:
    r = session({"game.shaker_fault": '"pause"'}, seed=8)
    r.round()
    r.round("malformed")  # a claim that is not three faces 1–6: alarm, shaken again
    r.round("malformed")
    r.cmd("alarm.clear id=all reason=camera_checked actor=pit-boss role=supervisor", wait=20)
    r.round("fault")  # a shaker fault mid-shake: the round pauses, bets stand
    r.cmd("alarm.clear id=A3 reason=lid_closed actor=tech1 role=technician", wait=10)
    r.cmd("round.resume actor=pit-boss role=supervisor", wait=30)
    r.play()
    r.round("fault")
    r.cmd("round.void reason=shaker_out_of_order actor=pit-boss role=supervisor", wait=30)
    r.round()
    rej = r.of("dice.rejected")
    assert len(rej) == 2 and all(x["reason"] == "invalid" for x in rej), rej
    assert len(r.of("device.fault")) == 2 and len(r.of("round.paused")) == 2
    assert r.of("round.resumed") and r.of("round.void")
    r.save(
        "malformed-and-fault.log",
        "two malformed results (rejected with an alarm, never a result; the round goes on), "
        "a shaker fault that pauses the round until a supervisor resumes it, and another "
        "that a supervisor voids",
    )


def voids() -> None:
    r = session({"game.shaker_fault": '"void"', "game.max_reshakes": "1"}, seed=21)
    r.round()
    r.round("fault")  # house rule void: the round is void at once
    r.round("stacked", "leaning")  # a second re-shake is one too many: a supervisor decides
    r.cmd("round.void reason=dice_chipped actor=pit-boss role=supervisor", wait=30)
    # the shaking report lost and the result seen while betting is open: the round is void
    r.round("early-shake", "bad-checksum")
    r.round()
    voids = [x["reason"] for x in r.of("round.void")]
    assert voids == ["shaker-fault", "dice chipped", "result-during-betting"], voids
    r.save(
        "voids.log",
        "house rule shaker_fault = void, a round paused after too many re-shakes and voided "
        "by a supervisor, and a throw seen while betting was open (void)",
    )


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    rounds()
    malformed_and_fault()
    voids()
