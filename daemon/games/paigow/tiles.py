"""Pai Gow's tiles: exactly 12 in deal order, each to the position the dice made next (seed 002).

A tile read while the round is paused queues behind the one that waits;
an unreadable tile, a tile not in the set or one beyond its count pauses
the round for a supervisor's entry (``tablectl tile 9p``) or a void; a
tile before the dice voids the round; a 13th tile is set aside and the
result stands. The twelfth tile settles the round: every position against
the banker (:func:`daemon.games.paigow.rules.verdict`). Holding, pausing and
resuming is the procedure a shoe's cards follow too (:mod:`daemon.procedures.hold`):
this module gives it the tiles' events, their fields and ``decide_piece``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from daemon.games.paigow import rules
from daemon.games.paigow.state import (
    IN_ROUND,
    PAUSE_ACTION,
    R_BANKER,
    R_COUNT,
    R_ENTERED,
    R_EXPOSED,
    R_EXTRA,
    R_FOREIGN,
    R_NO_DICE,
    R_OUTSIDE,
    R_UNREADABLE,
    Held,
    PaiGowRules,
    PaiGowState,
)
from daemon.procedures import hold
from daemon.procedures.hold import READ, HoldEvents, Origin
from daemon.procedures.paytable import in_force
from daemon.procedures.round import RoundGame
from daemon.table import Command, Decision, TableState, raise_alarm
from drivers.tile_readings import tile


class PaiGowTiles(RoundGame):
    """Each tile read, placed in deal order or stopped with the procedure that settles it."""

    rules: PaiGowRules
    hold_events: ClassVar[HoldEvents] = HoldEvents("tile.held", "round.paused", "round.resumed")

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
        data = {"round": g.round, "by": c.actor, "tile": entered, "rule": R_ENTERED}
        first = msgspec.structs.replace(g.held[0], tile=entered)
        hold.resume(
            self, t, g, d, data, by=c.actor, reason="tile entered", first=first, entered=True
        )

    def _not_playable(self, g: PaiGowState, name: str) -> str | None:
        """Why a read tile cannot be placed in this round (foreign, or one too many), or None."""
        copies = self.rules.tiles.get(name, 0)
        if copies == 0:
            return "it is not in this table's set"
        if g.tiles.count(name) >= copies:
            return f"the set holds {copies} and this round has had {g.tiles.count(name)}"
        return None

    def held_data(self, g: PaiGowState, h: Held, queued: int) -> dict[str, Any]:
        """``tile.held``: the tile as read, ``queued``-th in deal order."""
        return {
            "round": g.round,
            **msgspec.to_builtins(h),
            "queued": queued,
            "reason": "waiting for the tile before it",
        }

    def decide_piece(
        self, t: TableState, g: PaiGowState, d: Decision, h: Held, how: Origin = READ
    ) -> None:
        """One tile read (or held, then entered): placed in deal order, held behind a tile that
        waits, paused for a supervisor, or set aside."""
        if hold.queued(self, g, d, h):
            return
        what = h.tile or f"an unreadable tile ({h.code!r})"
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
            self.void_round(d, g, reason=kind, by="table", rule=rule, keep=aid)
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
        read = {"round": g.round, "tile": h.tile, "device": h.device}
        by = how.by if how.entered else None
        d.add("tile.dealt", **read, n=n, position=position, entered_by=by)
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
        where = {"round": g.round, "tile": h.tile, "code": h.code}
        data = {"reason": kind, "n": len(g.tiles) + 1, "device": h.device, "rule": rule, **where}
        hold.pause(
            self, t, d, kind, message, data, rule=rule, action=action, device=h.device, **where
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
            paytable=in_force(self.name, self.rules),
        )
