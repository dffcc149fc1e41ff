"""The Pai Gow round through the real table (pure, no I/O): the dice from a shaker or entered,
the tile procedures, restarts; the tile-line protocol; the tile simulator following the table."""

from __future__ import annotations

import msgspec
import pytest
from table_harness import Evs, TableHarness, of, types

from daemon.games import find as game_class
from daemon.games.paigow.table import PaiGowRules, PaiGowTable
from daemon.runtime.validate import check
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault
from drivers.readings import Malformed
from drivers.tile_line import TileLineOptions, TileLineProtocol
from drivers.tile_readings import TileDrawn, TileUnreadable

# a round's 12 tiles in deal order, and the dice 2-2-3 = 7: the banker is first
TILES = ["wd", "9p", "1p", "8p", "2p", "7p", "3p", "6p", "4p", "5p", "wd", "8p"]


class Harness(TableHarness):
    device = "tiles"

    def __init__(self, **rules) -> None:
        super().__init__(PaiGowTable(msgspec.convert(rules, PaiGowRules)), ["tiles", "shaker"])

    def closed(self) -> None:
        self.cmd("betting.open", role="dealer")
        self.cmd("betting.close", role="dealer")

    def tile(self, t: str) -> Evs:
        return self.read(TileDrawn(tile=t))

    def dice(self, *faces: int) -> Evs:
        return self.read(DiceResult(faces=faces), "shaker")

    def deal(self, tiles: list[str]) -> Evs:
        out: Evs = []
        for t in tiles:
            out += self.tile(t)
        return out


def test_registered_and_rules_checked():
    assert game_class("paigow") is PaiGowTable
    errors: list[str] = []
    check({"tiles": {"1p": 2, "rd": 2}}, PaiGowRules, "game", errors)
    assert errors and "rd" in errors[0] and "not ranked" in errors[0]
    errors = []
    check({"deal": "clockwise"}, PaiGowRules, "game", errors)
    assert errors == ['game.deal: "clockwise" is not one of "stacks", "rotation"']


def test_a_round_from_the_shaker():
    h = Harness()
    h.cmd("betting.open", role="dealer")
    evs = h.read(DiceShaking(), "shaker")  # the dice move: no more bets
    assert of(evs, "betting.closed")[0]["source"] == "shaker"
    evs = h.dice(2, 2, 3)
    dice = of(evs, "round.dice")[0]
    assert dice["first"] == "banker" and dice["total"] == 7 and dice["device"] == "shaker"
    evs = h.deal(TILES)
    assert types(evs).count("tile.dealt") == 12 and types(evs)[-1] == "round.result"
    res = of(evs, "round.result")[0]
    rows = {r["position"]: r for r in res["positions"]}
    assert (
        rows["banker"]["tiles"] == ["wd", "9p"] and rows["banker"]["name"] == "9 points (white-9)"
    )
    assert rows["player5"]["tiles"] == ["wd", "8p"]
    assert res["winners"] == [] and res["dice"] == [2, 2, 3]  # white-9 beats every 9 and 8
    assert h.g.phase == "settling" and h.g.results == 1


def test_dice_not_flat_invalid_and_fault():
    h = Harness()
    h.closed()
    assert types(h.read(DiceNotFlat(reason="stacked", code=1), "shaker")) == ["dice.reshake"]
    evs = h.dice(0, 2, 7)
    assert types(evs) == ["alarm.raised", "dice.rejected"]
    assert of(evs, "dice.rejected")[0]["reason"] == "invalid" and h.g.phase == "closed"
    evs = h.read(ShakerFault(code=3, meaning="motor"), "shaker")
    assert of(evs, "alarm.raised")[0]["kind"] == "device-fault"
    # the round goes on: the dealer throws by hand and enters the dice
    h.cmd("dice.enter", role="dealer", faces="6 6 6")
    assert h.refused is None and h.g.phase == "dealing" and h.g.order[0] == "player5"
    evs = h.dice(1, 2, 3)  # a late throw does not count
    assert of(evs, "dice.rejected")[0]["reason"] == "already-thrown"


def test_dice_entry_is_refused_when_it_cannot_count():
    h = Harness()
    h.cmd("betting.open", role="dealer")
    h.cmd("dice.enter", role="dealer", faces="3 4 5")
    assert "after no more bets" in (h.refused or "")
    h.cmd("betting.close", role="dealer")
    h.cmd("dice.enter", role="dealer", faces="3 4")
    assert "2 face(s), expected 3" in (h.refused or "")
    h.cmd("dice.enter", role="viewer", faces="3 4 5")
    assert "needs the dealer or supervisor role" in (h.refused or "")


def test_dice_during_betting_do_not_count():
    h = Harness()
    h.cmd("betting.open", role="dealer")
    evs = h.dice(3, 3, 3)
    assert of(evs, "dice.rejected")[0]["reason"] == "betting-open" and h.g.phase == "betting"


def test_unreadable_tile_pauses_and_later_tiles_wait_in_order():
    h = Harness()
    h.closed()
    h.cmd("dice.enter", role="dealer", faces="2 2 3")
    h.deal(TILES[:3])
    evs = h.read(TileUnreadable(code="ERR"))
    assert types(evs) == ["alarm.raised", "round.paused"] and h.g.phase == "paused"
    assert types(h.deal(TILES[4:6])) == ["tile.held", "tile.held"]
    alarm = of(evs, "alarm.raised")[0]["id"]
    h.cmd("alarm.clear", id=alarm, reason="x")
    assert "clears when the tile is entered" in (h.refused or "")
    h.cmd("tile.enter", role="dealer", tile="8p")
    assert "supervisor" in (h.refused or "")
    h.cmd("tile.enter", tile="zz")
    assert "not a tile" in (h.refused or "")
    evs = h.cmd("tile.enter", tile="8P")
    assert types(evs)[:3] == ["operator.command", "round.resumed", "alarm.cleared"]
    dealt = of(evs, "tile.dealt")
    assert [d["tile"] for d in dealt] == ["8p", "2p", "7p"] and dealt[0]["entered_by"] == "pit"
    assert [d["n"] for d in dealt] == [4, 5, 6] and h.g.phase == "dealing"
    assert types(h.deal(TILES[6:]))[-1] == "round.result"


@pytest.mark.parametrize(
    ("read", "kind"),
    [("rd", "tile-not-in-set"), ("1m", "tile-not-in-set"), ("wd", "tile-over-count")],
)
def test_a_foreign_tile_or_one_too_many_pauses_for_a_supervisor(read, kind):
    h = Harness()
    h.closed()
    h.cmd("dice.enter", role="dealer", faces="2 2 3")
    h.deal(TILES[:11])  # both white tiles are out by tile 11
    evs = h.tile(read)
    assert of(evs, "alarm.raised")[0]["kind"] == kind and h.g.phase == "paused"
    assert of(evs, "round.paused")[0]["n"] == 12
    h.cmd("tile.enter", tile="wd")  # a third white cannot be entered either
    assert h.refused is not None and "cannot be placed" in h.refused
    evs = h.cmd("round.void", reason="set checked")
    assert "round.void" in types(evs) and "alarm.cleared" in types(evs)
    assert h.g.phase == "settling" and h.g.voids == 1 and not h.state.alarms


def test_tiles_out_of_turn():
    h = Harness()
    evs = h.tile("1p")
    assert of(evs, "alarm.raised")[0]["kind"] == "tile-outside-round"
    h.cmd("betting.open", role="dealer")
    evs = h.tile("1p")
    assert types(evs) == ["alarm.raised", "tile.rejected", "round.void"]
    assert of(evs, "round.void")[0]["reason"] == "tile-before-betting-closed"
    h.closed()
    evs = h.read(TileUnreadable(code="ERR"))
    assert of(evs, "round.void")[0]["reason"] == "tile-before-dice"
    h.closed()
    h.cmd("dice.enter", role="dealer", faces="1 1 1")
    h.deal(TILES)
    evs = h.tile("3p")
    assert of(evs, "alarm.raised")[0]["kind"] == "extra-tile"
    rej = of(evs, "tile.rejected")[0]
    assert rej["reason"] == "13th-tile" and rej["round"] == 3 and h.g.results == 1


@pytest.mark.parametrize(
    ("zero", "winners"),
    [("equal", ["player1"]), ("by-high-tile", ["player1", "player2", "player3", "player4"])],
)
def test_rotation_deal_and_zero_hands_house_rules(zero, winners):
    h = Harness(deal="rotation", zero_hands=zero)
    h.closed()
    h.cmd("dice.enter", role="dealer", faces="1 1 1")  # 3: player2 first
    # one tile each from player2 round the table, then a second round
    tiles = ["1p", "2p", "3p", "4p", "4p", "5p", "9p", "8p", "7p", "6p", "6p", "5p"]
    res = of(h.deal(tiles), "round.result")[0]
    rows = {r["position"]: r for r in res["positions"]}
    assert rows["player2"]["tiles"] == ["1p", "9p"] and rows["banker"]["tiles"] == ["4p", "6p"]
    assert rows["player1"]["name"] == "pair of 5s"
    assert res["winners"] == winners  # player5 holds 4-6 too: identical, the banker wins


def test_a_crash_voids_the_round_when_the_house_says_so():
    h = Harness(system_failure_voids_round=True)
    h.closed()
    h.cmd("dice.enter", role="dealer", faces="2 2 3")
    h.deal(TILES[:5])
    h.state = msgspec.structs.replace(h.state, running=True)  # the last run never stopped
    d = h.table.started(h.state, {"version": "0.1.0", "pid": 1, "recovered_seq": 5})
    assert [x.type for x in d.drafts] == ["daemon.started", "round.void"]
    assert d.drafts[1].data["reason"] == "system-failure" and len(d.drafts[1].data["tiles"]) == 5


def test_state_survives_a_snapshot_and_rebuilds_from_the_journaled_events():
    h = Harness()
    h.closed()
    h.cmd("dice.enter", role="dealer", faces="2 2 3")
    h.deal(TILES[:3])
    h.read(TileUnreadable(code="ERR07"))
    h.read(TileDrawn(tile="5p"))  # held behind the unreadable one
    assert h.snapshot() == h.state
    h.assert_rebuilds()
    h.cmd("tile.enter", tile="4p")
    h.deal(TILES[5:12])
    assert h.g.phase == "settling" and h.g.last == "result"
    h.cmd("betting.open", role="dealer")
    h.cmd("round.void", reason="test")
    assert h.g.voids == 1 and h.g.last == "void"
    h.assert_rebuilds()


# -- the tile-line protocol ---------------------------------------------------------------------


def test_tile_codes():
    p = TileLineProtocol(TileLineOptions(codes={"T10": "wd"}))
    got = p.feed(b"9p\r\n5Z\r\nt10\r\nERR07\r\nXYZ1\r\n1M\r\nhello, world!\r\n\xff\r\n", 0.0)
    assert [type(r).__name__ for r in got] == [
        "TileDrawn",
        "TileDrawn",
        "TileDrawn",
        "TileUnreadable",
        "TileUnreadable",
        "TileDrawn",
        "Malformed",
        "Malformed",
    ]
    assert [r.tile for r in got if isinstance(r, TileDrawn)] == ["9p", "wd", "wd", "1m"]
    assert p.feed(b"7", 0.0) == [] and isinstance(p.eof()[0], Malformed)


def test_repeats_are_dropped_inside_the_window_only():
    p = TileLineProtocol(TileLineOptions(drop_repeats=True, repeat_window=0.3))
    assert len(p.feed(b"3p\r\n", 0.0) + p.feed(b"3p\r\n", 0.1) + p.feed(b"3p\r\n", 1.0)) == 2
    assert p.stats() == {"repeats_dropped": 1}


def test_tile_options_are_checked():
    errors: list[str] = []
    check({"codes": {"T1": "joker"}}, TileLineOptions, "options", errors)
    assert errors and "not tiles: T1 = joker" in errors[0]


# -- the tile simulator ------------------------------------------------------------------------


class _Ev:
    def __init__(self, type_: str, data: dict) -> None:
        self.type, self.data = type_, data


class _Link:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines += [x for x in data.split(b"\\r\\n") if x]


def test_the_simulator_deals_a_round_and_resumes_after_a_restart():
    from drivers.sim.tiles import TileSimulator

    def fresh() -> tuple[TileSimulator, _Link]:
        sim, link = TileSimulator(seed=4, pace=0), _Link()
        sim.attach(link)
        return sim, link

    sim, link = fresh()
    sim.on_events([_Ev("betting.opened", {"round": 3}), _Ev("round.dice", {"round": 3})])
    dealt = []
    while sim._want:
        sim._want -= 1
        sim.draw()
        dealt.append(link.lines[-1].decode())
        n = len(dealt)
        sim.on_events(
            [_Ev("tile.dealt", {"n": n})] + ([_Ev("round.result", {})] if n == 12 else [])
        )
    assert len(dealt) == 12 and sorted(dealt) != dealt  # a shuffle
    assert all(dealt.count(t) <= 2 for t in dealt)  # of the 20-tile set
    # a daemon restart after 5 tiles: the simulator deals the same round's 6th tile next
    again, link2 = fresh()
    again.resume({"round": 3, "phase": "dealing", "tiles_dealt": 5})
    assert again._want == 1
    again._want = 0
    again.draw()
    assert link2.lines == [dealt[5].encode()]
