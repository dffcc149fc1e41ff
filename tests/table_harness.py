"""Drive the real table, pure, input by input: what every game's procedure tests share."""

from __future__ import annotations

from typing import Any

import msgspec

from daemon.table import Command, DeviceReading, Table
from drivers.readings import CardDrawn, Reading

Evs = list[tuple[str, dict[str, Any]]]


def of(evs: Evs, t: str) -> list[dict[str, Any]]:
    return [d for x, d in evs if x == t]


def types(evs: Evs) -> list[str]:
    return [t for t, _ in evs]


class TableHarness:
    """A table's state moved by decide/apply exactly as the pipeline moves it."""

    device = "device"

    def __init__(self, game: Any, devices: list[str]) -> None:
        self.table = Table(game, devices)
        self.state = self.table.initial()
        self.events: Evs = []
        self.refused: str | None = None

    def run(self, inp: Any) -> Evs:
        d = self.table.decide(self.state, inp)
        self.refused = d.refused
        out = []
        for x in d.drafts:
            self.state = self.table.apply(self.state, x.type, x.data)
            out.append((x.type, x.data))
        self.events += out
        return out

    def cmd(self, name: str, role: str = "supervisor", source: str = "control", **args: Any) -> Evs:
        return self.run(Command(name, args, "pit", role, source=source))

    def read(self, reading: Reading, device: str | None = None) -> Evs:
        return self.run(DeviceReading(device or self.device, reading, 0.0))

    @property
    def g(self) -> Any:
        return self.state.game

    def rebuilt(self) -> Any:
        """The state rebuilt from this harness's events as the journal returns them (JSON)."""
        state = self.table.initial()
        for t, d in self.events:
            state = self.table.apply(state, t, msgspec.json.decode(msgspec.json.encode(d)))
        return state

    def snapshot(self) -> Any:
        """The state through a snapshot: encoded and decoded as recovery reads it."""
        return self.table.decode_state(self.table.encode_state(self.state))

    def assert_rebuilds(self) -> None:
        """decide/apply's promise: the journal and a snapshot each give back the live state."""
        live = msgspec.to_builtins(self.state)
        assert msgspec.to_builtins(self.rebuilt()) == live
        assert msgspec.to_builtins(self.snapshot()) == live

    @staticmethod
    def types(evs: Evs) -> list[str]:
        return types(evs)


class ShoeHarness(TableHarness):
    """A card game dealt from a shoe named ``shoe``."""

    device = "shoe"

    def __init__(self, game_cls: Any, rules_cls: Any, **rules: Any) -> None:
        super().__init__(game_cls(msgspec.convert(rules, rules_cls)), ["shoe"])

    def card(self, code: str, **kw: Any) -> Evs:
        return self.read(CardDrawn(card=code, frame=code.encode(), **kw))

    def cards(self, *codes: str) -> Evs:
        out: Evs = []
        for c in codes:
            out += self.card(c)
        return out

    def new_shoe(self) -> None:
        self.cmd("shoe.new")

    def hand(self, *codes: str) -> Evs:
        self.cmd("betting.open")
        self.cmd("betting.close")
        return self.cards(*codes)
