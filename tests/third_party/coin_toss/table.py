"""The coin toss table: the dealer says how the coin landed; heads or tails settles the toss,
an edge is no toss (``rules.R_EDGE``) and the same toss is tossed again."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from coin_toss import rules
from coin_toss.describe import CoinDescriber
from coin_toss.events import EVENTS
from daemon.games.describe import Describer
from daemon.table import Arg, Command, CommandSpec, Decision, Input, TableState, spec


class CoinRules(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: the house may refuse an edge outright instead of voiding the toss
    edge_voids: bool = True


class CoinState(msgspec.Struct, frozen=True):
    toss: int = 1
    last: str | None = None
    results: int = 0
    voids: int = 0


class CoinToss:
    name: ClassVar[str] = "coin-toss"
    Rules: ClassVar[type[msgspec.Struct]] = CoinRules
    State: ClassVar[type[msgspec.Struct]] = CoinState
    STATE_VERSION: ClassVar[int] = 1
    commands: ClassVar[dict[str, CommandSpec]] = {
        "coin.landed": spec(
            "how the coin landed",
            "dealer",
            "supervisor",
            words=("toss",),
            args=(Arg("side", "heads, tails or edge"),),
        ),
    }
    describe: ClassVar[Describer] = CoinDescriber()
    events: ClassVar[dict[str, type[msgspec.Struct]]] = EVENTS

    def __init__(self, rules: CoinRules) -> None:
        self.rules = rules

    def initial(self) -> CoinState:
        return CoinState()

    def summary(self, g: CoinState) -> dict[str, Any]:
        return {"phase": "tossing", "text": f"waiting for toss {g.toss}", "toss": g.toss}

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        if not isinstance(inp, Command) or inp.name != "coin.landed":
            return
        g: CoinState = t.game
        side = str(inp.args.get("side"))
        if rules.settles(side):
            d.add("coin.result", toss=g.toss, side=side)
        elif side == "edge" and self.rules.edge_voids:
            d.add("coin.void", toss=g.toss, reason="edge", rule=rules.R_EDGE, by=inp.actor)
        else:
            d.refused = f"a coin lands heads or tails{' or on its edge' * self.rules.edge_voids}"

    def apply(self, g: CoinState, type_: str, data: dict[str, Any]) -> CoinState:
        if type_ == "coin.result":
            return msgspec.structs.replace(
                g, toss=g.toss + 1, last=data["side"], results=g.results + 1
            )
        if type_ == "coin.void":
            return msgspec.structs.replace(g, voids=g.voids + 1)
        return g
