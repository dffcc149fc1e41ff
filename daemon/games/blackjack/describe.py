"""How a blackjack round reads: the log line, the recall lines, the monitor row and board cells.

The hole card is read as the public events give it: face down (``card.dealt`` with
``card: null``) until ``dealer.hole_card`` turns it over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import LogLine, Mark
from daemon.procedures.shoe.describe import ShoeDescriber


def dealer_text(dl: Mapping[str, Any]) -> str:
    """``BLACKJACK``, ``19`` or ``25 bust``: the dealer's hand in one word."""
    if dl["blackjack"]:
        return "BLACKJACK"
    return f"{dl['total']}" + (" bust" if dl["bust"] else "")


def _box_line(b: Mapping[str, Any]) -> str:
    hands = []
    for h in b["hands"]:
        tag = " x2" if h["bet"] == 2 else ""
        hands.append(f"{' '.join(h['cards'])} ({h['total']}{tag}) {h['outcome']} {h['net']:+g}")
    ins = b.get("insurance") or {}
    extra = f"  insurance {ins['net']:+g}" if ins.get("taken") else ""
    return f"box {b['box']}: " + " | ".join(hands) + extra


class BlackjackDescriber(ShoeDescriber):
    boards: ClassVar[tuple[str, ...]] = ("last results",)
    board_label: ClassVar[str] = "dealer's total, newest first; BJ blackjack, xx bust"
    phases: ClassVar[Mapping[str, str]] = {
        **ShoeDescriber.phases,
        "dealer.hole_card": "dealer's turn",
        "box.decision": "boxes playing",
    }
    recalled: ClassVar[frozenset[str]] = ShoeDescriber.recalled | {
        "box.decision",
        "box.insurance",
        "dealer.peeked",
        "dealer.hole_card",
    }

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "card.dealt":
            card = d["card"] if d.get("card") is not None else "(face down)"
            box = d["box"] + (f"/{d['split_hand'] + 1}" if d.get("split_hand") else "")
            return f"card {card} → {box}", {"hand": d["hand"]}
        if type_ == "hand.result" and "boxes" in d:
            dl = d["dealer"]
            return f"hand {d['hand']}: dealer {dealer_text(dl)}", {
                "shoe": d["shoe"],
                "dealer": " ".join(dl["cards"]),
                "boxes": "; ".join(_box_line(b) for b in d["boxes"]),
            }
        return super().log(type_, d)

    def cards(self, shown: dict[str, list[str]], type_: str, d: Mapping[str, Any]) -> bool:
        """Split hands apart (``3/2``), the hole card face down (``??``) until it is turned over."""
        if type_ == "card.dealt" and d.get("box") not in ("burn", "void"):
            box = d["box"] + (f"/{d['split_hand'] + 1}" if d.get("split_hand") else "")
            shown.setdefault(box, []).append(d["card"] or "??")
            return True
        if type_ == "dealer.hole_card":
            shown["dealer"] = [d["card"] if c == "??" else c for c in shown.get("dealer", [])]
            return True
        return False

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ != "hand.result":
            return super().recall(type_, d)
        dl = d["dealer"]
        head = (
            f"shoe {d['shoe']} hand {d['hand']}: dealer {dealer_text(dl)}  {' '.join(dl['cards'])}"
        )
        return head + "".join(f"\n    {_box_line(b)}" for b in d["boxes"])

    def step(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "card.dealt":
            card = d["card"] if d.get("card") is not None else "face down"
            box = d["box"] + (f"/{d['split_hand'] + 1}" if d.get("split_hand") else "")
            return f"card {card} → {box}" + (" (hole)" if d.get("hole") else "")
        if type_ == "box.decision":
            return f"box {d['box']}: {d['decision']}" + (" (timeout)" if d.get("timeout") else "")
        if type_ == "box.insurance":
            return f"box {d['box']}: insurance {'taken' if d['taken'] else 'declined'}"
        if type_ == "dealer.peeked":
            return (
                f"dealer checked the hole card: {'BLACKJACK' if d['blackjack'] else 'no blackjack'}"
            )
        if type_ == "dealer.hole_card":
            return f"hole card {d['card']} (commitment {d['commitment'][:12]}…)"
        return super().step(type_, d)

    def row(self, d: Mapping[str, Any]) -> str:
        dl = d["dealer"]
        net = sum(b["net"] for b in d["boxes"])
        return (
            f"hand {d['hand']}: dealer {dl['total']}{' bust' if dl['bust'] else ''}  boxes {net:+g}"
        )

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        dl = d["dealer"]
        if dl["blackjack"]:
            return Mark("BJ", "bold white on red", None)
        if dl["bust"]:
            return Mark("xx", "bold green", None)
        return Mark(str(dl["total"]), "bold white", None)
