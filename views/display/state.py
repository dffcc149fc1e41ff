"""What the table's display shows, folded from the table's events: pure, no I/O, no clock.

The display is a backend of the bus (``docs/views.md``): it sees exactly what every backend
sees, so a card the table keeps secret (the blackjack hole card, published as ``card: null``
with a commitment) cannot reach the page before ``dealer.hole_card`` turns it over. The
roads are drawn from the squares each ``hand.result`` carries (``docs/events.md``, Roads),
never recomputed here, so the page and the pit's scoreboards cannot disagree.

:class:`DisplayState` folds one event at a time (``apply``) and answers what the page
draws (``snapshot``, plain JSON); the service (``views.display.service``) feeds it from a
``TableFollower`` and sends each snapshot to the browsers.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from views.display.stats import counts

#: the red pockets of a roulette wheel (single and double zero alike)
RED = frozenset({1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36})
ROADS = ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")
SHOE_SIDES = {
    "player": "baccarat",
    "banker": "baccarat",
    "dragon": "dragon-tiger",
    "tiger": "dragon-tiger",
}

#: what the banner says for each state of the table
STATUS_TEXT = {
    "waiting": "waiting for the table",
    "betting": "place your bets",
    "closed": "no more bets",
    "dealing": "no more bets",
    "spinning": "ball in play",
    "shaking": "dice in play",
    "result": "result",
    "void": "void: bets returned",
    "paused": "table paused",
    "shoe-ended": "shoe ended: new shoe coming",
}


@dataclass(frozen=True, slots=True)
class Settings:
    """What the display's own config decides (none of it comes from the bus)."""

    #: results the roulette and Sic Bo statistics count (hot and cold, red/black, big/small)
    window: int = 100
    #: how many hot and how many cold numbers are shown
    hot: int = 5
    #: results listed as "last results"
    last: int = 20
    #: the game, when the display's config names it; else read from the events' types
    game: str | None = None
    #: the table limits, as the house writes them ("Min 10 · Max 5 000"): not on the bus
    limits: str | None = None


def epoch(time: str) -> float:
    """An event's ``time`` (UTC ISO-8601 with ``Z``) as seconds since the epoch."""
    return datetime.fromisoformat(time).timestamp()


def game_of(type_: str, data: dict[str, Any]) -> str | None:
    """The game an event can only come from, or None when several games publish it."""
    if type_.startswith(("spin.", "wheel.")):
        return "roulette"
    if type_ in ("dice.result", "dice.shaking"):
        return "sicbo"
    if type_ in ("round.dice", "tile.dealt", "round.result"):
        return "paigow"
    if type_ in ("table.expects", "dealer.hole_card", "box.decision", "box.insurance"):
        return "blackjack"
    if type_ == "hand.result":
        if "boxes" in data:
            return "blackjack"
        return "dragon-tiger" if "dragon" in data else "baccarat"
    if type_ == "card.dealt":
        box = str(data.get("box"))
        if box in SHOE_SIDES:
            return SHOE_SIDES[box]
        if box == "dealer" or box.isdigit():
            return "blackjack"
    return None


def _pick(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: data[k] for k in keys if k in data}


class DisplayState:
    """One table's display, rebuilt from its events (a new journal starts it afresh)."""

    def __init__(self, table: str, settings: Settings | None = None) -> None:
        self.table = table
        self.settings = settings or Settings()
        self.reset(None)

    def reset(self, journal_id: str | None) -> None:
        s = self.settings
        self.journal_id = journal_id
        self.seq = 0
        self.game: str | None = s.game
        self.status = "waiting"
        self.detail: str | None = None
        self.closes_at: float | None = None
        self.shoe: int | None = None
        self.hand: int | None = None  # a shoe game's hand, Sic Bo's and Pai Gow's round
        self.spin: int | None = None
        self.last_hand = False
        self.alarms: dict[str, dict[str, Any]] = {}
        #: who deals now (``dealer.signed_in`` / ``_out``, a result's ``dealer_on_duty``)
        self.dealer: str | None = None
        #: the limits the table journaled (``table.limits``): they win over ``--limits``
        self.table_limits: str | None = None
        self.results: deque[dict[str, Any]] = deque(maxlen=max(s.last, 1))
        self.window: deque[Any] = deque(maxlen=max(s.window, 1))
        self.pockets = 37
        self.board: dict[str, dict[tuple[int, int], list[Any]]] = {r: {} for r in ROADS}
        self.rows = 6
        self.next: dict[str, Any] = {}
        self.current: dict[str, Any] = {}

    # -- folding -------------------------------------------------------------------------

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event (its envelope as the bus sends it)."""
        t, d = event["type"], event["data"]
        self.seq = event["seq"]
        if self.game is None:
            self.game = game_of(t, d)
        if "dealer_on_duty" in d:  # a result names who dealt it
            self.dealer = d["dealer_on_duty"]
        handler = getattr(self, "_" + t.replace(".", "_"), None)
        if handler is not None:
            handler(d, event)

    def _dealer_signed_in(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.dealer = d["dealer"]

    def _dealer_signed_out(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        if self.dealer == d["dealer"]:
            self.dealer = None

    def _table_limits(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        parts = [f"{k.capitalize()} {d[k]:,}".replace(",", " ") for k in ("min", "max") if k in d]
        self.table_limits = " · ".join(parts) or None

    def _set_status(self, status: str, detail: str | None = None) -> None:
        self.status, self.detail = status, detail
        if status != "betting":
            self.closes_at = None

    def _where(self, d: dict[str, Any]) -> None:
        if "shoe" in d:
            self.shoe = d["shoe"]
        if "hand" in d and d.get("demo") is not True:
            self.hand = d["hand"]
        if "round" in d and d["round"] is not None:
            self.hand = d["round"]

    def _alarm_raised(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.alarms[d["id"]] = _pick(d, "id", "kind", "severity", "message") | {"at": ev["time"]}

    def _alarm_cleared(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.alarms.pop(d.get("id", d.get("alarm", "")), None)

    def _betting_opened(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        self.spin = d.get("spin", self.spin)
        self._set_status("betting", "re-spin: bets stand" if d.get("respin") else None)
        closes_in = d.get("closes_in")
        self.closes_at = None if closes_in is None else epoch(ev["time"]) + float(closes_in)
        if self.game not in ("baccarat", "dragon-tiger"):
            self.current = {}  # a shoe game's last hand stays in view until its next card

    def _betting_closed(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        self._set_status("closed")
        if "boxes" in d:  # blackjack: the boxes that bet are the round's
            self.current = {"boxes": {str(b): [[]] for b in d["boxes"]}, "dealer": []}

    def _spin_started(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.spin = d.get("spin", self.spin)
        self.detail = "ball in play"

    def _spin_result(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.spin = d.get("spin", self.spin)
        self.pockets = 38 if d.get("layout") == "double-zero" else 37
        r = _pick(d, "spin", "round", "number", "pocket", "color", "parity", "range", "dozen")
        self.results.appendleft(r)
        self.window.append(r)
        self._set_status("result", f"{d['pocket']} {d['color']}")
        self.round_over()

    def _spin_void(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("void", f"spin void ({d.get('reason')}): bets stand for the re-spin")

    def _shoe_started(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.shoe, self.hand, self.last_hand = d["shoe"], None, False
        self.board = {r: {} for r in ROADS}
        self.next = {}
        self._set_status("waiting", f"shoe {d['shoe']}: burning")

    def _shoe_cut_card(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.last_hand = True

    def _shoe_ended(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("shoe-ended", f"shoe {d['shoe']}: {d['hands']} hands")

    def _shoe_void(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("void", f"shoe void ({d.get('reason')}): a new shoe is needed")

    def _card_dealt(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        box = str(d.get("box"))
        if box in ("burn", "void") or d.get("not_due"):
            return
        self._where(d)
        if self.status in ("closed", "result", "void", "waiting"):
            self._set_status("dealing")
        if self.game == "blackjack":
            cur = self.current.setdefault("boxes", {})
            if box == "dealer":
                # a hole card is published face down (card null): it stays a back here
                self.current.setdefault("dealer", []).append(d.get("card") or "hole")
                return
            hands = cur.setdefault(box, [[]])
            split = int(d.get("split_hand", 0))
            while len(hands) <= split:
                hands.append([])
            hands[split].append(d["card"])
            return
        if self.current.get("hand") != d.get("hand"):
            self.current = {"hand": d.get("hand")}
        self.current.setdefault(box, []).append(d["card"])

    def _dealer_hole_card(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        dealer = self.current.setdefault("dealer", [])
        self.current["dealer"] = [d["card"] if c == "hole" else c for c in dealer]
        self.current["dealer_total"] = d.get("total")

    def _table_expects(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        self.current["expects"] = d.get("text")

    def _box_decision(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.current.setdefault("decisions", {})[str(d["box"])] = d["decision"]

    def _hand_result(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        if self.game == "blackjack":
            r = {"hand": d["hand"], "dealer": d["dealer"], "boxes": d["boxes"]}
            self.current["result"] = r
            self.current["dealer"] = d["dealer"]["cards"]
            self.current.pop("expects", None)
            self.results.appendleft(r)
            self._set_status("result", self._blackjack_line(d))
            return
        sides = ("dragon", "tiger") if "dragon" in d else ("player", "banker")
        keys = (
            ("hand", "winner", "dragon", "tiger", "suited_tie")
            if "dragon" in d
            else (
                "hand",
                "winner",
                "player",
                "banker",
                "player_total",
                "banker_total",
                "natural",
                "player_pair",
                "banker_pair",
            )
        )
        self.results.appendleft(_pick(d, *keys))
        roads = d.get("roads")
        if roads is not None:
            if roads["hands"] == 1:
                self.board = {r: {} for r in ROADS}
            self.rows, self.next = roads["rows"], roads["next"]
            for name in ROADS:
                sq = roads.get(name)
                if sq is not None:
                    self.board[name][(sq[0], sq[1])] = list(sq)
        self.current = {s: list(d[s]) if isinstance(d[s], list) else [d[s]] for s in sides}
        self.current["hand"] = d["hand"]
        self._set_status("result", d["winner"])

    @staticmethod
    def _blackjack_line(d: dict[str, Any]) -> str:
        dealer = d["dealer"]
        if dealer.get("blackjack"):
            return "dealer blackjack"
        return f"dealer {'busts' if dealer.get('bust') else 'has'} {dealer.get('total')}"

    def _hand_demo(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("result", f"demonstration hand: {d.get('winner')}")

    def _hand_void(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        if d.get("demo"):
            return
        self._where(d)
        if self.game == "blackjack" and "dealer" in d:
            # a void turns the hole card over too (hand.void's `hole`): it is published now
            self.current["dealer"] = list(d["dealer"])
        self._set_status("void", f"hand {d['hand']} void ({d.get('reason')}): bets returned")

    def _table_paused(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("paused", f"waiting for a supervisor ({d.get('reason')})")

    def _table_resumed(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("dealing")

    _round_paused = _table_paused

    def _round_resumed(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._set_status("closed")

    def _round_void(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        self._set_status("void", f"round {d['round']} void ({d.get('reason')}): bets returned")

    def _dice_shaking(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        self._set_status("shaking")

    def _dice_reshake(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.detail = f"re-shake ({d.get('reason')}): bets stand"

    def _dice_result(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        r = _pick(d, "round", "faces", "total", "size", "parity", "triple")
        self.results.appendleft(r)
        self.window.append(r)
        size = "triple" if d["triple"] else d["size"]
        self._set_status("result", f"{d['total']} {size}")

    def _round_dice(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        self.current = {"dice": d["faces"], "total": d["total"], "first": d["first"], "tiles": {}}
        self._set_status("dealing")

    def _tile_dealt(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self.current.setdefault("tiles", {}).setdefault(d["position"], []).append(d["tile"])

    def _round_result(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        self._where(d)
        r = _pick(d, "round", "dice", "total", "first", "winners", "pairs")
        r["positions"] = [
            _pick(p, "position", "tiles", "name", "points", "pair", "result")
            for p in d["positions"]
        ]
        self.results.appendleft(r)
        won = ", ".join(d["winners"]) or "none"
        self._set_status("result", f"winners: {won}")

    def _result_corrected(self, d: dict[str, Any], ev: dict[str, Any]) -> None:
        """A supervisor corrected a result (``docs/events.md``, ``result.corrected``): its
        entry shows the corrected result, marked ``corrected``, and a shoe's roads are the
        whole corrected board the event carries."""
        # the corrected result picked as its own event is (on fresh lists), then everything
        # else put back: a correction changes no state of the table in play
        before = dict(self.__dict__)
        self.results, self.window = deque(maxlen=self.results.maxlen), deque()
        self.apply({**ev, "type": d["result_type"], "data": d["result"]})
        fixed = {**self.results[0], "corrected": ev["seq"]}
        self.__dict__.update(before)
        key = next((k for k in ("hand", "spin", "round") if d.get(k) is not None), None)
        for rows in (self.results, self.window):
            for i, r in enumerate(rows):
                if key is not None and r.get(key) == d.get(key):
                    rows[i] = fixed
                    break
        roads = d.get("roads")
        if roads is not None:
            rows_ = roads["rows"]
            self.rows, self.next = rows_, roads["next"]
            self.board = {r: {} for r in ROADS}
            for i, w in enumerate(roads["bead_plate"]):
                self.board["bead_plate"][(i // rows_, i % rows_)] = [i // rows_, i % rows_, w]
            for name in ROADS[1:]:
                for sq in roads.get(name) or ():
                    self.board[name][(sq[0], sq[1])] = list(sq)

    def round_over(self) -> None:
        self.current = {}

    # -- what the page draws -------------------------------------------------------------

    def stats(self) -> dict[str, Any] | None:
        """Roulette's and Sic Bo's counts over the last ``window`` results."""
        return counts(self.game, list(self.window), self.pockets, self.settings.hot)

    def roads(self) -> dict[str, Any] | None:
        if self.game not in ("baccarat", "dragon-tiger"):
            return None
        out: dict[str, Any] = {"rows": self.rows, "next": self.next}
        for name in ROADS:
            out[name] = [sq for _, sq in sorted(self.board[name].items())]
        return out

    def snapshot(self) -> dict[str, Any]:
        """Everything the page draws, as JSON: the page keeps no state of its own."""
        return {
            "table": self.table,
            "game": self.game,
            "journal_id": self.journal_id,
            "seq": self.seq,
            "status": self.status,
            "status_text": STATUS_TEXT.get(self.status, self.status),
            "detail": self.detail,
            "closes_at": self.closes_at,
            "shoe": self.shoe,
            "hand": self.hand,
            "spin": self.spin,
            "last_hand": self.last_hand,
            "limits": self.table_limits or self.settings.limits,
            "dealer": self.dealer,
            "alarms": len(self.alarms),
            "results": list(self.results),
            "current": self.current,
            "roads": self.roads(),
            "stats": self.stats(),
        }
