"""How a toss reads: the log line, the recall line, the monitor row and its cell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import Describer, LogLine, Mark


class CoinDescriber(Describer):
    results: ClassVar[frozenset[str]] = frozenset({"coin.result"})
    voids: ClassVar[frozenset[str]] = frozenset({"coin.void"})
    key: ClassVar[tuple[str, ...]] = ("toss",)

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "coin.result":
            return f"toss {d['toss']}: {d['side'].upper()}", {}
        return None

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "coin.result":
            return f"toss {d['toss']}: {d['side'].upper()}"
        return None

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ == "coin.result":
            return f"toss {d['toss']}: {d['side'].upper()}"
        return super().recall(type_, d)

    def row(self, d: Mapping[str, Any]) -> str:
        return f"toss {d['toss']}: {d['side'].upper()}"

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        return Mark(d["side"][0].upper(), "bold")
