"""The Mahjong Pai Gow round: betting, the dice, twelve tiles, the result. Pure decide/apply.

The rules of hands are :mod:`daemon.games.paigow.rules`; this module is the
round's procedure. Tiles come from a tile reader (``drivers/tile_line.py``
or any driver speaking :mod:`drivers.tile_readings`), the dice from a
shaker speaking :mod:`drivers.dice_readings` or entered by the dealer.
Every rule names its source (seed 002, 麻雀排九; ``ours`` or ``house
procedure`` where the seeds are silent); ``docs/procedures.md`` lists them.

Phases::

    settling ─open─▶ betting ─close─▶ closed ─dice─▶ dealing ─12th tile─▶ settling
                                                       │  ▲
                     unreadable, foreign or over-count ▼  │ tile entered
                                                      paused
    (a void from any phase of a round goes back to settling)

The round number counts every round the table ever opened and never resets.
The tile set is shuffled before every round (seed 002: 游戏开始前, 需将20张牌洗干净),
so a tile's count in the set is checked within one round.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec

from daemon.games.describe import Describer
from daemon.games.paigow import rules
from daemon.games.paigow.describe import PaiGowDescriber
from daemon.table import (
    REASON,
    Arg,
    Command,
    CommandSpec,
    Decision,
    DeviceReading,
    Input,
    TableState,
    raise_alarm,
    spec,
)
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault
from drivers.tile_readings import TileDrawn, TileUnreadable, tile

Phase = Literal["settling", "betting", "closed", "dealing", "paused"]
IN_ROUND: tuple[Phase, ...] = ("betting", "closed", "dealing", "paused")

R_CLOSE = (
    "house procedure: betting closes before the dice are thrown "
    "(as seed 003 §2.1.6: no more bets before the game is in motion)"
)
R_DICE = (
    "seed 002, 麻雀排九: three dice are thrown; their total, counted around the table from "
    "the banker as 1, decides who receives tiles first"
)
R_DICE_INVALID = "a throw that is not exactly three dice 1–6 is rejected, never used"
R_DICE_EARLY = (
    "house procedure: the dice are thrown after no more bets; a throw while betting is open "
    "does not count and the dice are thrown again once betting closes"
)
R_DICE_AGAIN = "the round's dice are already thrown: a second throw does not count"
R_RESHAKE = (
    "seed 002, 骰寳: stacked or leaning dice are thrown again (荷官随即再拍打三次), "
    "applied to the Pai Gow dice"
)
R_FAULT = (
    "ours: a shaker fault latches until a technician clears it; meanwhile the dealer throws "
    "the dice by hand and enters them (`tablectl dice A B C`)"
)
R_UNREADABLE = (
    "house procedure: a tile is never guessed; a supervisor enters it (as an unreadable card)"
)
R_FOREIGN = (
    "house procedure: the game plays only its set (seed 002: 共有20张牌; house rule `tiles`); "
    "a tile from outside it is a misread or a wrong set"
)
R_COUNT = (
    "house procedure: the set holds each tile only so often (house rule `tiles`); one more in "
    "a round is a misread or a wrong set"
)
R_EXPOSED = (
    "ours, after seed 004 §4 and seed 002 (百家乐, VIP: a card shown during betting voids it): "
    "a tile seen while betting is open voids the round; the tiles are shuffled again"
)
R_NO_DICE = (
    "seed 002, 麻雀排九: the dice decide who receives the first tile, so a tile before the "
    "dice is a misdeal (ours: the round is void and the tiles are shuffled again)"
)
R_EXTRA = (
    "seed 002, 百家乐 (a card drawn when none was needed: 所得出之结果将不受影响), applied to "
    "tiles: a 13th tile is set aside and the result stands"
)
R_ENTERED = "house procedure: the supervisor's entry is the tile; the round goes on in deal order"
R_OUTSIDE = "a tile belongs to a round: none is in play"
R_VOID = "house procedure: a supervisor voids the round; bets are returned"
R_SYSTEM = "seed 003 §2.1.8: a system failure voids the hand in play"
R_BANKER = (
    "seed 002, 麻雀排九: 闲家两张牌跟庄家两张牌一样, 牌例庄胜 (identical hands: the banker wins)"
)

PAUSE_ACTION = (
    "if the reader misread, a supervisor enters the tile it is (`tablectl tile 9p`); "
    "if the tile really is {what}, void the round (`tablectl void round --reason …`), "
    "check the set and shuffle again"
)


class PaiGowRules(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """House rules of a Mahjong Pai Gow table; ``docs/procedures.md`` gives each one's source."""

    #: the set, tile → copies (seed 002: 20 tiles, read as two of each dot tile and two white).
    tiles: dict[str, int] = msgspec.field(default_factory=lambda: dict(rules.DEFAULT_SET))
    #: ``stacks``: each position takes its two tiles in turn (一墩); ``rotation``: one each, twice.
    deal: rules.DealMode = "stacks"
    #: the 0-point hands the seed's table leaves out: ``equal`` or ordered ``by-high-tile``.
    zero_hands: rules.ZeroHands = "equal"
    #: seed 003 §2.1.8: a system failure (daemon restart mid-round) voids the round in play.
    system_failure_voids_round: bool = False
    #: the croupier opens betting ``settle_seconds`` after a result and closes it after
    #: ``betting_seconds`` (None: people or backends open and close betting).
    betting_seconds: Annotated[float, msgspec.Meta(gt=0)] | None = None
    settle_seconds: Annotated[float, msgspec.Meta(ge=0)] = 3.0

    def __post_init__(self) -> None:
        why = rules.tile_set_problem(self.tiles)
        if why is not None:
            raise ValueError(f"tiles: {why}")


class Held(msgspec.Struct, frozen=True):
    """A tile out of the box that is not placed yet: read (``tile``) or not (``code``)."""

    tile: str | None
    code: str
    device: str


class PaiGowState(msgspec.Struct, frozen=True):
    phase: Phase = "settling"
    round: int = 0  # the round in play, or the last one; never resets
    dice: tuple[int, ...] = ()
    order: tuple[str, ...] = ()  # the position of each of the 12 tiles, in deal order
    tiles: tuple[str, ...] = ()  # the tiles placed so far, in deal order
    held: tuple[Held, ...] = ()  # tiles waiting while the round is paused, in order
    paused: str | None = None
    pause_alarm: str | None = None
    alarms: tuple[str, ...] = ()  # alarms about this round: a void settles them
    last: str | None = None  # how the last round ended: "result" or "void"
    reshakes: int = 0  # dice thrown again in this round
    results: int = 0
    voids: int = 0


class PaiGowTable:
    """A Mahjong Pai Gow table: a banker and five player positions (seed 002, 麻雀排九)."""

    name: ClassVar[str] = "paigow"
    Rules: ClassVar[type[PaiGowRules]] = PaiGowRules
    State: ClassVar[type[PaiGowState]] = PaiGowState
    STATE_VERSION: ClassVar[int] = 1
    describe: ClassVar[Describer] = PaiGowDescriber()
    held_help: ClassVar[str] = (
        "it clears when the tile is entered (`tablectl tile 9p`) or the round is voided "
        "(`tablectl void round --reason …`)"
    )

    commands: ClassVar[dict[str, CommandSpec]] = {
        "betting.open": spec("open betting for the next round", "dealer", "supervisor"),
        "betting.close": spec("no more bets: the dice may be thrown", "dealer", "supervisor"),
        "dice.enter": spec(
            "enter the dice thrown by hand: dice 3 5 6",
            "dealer",
            "supervisor",
            words=("dice",),
            args=tuple(Arg(f"die{n}", f"die {n}, 1–6", type=int) for n in (1, 2, 3)),
        ),
        "tile.enter": spec(
            "enter the tile the reader could not read (9p, wd)",
            "supervisor",
            words=("tile",),
            args=(Arg("tile", "the tile: 1p–9p, wd"),),
        ),
        "round.void": spec(
            "void the round in play, bets returned",
            "supervisor",
            words=("void", "round"),
            args=(REASON,),
        ),
    }

    def __init__(self, rules_: PaiGowRules) -> None:
        self.rules = rules_

    def initial(self) -> PaiGowState:
        return PaiGowState()

    def held_alarm(self, g: PaiGowState) -> str | None:
        """The alarm a paused round waits on, which only its own commands may settle."""
        return g.pause_alarm if g.phase == "paused" else None

    def summary(self, g: PaiGowState) -> dict[str, Any]:
        """The game state as a technician reads it (``tablectl status``; the simulator's resume)."""
        return {
            "phase": g.phase,
            "text": self.phase_text(g),
            "round": g.round,
            "dice": list(g.dice),
            "tiles": list(g.tiles),
            "tiles_dealt": len(g.tiles),
            "next_position": g.order[len(g.tiles)] if len(g.tiles) < len(g.order) else None,
            "paused": g.paused,
            "results": g.results,
            "voids": g.voids,
        }

    @staticmethod
    def phase_text(g: PaiGowState) -> str:
        return {
            "settling": "between rounds",
            "betting": f"taking bets for round {g.round}",
            "closed": f"round {g.round}: no more bets, waiting for the dice",
            "dealing": f"round {g.round}: dealing tile {len(g.tiles) + 1} of {rules.ROUND_TILES}",
            "paused": f"round {g.round} paused ({g.paused}) until a supervisor enters the tile "
            "or voids the round",
        }[g.phase]

    # ====================================================================== decide

    def decide(self, t: TableState, inp: Input, d: Decision) -> None:
        g: PaiGowState = t.game
        if isinstance(inp, DeviceReading):
            r, dev = inp.reading, inp.device
            if isinstance(r, TileDrawn):
                self._tile(t, g, d, Held(r.tile, r.tile, dev))
            elif isinstance(r, TileUnreadable):
                self._tile(t, g, d, Held(None, r.code, dev))
            elif isinstance(r, DiceShaking):
                if g.phase == "betting":
                    d.add("betting.closed", round=g.round, by=dev, source="shaker", rule=R_CLOSE)
            elif isinstance(r, DiceResult):
                self._dice(t, g, d, list(r.faces), device=dev)
            elif isinstance(r, DiceNotFlat):
                if g.phase in ("betting", "closed"):
                    d.add(
                        "dice.reshake",
                        round=g.round,
                        reshake=g.reshakes + 1,
                        reason=r.reason,
                        code=r.code,
                        device=dev,
                        rule=R_RESHAKE,
                    )
            elif isinstance(r, ShakerFault):
                self._fault(t, g, d, dev, r)
        elif isinstance(inp, Command):
            self._command(t, g, inp, d)

    def on_restart(self, t: TableState, d: Decision) -> None:
        """seed 003 §2.1.8: when the house says so, a system failure voids the round in play."""
        g: PaiGowState = t.game
        if self.rules.system_failure_voids_round and g.phase in ("closed", "dealing", "paused"):
            self._void(d, g, reason="system-failure", by="table", rule=R_SYSTEM)

    # -- commands ----------------------------------------------------------------------

    def _command(self, t: TableState, g: PaiGowState, c: Command, d: Decision) -> None:
        n, by = c.name, c.actor
        if n == "betting.open":
            if g.phase != "settling":
                d.refused = f"cannot open betting: the table is {self.phase_text(g)}"
                return
            # closes_in: the croupier closes betting this long after this event's time
            d.add("betting.opened", round=g.round + 1, by=by, closes_in=self.rules.betting_seconds)
        elif n == "betting.close":
            if g.phase != "betting":
                d.refused = f"betting is not open (the table is {self.phase_text(g)})"
                return
            d.add("betting.closed", round=g.round, by=by, source=c.source)
        elif n == "dice.enter":
            dice = [c.args.get(f"die{n}") for n in (1, 2, 3)]
            faces = _faces(
                c.args["faces"] if "faces" in c.args else [x for x in dice if x is not None]
            )
            why = "no faces given" if faces is None else rules.dice_problem(faces)
            if why is not None:
                d.refused = f"not a throw of three dice: {why} (e.g. `tablectl dice 3 5 6`)"
                return
            assert faces is not None
            if g.phase != "closed":
                d.refused = (
                    f"the dice are entered after no more bets (the table is {self.phase_text(g)})"
                )
                return
            self._dice(t, g, d, faces, entered_by=by)
        elif n == "tile.enter":
            self._enter(t, g, c, d)
        elif n == "round.void":
            if g.phase not in IN_ROUND:
                d.refused = f"no round is in play to void (the table is {self.phase_text(g)})"
                return
            self._void(d, g, reason=str(c.args.get("reason") or "supervisor"), by=by, rule=R_VOID)

    def _enter(self, t: TableState, g: PaiGowState, c: Command, d: Decision) -> None:
        if g.phase != "paused":
            d.refused = "no tile is waiting for manual entry"
            return
        text = str(c.args.get("tile", ""))
        entered = tile(text)
        if entered is None:
            d.refused = f"{text!r} is not a tile (dots are 1p–9p, the white dragon is wd)"
            return
        why = self._not_playable(g, entered)
        if why is not None:
            d.refused = f"{entered} cannot be placed: {why}; if that is the tile, void the round"
            return
        d.add(
            "round.resumed",
            round=g.round,
            by=c.actor,
            tile=entered,
            alarm=g.pause_alarm,
            rule=R_ENTERED,
        )
        if g.pause_alarm is not None and g.pause_alarm in t.alarms:
            d.add("alarm.cleared", id=g.pause_alarm, by=c.actor, reason="tile entered")
        first = msgspec.structs.replace(g.held[0], tile=entered)
        for i, h in enumerate((first, *g.held[1:])):
            now: TableState = d.state()
            self._tile(now, now.game, d, h, entered_by=c.actor if i == 0 else None)

    # -- the dice ----------------------------------------------------------------------

    def _dice(
        self,
        t: TableState,
        g: PaiGowState,
        d: Decision,
        faces: list[int],
        *,
        device: str | None = None,
        entered_by: str | None = None,
    ) -> None:
        why = rules.dice_problem(faces)
        if g.phase == "closed" and why is None:
            first = rules.first_position(faces)
            d.add(
                "round.dice",
                round=g.round,
                faces=faces,
                total=sum(faces),
                first=first,
                deal_order=list(rules.deal_order(first, self.rules.deal)),
                device=device,
                entered_by=entered_by,
                rule=R_DICE,
            )
            return
        src = device or entered_by or "?"
        if g.phase == "closed":
            kind, reason, rule, sev = "dice-result-invalid", "invalid", R_DICE_INVALID, "warning"
            action = "the dice are thrown again; if it repeats, check the shaker's recognition"
        elif g.phase == "betting":
            kind, reason, rule, sev = (
                "dice-before-betting-closed",
                "betting-open",
                R_DICE_EARLY,
                "warning",
            )
            action = "not counted: the dice are thrown again after no more bets"
        elif g.phase in ("dealing", "paused"):
            kind, reason, rule, sev = (
                "dice-already-thrown",
                "already-thrown",
                R_DICE_AGAIN,
                "warning",
            )
            action = "not counted; the round goes on with its first throw"
        else:
            kind, reason, rule, sev = "dice-outside-round", "no-round", R_OUTSIDE, "warning"
            action = "not counted; check who threw the dice"
        aid = raise_alarm(
            t,
            d,
            kind,
            f"{src} reported the dice {faces}" + (f": {why}" if why else ""),
            rule=rule,
            action=action,
            severity=sev,
            device=device,
            round=g.round if g.phase in IN_ROUND else None,
            faces=faces,
        )
        d.add(
            "dice.rejected",
            round=g.round if g.phase in IN_ROUND else None,
            device=device,
            faces=faces,
            reason=reason,
            detail=why or "",
            alarm=aid,
            rule=rule,
        )

    def _fault(self, t: TableState, g: PaiGowState, d: Decision, dev: str, r: ShakerFault) -> None:
        active = next(
            (a.id for a in t.alarms.values() if a.kind == "device-fault" and a.device == dev),
            None,
        )
        alarm = active or raise_alarm(
            t,
            d,
            "device-fault",
            f"{dev}: {r.meaning} (code {r.code})",
            rule=R_FAULT,
            action="throw the dice by hand and enter them (`tablectl dice A B C`); a technician "
            "repairs the shaker and clears this alarm",
            device=dev,
            code=r.code,
        )
        d.add(
            "device.fault",
            device=dev,
            code=r.code,
            meaning=r.meaning,
            alarm=alarm,
            round=g.round if g.phase in IN_ROUND else None,
        )

    # -- tiles -------------------------------------------------------------------------

    def _not_playable(self, g: PaiGowState, name: str) -> str | None:
        """Why a read tile cannot be placed in this round (foreign, or one too many), or None."""
        copies = self.rules.tiles.get(name, 0)
        if copies == 0:
            return "it is not in this table's set"
        if g.tiles.count(name) >= copies:
            return f"the set holds {copies} and this round has had {g.tiles.count(name)}"
        return None

    def _tile(
        self, t: TableState, g: PaiGowState, d: Decision, h: Held, *, entered_by: str | None = None
    ) -> None:
        what = h.tile or f"an unreadable tile ({h.code!r})"
        if g.phase == "paused":
            # deal order decides: a tile read while an earlier one waits queues behind it
            d.add(
                "tile.held",
                round=g.round,
                tile=h.tile,
                code=h.code,
                device=h.device,
                queued=len(g.held) + 1,
                reason="waiting for the tile before it",
            )
            return
        if g.phase in ("betting", "closed"):
            early = g.phase == "betting"
            kind = "tile-before-betting-closed" if early else "tile-before-dice"
            rule = R_EXPOSED if early else R_NO_DICE
            aid = raise_alarm(
                t,
                d,
                kind,
                f"{what} was read "
                + ("while betting was open" if early else "before the dice were thrown")
                + f" for round {g.round}",
                rule=rule,
                action="the round is void and its bets returned; shuffle the tiles again, then "
                "clear this alarm",
                device=h.device,
                round=g.round,
            )
            self._rejected(d, g, h, "betting-open" if early else "before-dice", aid, rule)
            self._void(d, g, reason=kind, by="table", rule=rule, keep=aid)
            return
        if g.phase == "settling":
            extra = g.last == "result"
            kind = "extra-tile" if extra else "tile-outside-round"
            aid = raise_alarm(
                t,
                d,
                kind,
                f"{what} was read after round {g.round} "
                + ("had its 12 tiles" if extra else "ended")
                if g.round
                else f"{what} was read before any round",
                rule=R_EXTRA if extra else R_OUTSIDE,
                action="set the tile aside; the result stands"
                if extra
                else "set the tile aside; check the dealer's tiles",
                severity="warning",
                device=h.device,
                round=g.round if extra else None,
            )
            self._rejected(
                d, g, h, "13th-tile" if extra else "no-round", aid, R_EXTRA if extra else R_OUTSIDE
            )
            return
        # dealing
        n = len(g.tiles) + 1
        if h.tile is None:
            self._pause(
                t,
                d,
                g,
                h,
                "tile-unreadable",
                f"tile {n} of round {g.round} could not be read (the reader sent {h.code!r})",
                R_UNREADABLE,
                "enter the tile with `tablectl tile <TILE>` (e.g. 9p, wd), or void the round",
            )
            return
        why = self._not_playable(g, h.tile)
        if why is not None:
            foreign = self.rules.tiles.get(h.tile, 0) == 0
            self._pause(
                t,
                d,
                g,
                h,
                "tile-not-in-set" if foreign else "tile-over-count",
                f"tile {n} of round {g.round} read as {h.tile}: {why}",
                R_FOREIGN if foreign else R_COUNT,
                PAUSE_ACTION.format(what="foreign" if foreign else "one too many"),
            )
            return
        position = g.order[n - 1]
        d.add(
            "tile.dealt",
            round=g.round,
            tile=h.tile,
            n=n,
            position=position,
            device=h.device,
            entered_by=entered_by,
        )
        if n == rules.ROUND_TILES:
            self._result(d, g, (*g.tiles, h.tile))

    def _pause(
        self,
        t: TableState,
        d: Decision,
        g: PaiGowState,
        h: Held,
        kind: str,
        message: str,
        rule: str,
        action: str,
    ) -> None:
        aid = raise_alarm(
            t,
            d,
            kind,
            message,
            rule=rule,
            action=action,
            device=h.device,
            round=g.round,
            tile=h.tile,
            code=h.code,
        )
        d.add(
            "round.paused",
            round=g.round,
            reason=kind,
            alarm=aid,
            n=len(g.tiles) + 1,
            tile=h.tile,
            code=h.code,
            device=h.device,
            rule=rule,
        )

    @staticmethod
    def _rejected(d: Decision, g: PaiGowState, h: Held, reason: str, alarm: str, rule: str) -> None:
        d.add(
            "tile.rejected",
            # the round it came in, or (a 13th tile) the round whose result it followed
            round=g.round if g.phase in IN_ROUND or reason == "13th-tile" else None,
            tile=h.tile,
            code=h.code,
            device=h.device,
            reason=reason,
            alarm=alarm,
            rule=rule,
        )

    def _result(self, d: Decision, g: PaiGowState, tiles: tuple[str, ...]) -> None:
        hands: dict[str, list[str]] = {p: [] for p in rules.POSITIONS}
        for pos, tl in zip(g.order, tiles, strict=True):
            hands[pos].append(tl)
        d.add(
            "round.result",
            round=g.round,
            dice=list(g.dice),
            total=sum(g.dice),
            first=g.order[0],
            tiles=list(tiles),
            **rules.verdict(hands, self.rules.zero_hands),
            rule=R_BANKER,
        )

    def _void(
        self,
        d: Decision,
        g: PaiGowState,
        *,
        reason: str,
        by: str,
        rule: str,
        keep: str | None = None,
    ) -> None:
        about: tuple[str, ...] = d.state().game.alarms
        d.add(
            "round.void",
            round=g.round,
            reason=reason,
            by=by,
            rule=rule,
            dice=list(g.dice),
            tiles=list(g.tiles),
        )
        active = d.state().alarms
        for a in about:
            if a != keep and a in active:
                d.add("alarm.cleared", id=a, by=by, reason="round voided")

    # ======================================================================= apply

    def apply(self, g: PaiGowState, type_: str, data: dict[str, Any]) -> PaiGowState:
        rep = msgspec.structs.replace
        if type_ == "betting.opened":
            return PaiGowState(
                round=data["round"], phase="betting", results=g.results, voids=g.voids
            )
        if type_ == "betting.closed":
            return rep(g, phase="closed")
        if type_ == "dice.reshake":
            return rep(g, reshakes=g.reshakes + 1)
        if type_ == "round.dice":
            return rep(
                g, phase="dealing", dice=tuple(data["faces"]), order=tuple(data["deal_order"])
            )
        if type_ == "tile.dealt":
            return rep(g, tiles=(*g.tiles, data["tile"]))
        if type_ == "round.paused":
            held = Held(data["tile"], data["code"], data["device"])
            return rep(
                g, phase="paused", paused=data["reason"], pause_alarm=data["alarm"], held=(held,)
            )
        if type_ == "tile.held":
            return rep(g, held=(*g.held, Held(data["tile"], data["code"], data["device"])))
        if type_ == "round.resumed":
            return rep(g, phase="dealing", paused=None, pause_alarm=None, held=())
        if type_ == "round.result":
            return rep(
                g, phase="settling", last="result", results=g.results + 1, alarms=(), held=()
            )
        if type_ == "round.void":
            return rep(
                g,
                phase="settling",
                last="void",
                voids=g.voids + 1,
                paused=None,
                pause_alarm=None,
                alarms=(),
                held=(),
            )
        if (
            type_ == "alarm.raised"
            and g.phase in IN_ROUND
            and data.get("round") is not None
            and data["round"] == g.round
        ):
            return rep(g, alarms=(*g.alarms, data["id"]))
        return g


def _faces(raw: object) -> list[int] | None:
    """``"3 5 6"``, ``"3,5,6"`` or a list, as typed by a dealer; None when it is no numbers."""
    parts = raw if isinstance(raw, list) else str(raw).replace(",", " ").split()
    try:
        return [int(p) for p in parts] if parts else None
    except (TypeError, ValueError):
        return None
