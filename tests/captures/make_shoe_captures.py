"""Write the synthetic shoe-line captures in tests/captures/shoe-line/.

A capture is normally a technician's trace of a real table. These are made
by the shoe simulator dealing to the real table offline (the simulator reads
the table's events, the script plays croupier and supervisor), so each one
is a reproducible table session: ``python tests/captures/make_shoe_captures.py``
rewrites them, then ``pytest --regen-captures`` their expected events.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon.pipeline.capture import Capture, Line, escape, format_time
from daemon.pipeline.replay import Replayer
from drivers.sim.shoe import ShoeSimulator

HERE = Path(__file__).parent / "shoe-line"
T0 = 1_793_563_200.0  # 2026-11-01T20:00:00Z


class Recorder:
    """The wire between the simulator and the table, written down as it goes."""

    def __init__(self, headers: dict[str, str], sim: ShoeSimulator) -> None:
        self.headers = headers
        self.cap = Capture("generated", dict(headers))
        self.replayer = Replayer.for_capture(self.cap)
        self.sim = sim
        self.lines: list[str] = []
        self.t = T0
        self.n = 0
        sim.attach(self)

    # the simulator's link
    opened = None

    def write(self, data: bytes) -> None:
        for frame in data.split(b"\r\n")[:-1]:
            self._line("rx", frame + b"\r\n")

    def _feed(self, line: Line) -> None:
        before = len(self.replayer.events)
        self.replayer.feed(Capture("generated", self.cap.headers, [line]))
        self.sim.on_events(self.replayer.events[before:])

    def _line(self, kind: str, frame: bytes = b"", text: str = "") -> None:
        self.n += 1
        self.lines.append(f"{format_time(self.t)} {kind} {escape(frame) if frame else text}")
        self._feed(Line(self.n, self.t, kind, None, frame, text))

    def cmd(self, text: str, wait: float = 0.5) -> None:
        self.t += wait
        self._line("cmd", text=text)

    def deal(self, pace: float = 0.8) -> None:
        """Let the dealer draw every card (or tile: any ``PacedDealer``) the table waits for."""
        while self.sim._want > 0:
            self.sim._want -= 1
            self.t += pace
            self.sim.draw()

    def events(self, kind: str) -> list[Any]:
        return [e for e in self.replayer.events if e.type == kind]

    #: where a subclass's captures go, and the source line each names
    folder = HERE
    source = "tests/captures/make_shoe_captures.py (simulator dealing to the real table)"

    def save(self, name: str, what: str) -> None:
        head = [f"# {k}: {v}" for k, v in self.headers.items()]
        head.insert(0, f"# what: {what}")
        head.append(f"# source: {self.source}")
        (self.folder / name).write_text("\n".join(head + self.lines) + "\n")


def session(headers: dict[str, str], sim_kw: dict[str, Any] | None = None) -> Recorder:
    base = {"driver": "shoe-line", "game": "baccarat", "name": "shoe", "table": "cap"}
    return Recorder(base | headers, ShoeSimulator(seed=11, pace=0, **(sim_kw or {})))


def hand(r: Recorder, before_close: Callable[[], None] | None = None) -> None:
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    if before_close:
        before_close()
    r.cmd("betting.close actor=croupier role=dealer source=timer", wait=8)
    r.deal()


def full_shoe() -> None:
    r = session({"game.start_burn": '"first-card"', "game.cut_card": "14", "game.decks": "8"})
    r.cmd("shoe.new actor=dealer1 role=dealer")
    r.deal()
    while not r.events("shoe.ended"):
        hand(r)
        r.deal()
    r.save(
        "full-shoe-first-card-burn.log",
        "a whole 8-deck shoe: first-card burn, every hand, the cut card and the shoe's end",
    )


def extra_cards() -> None:
    r = session({"game.start_burn": '"fixed:1"'})
    r.cmd("shoe.new actor=dealer1 role=dealer")
    r.deal()
    hand(r)
    r.sim.inject("extra-card")
    hand(r)
    r.deal()  # the extra card
    hand(r)
    r.sim.inject("two-extra-cards")
    hand(r)
    r.deal()  # two extra cards: the next hand's burn and its first Player card
    hand(r)
    hand(r)
    r.save(
        "extra-cards.log", "seed 002 misdeals: one extra card, then two extra cards after a result"
    )


def misdeals() -> None:
    r = session({"game.start_burn": '"first-card"', "game.exposed_card_voids_shoe": "false"})
    # a forgotten burn: betting opened and closed before the start-of-shoe burn
    r.sim.inject("forgotten-burn")
    r.cmd("shoe.new actor=dealer1 role=dealer")
    hand(r)  # the first card voids the hand and the shoe (seed 002)
    r.cmd("shoe.new actor=dealer1 role=dealer", wait=30)
    r.deal()
    hand(r)
    # a card out of the shoe while betting is open (seed 003 §2.1.6); the supervisor voids
    r.sim.inject("early-card")
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.deal()
    r.cmd("hand.void reason=card_before_no_more_bets actor=pit-boss role=supervisor", wait=5)
    hand(r)
    # a card exposed during betting (seed 004 §4), reported by the dealer's button
    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.cmd("card.exposed actor=dealer1 role=dealer source=button", wait=3)
    hand(r)
    r.save(
        "misdeals.log",
        "a forgotten burn, a card before betting closed, and a card exposed during betting",
    )


def unreadable() -> None:
    r = session({"game.start_burn": '"none"'}, {"read_error_code": "ERR"})
    r.cmd("shoe.new actor=dealer1 role=dealer")
    hand(r)

    def misread() -> None:
        r.sim.inject("unreadable")

    r.cmd("betting.open actor=croupier role=dealer source=timer", wait=2)
    r.cmd("betting.close actor=croupier role=dealer source=timer", wait=8)
    misread()
    r.deal()  # the first card is unreadable: the table pauses, the dealer stops
    card = r.sim.history[-1]
    r.cmd(
        f"card.enter card={card} actor=pit-boss role=dealer", wait=20
    )  # refused: needs a supervisor
    r.cmd(f"card.enter card={card} actor=pit-boss role=supervisor", wait=5)
    r.deal()
    r.sim.inject("face-up")
    hand(r)
    r.save(
        "unreadable-manual-entry.log",
        "an unreadable card, a dealer's refused entry, the supervisor's manual entry, a face-up card",
    )


def boxed_with_repeats() -> None:
    r = session(
        {
            "options.encoding": '"boxed"',
            "options.drop_repeats": "true",
            "game.start_burn": '"none"',
        },
        {"encoding": "boxed"},
    )
    r.cmd("shoe.new actor=dealer1 role=dealer")
    r.sim.inject("repeat")
    r.sim.inject("garbage")
    hand(r)
    hand(r)
    r.save(
        "boxed-repeats-garbage.log",
        "the boxed encoding, a card sent twice (dropped), and line noise (counted, never a card)",
    )


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    full_shoe()
    extra_cards()
    misdeals()
    unreadable()
    boxed_with_repeats()
