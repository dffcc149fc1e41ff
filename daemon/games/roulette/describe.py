"""How a spin reads: the log line, the recall line, the monitor row and the number on the board."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import Describer, LogLine, Mark

STYLE = {"red": "bold red", "black": "bold white", "green": "bold green"}


class RouletteDescriber(Describer):
    results: ClassVar[frozenset[str]] = frozenset({"spin.result"})
    voids: ClassVar[frozenset[str]] = frozenset({"spin.void"})
    key: ClassVar[tuple[str, ...]] = ("spin",)
    boards: ClassVar[tuple[str, ...]] = ("last results",)
    routine: ClassVar[frozenset[str]] = Describer.routine | {"wheel.state", "wheel.flags"}
    where: ClassVar[tuple[str, ...]] = ("spin", "round", "wheel_state")
    labels: ClassVar[Mapping[str, str]] = {
        "spin": "spins so far",
        "round": "round due",
        "wheel_state": "wheel state",
    }
    playing: ClassVar[tuple[str, ...]] = ("round",)
    board_label: ClassVar[str] = "winning pockets, newest first"
    #: the wheel's state each event means, in either model's words (``wheel.state`` names its own)
    STATE_OF: ClassVar[Mapping[str, str]] = {
        "betting.opened": "place your bets",
        "spin.started": "ball in rim",
        "betting.closed": "no more bets",
        "spin.result": "winning number",
    }

    def gauges(self, type_: str, d: Mapping[str, Any]) -> Mapping[str, str]:
        out: dict[str, str] = {}
        name = d.get("name") if type_ == "wheel.state" else self.STATE_OF.get(type_)
        if d.get("wheel_state") is not None and name:
            out["wheel"] = f"{d['wheel_state']} {name}"
        if d.get("rotor_rpm") is not None:
            out["rotor"] = f"{d.get('rotor_direction')} {d['rotor_rpm']} rpm"
        return out

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "spin.result":
            return f"spin {d['spin']}: {d.get('pocket', d['number'])} {d['color']}", {
                "round": d.get("round"),
                "wheel_spin": d.get("wheel_spin"),
                "rotor": f"{d.get('rotor_direction')} {d.get('rotor_rpm')} rpm",
            }
        return None

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "spin.result":
            return f"spin {d.get('spin')}: {d.get('number')} {d.get('color', '')}".rstrip()
        return None

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ != "spin.result":
            return super().recall(type_, d)
        return (
            f"spin {d['spin']} (wheel {d.get('wheel_spin')}): {d.get('pocket', d['number'])} "
            f"{d['color']}  rotor {d.get('rotor_direction')} {d.get('rotor_rpm')} rpm"
        )

    def row(self, d: Mapping[str, Any]) -> str:
        return f"spin {d.get('spin')}: {d.get('pocket', d['number'])} {d.get('color', '')}"

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        return Mark(str(d.get("pocket", d["number"])), STYLE.get(d.get("color", ""), ""))
