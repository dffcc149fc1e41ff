"""Long, valid table sessions, decided offline by the real table.

The benchmarks need thousands of frames that a real table accepts without
a single alarm. Each session here is played against the pure table
(decide/apply, no I/O) while it is generated, the way
``tests/captures/make_shoe_captures.py`` lets a simulator follow the table:

* the shoe: shoes shuffled as the shoe simulator shuffles them
  (``drivers/sim/shoe.py``), first-card burn, the croupier's
  ``betting.open``/``betting.close`` between hands, each hand's cards until
  the table says the hand is complete, the cut card at its place;
* the wheel: a Cammegh SlingShot 2 as ``drivers/sim/wheel.py`` runs it,
  a status frame every simulated 500 ms, with the states shortened to one
  frame each (latency: nearly every frame changes something) or at the
  simulator's own durations (throughput: most frames repeat the state).

What comes out is a script of steps (a command, or a burst of frames a
device sends without waiting for the table) where every step carries the
event types the table decided from it, in order. A benchmark plays the
script against the live daemon and matches what arrives on the bus to the
frame that caused it; the journal benchmarks append the recorded decisions.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from daemon.games import find as game_class
from daemon.journal.events import Draft
from daemon.table import Command, DeviceHealth, DeviceReading, Input, Table, TableState
from drivers.base import driver_class
from drivers.cards import DECK
from drivers.readings import CardDrawn, CutCardOut, Malformed, Unknown

#: the house rules of the shoe benchmarks (config/demo.toml's, without the croupier).
SHOE_RULES: dict[str, Any] = {"decks": 8, "cut_card": 14, "start_burn": "first-card"}
#: the wheel's states shortened to one status frame each (simulated seconds per state):
#: nearly every frame changes something, for the latency runs.
WHEEL_DURATIONS_SHORT = {6: 0.5, 1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5, 5: 0.5}
#: the simulator's own (demo) durations: most frames repeat the state, as on a
#: real wheel, for the throughput runs.
WHEEL_DURATIONS_DEMO: dict[int, float] | None = None


@dataclass(slots=True)
class Frame:
    """One line on the wire and the events the table decided from it."""

    line: bytes  # CR LF included
    events: list[str]  # event types, in order
    card: str | None = None
    shoe: int = 0
    position: int = 0  # shoe_position of its card.dealt


@dataclass(slots=True)
class Step:
    """A command, or a burst of frames the device sends without waiting for the table."""

    kind: str  # "cmd" | "frames"
    name: str = ""
    events: list[str] = field(default_factory=list)  # a command's events
    frames: list[Frame] = field(default_factory=list)


@dataclass(slots=True)
class Session:
    game: str
    device: str
    driver: str
    rules: dict[str, Any]
    options: dict[str, Any]
    steps: list[Step]
    #: every input in order and the drafts it decided: what the journal benchmarks append.
    decisions: list[tuple[Input, list[Draft]]]
    rounds: int  # hands or spins

    @property
    def frames(self) -> list[Frame]:
        return [f for s in self.steps if s.kind == "frames" for f in s.frames]

    @property
    def frame_events(self) -> int:
        return sum(len(f.events) for f in self.frames)

    @property
    def events(self) -> int:
        return sum(len(d) for _, d in self.decisions)


class _Player:
    """Feeds inputs to the pure table, refusing any session that raises an alarm."""

    def __init__(self, game: str, rules: dict[str, Any], device: str) -> None:
        import msgspec

        cls = game_class(game)
        if cls is None:
            raise RuntimeError(f"no game {game!r} installed (the tabled.games entry points)")
        self.table = Table(cls(msgspec.convert(rules, cls.Rules)), [device])
        self.state: TableState = self.table.initial()
        self.decisions: list[tuple[Input, list[Draft]]] = []
        self.device = device

    def decide(self, inp: Input) -> list[Draft]:
        d = self.table.decide(self.state, inp)
        if d.refused is not None:
            raise RuntimeError(f"the table refused {inp!r}: {d.refused}")
        for x in d.drafts:
            if x.type.startswith("alarm.") or x.type == "table.paused":
                raise RuntimeError(f"the generated session raised {x.type}: {x.data}")
            self.state = self.table.apply(self.state, x.type, x.data)
        self.decisions.append((inp, d.drafts))
        return d.drafts


# -- the shoe ---------------------------------------------------------------------------


def shuffled(seed: int, shoe: int, decks: int) -> list[str]:
    """The shoe the simulator would deal for ``shoe`` (dealt from the end)."""
    rng = random.Random(seed * 1000 + shoe)
    cards = [c for c in DECK for _ in range(decks)]
    rng.shuffle(cards)
    return cards


class ShoeDealer(_Player):
    def __init__(self, seed: int = 7) -> None:
        super().__init__("baccarat", SHOE_RULES, "shoe")
        self.seed = seed
        self.mono = 0.0
        self.cards: list[str] = []
        self.cut_at = 0
        self.hands = 0

    def command(self, name: str) -> Step:
        self.mono += 1.0
        drafts = self.decide(Command(name, {}, "bench", "dealer", source="control", mono=self.mono))
        return Step("cmd", name, [x.type for x in drafts])

    def draw(self, step: Step) -> None:
        """The dealer draws the next card (the cut card first when it is its turn)."""
        g = self.state.game
        if len(self.cards) == self.cut_at:
            self.cut_at = -1
            self.mono += 0.1
            drafts = self.decide(DeviceReading(self.device, CutCardOut(frame=b"CUT"), self.mono))
            step.frames.append(Frame(b"CUT\r\n", [x.type for x in drafts], shoe=g.shoe))
        card = self.cards.pop()
        self.mono += 0.8
        drafts = self.decide(
            DeviceReading(self.device, CardDrawn(frame=card.encode(), card=card), self.mono)
        )
        dealt = [x for x in drafts if x.type == "card.dealt"]
        assert len(dealt) == 1 and dealt[0].data["card"] == card
        self.hands += sum(1 for x in drafts if x.type == "hand.result")
        step.frames.append(
            Frame(
                card.encode() + b"\r\n",
                [x.type for x in drafts],
                card=card,
                shoe=g.shoe,
                position=dealt[0].data["shoe_position"],
            )
        )

    def steps(self) -> Iterator[Step]:
        """An endless session: shoe after shoe, hand after hand."""
        self.decide(DeviceHealth(self.device, "ok", "bench", 0.0, {}))
        rules = self.table.game.rules  # type: ignore[attr-defined]
        while True:
            yield self.command("shoe.new")
            self.cards = shuffled(self.seed, self.state.game.shoe, rules.decks)
            self.cut_at = rules.cut_card
            burn = Step("frames")
            while self.state.game.phase == "burning":
                self.draw(burn)
            yield burn
            while self.state.game.phase != "shoe-ended":
                yield self.command("betting.open")
                yield self.command("betting.close")
                hand = Step("frames")
                while self.state.game.phase == "dealing":
                    self.draw(hand)
                yield hand


def shoe_session(*, cards: int, seed: int = 7) -> Session:
    """Whole hands (and shoes as they come) until at least ``cards`` cards are dealt."""
    dealer = ShoeDealer(seed)
    out: list[Step] = []
    n = 0
    for step in dealer.steps():
        out.append(step)
        n += sum(1 for f in step.frames if f.card is not None)
        if n >= cards and step.kind == "frames":
            break
    return Session(
        "baccarat",
        "shoe",
        "shoe-line",
        dict(SHOE_RULES),
        {"encoding": "rank-suit"},
        out,
        dealer.decisions,
        dealer.hands,
    )


# -- the wheel ----------------------------------------------------------------------------


def wheel_available() -> bool:
    try:
        return game_class("roulette") is not None and driver_class("cammegh-ss2") is not None
    except Exception:
        return False


def wheel_session(*, events: int, seed: int = 7, short: bool = True) -> Session:
    """Spins of a simulated SlingShot 2 until its frames caused at least ``events`` events.

    One step per spin: the frames from one ``betting.opened`` to the next.
    ``short``: one status frame per wheel state; otherwise the simulator's
    own durations (a status frame every 500 ms, most of them repeats).
    """
    from drivers.sim.wheel import WheelSimulator

    options: dict[str, Any] = {"status_mode": "push"}
    player = _Player("roulette", {}, "wheel")
    drv = driver_class("cammegh-ss2")(
        __import__("msgspec").convert(options, driver_class("cammegh-ss2").Options)
    )
    proto = drv.protocol()
    sim = WheelSimulator(
        seed=seed,
        period=0.5,
        durations=WHEEL_DURATIONS_SHORT if short else WHEEL_DURATIONS_DEMO,
    )
    player.decide(DeviceHealth("wheel", "ok", "bench", 0.0, {}))
    steps: list[Step] = []
    cur = Step("frames")
    n = spins = 0
    while True:
        k = len(sim.sent)
        sim.step()
        for line in sim.sent[k:]:
            types: list[str] = []
            for r in proto.feed(line, sim.now):
                if isinstance(r, Malformed | Unknown):
                    raise RuntimeError(f"the wheel simulator sent a bad frame: {r}")
                types += [x.type for x in player.decide(DeviceReading("wheel", r, sim.now))]
            if "betting.opened" in types and cur.frames:
                steps.append(cur)
                cur = Step("frames")
            cur.frames.append(Frame(line, types))
            n += len(types)
            spins += types.count("spin.result")
        if n >= events and cur.frames and "spin.result" in cur.frames[-1].events:
            steps.append(cur)
            break
    return Session("roulette", "wheel", "cammegh-ss2", {}, options, steps, player.decisions, spins)
