"""The display's fold (views/display/state.py) over the captures, its boundary and its options.

Fast, no browser: the roads a capture's shoe leaves equal the board ``tablectl monitor``
draws from the same results (daemon/tools/roads_view.py); roulette's statistics equal a
count made here; no snapshot of a Blackjack shoe shows a hole card before its reveal; bad
options get one clear sentence. (That the views import nothing of the daemon's:
tests/test_imports.py.)
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from daemon.tools.roads_view import Board
from views.display.app import main
from views.display.state import ROADS, DisplayState, Settings

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "tests" / "captures"


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "capture",
    ["dragon-tiger/full-shoe", "shoe-line/full-shoe-first-card-burn", "shoe-line/misdeals"],
)
def test_roads_are_the_monitors_board(capture: str):
    evs = events(CAPTURES / f"{capture}.expected.jsonl")
    s, board = DisplayState("t"), Board()
    checked = 0
    for e in evs:
        s.apply(e)
        if e["type"] == "shoe.started":
            board = Board()
        if e["type"] == "hand.result":
            board.set(e["data"]["roads"])
            want, got = board.roads(), s.roads()
            assert got is not None
            for name in ROADS[1:]:
                assert sorted(map(list, got[name])) == sorted(map(list, want[name])), name
            assert [sq[2] for sq in got["bead_plate"]] == want["bead_plate"]
            assert got["next"] == want["next"]
            checked += 1
    assert checked >= 3


def spin(seq: int, n: int) -> dict:
    red = {1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36}
    data = {
        "spin": seq,
        "round": seq,
        "number": n,
        "pocket": str(n),
        "color": "green" if n == 0 else "red" if n in red else "black",
        "parity": None if n == 0 else "odd" if n % 2 else "even",
        "layout": "single-zero",
    }
    return {"seq": seq, "type": "spin.result", "data": data, "time": "2026-12-05T10:00:00.000Z"}


def test_roulette_hot_cold_over_the_window():
    numbers = [7, 7, 0, 13, 7, 22, 13, 36, 1, 2, 7, 13, 13, 5]
    s = DisplayState("r", Settings(window=10, hot=3, last=5))
    for i, n in enumerate(numbers, 1):
        s.apply(spin(i, n))
    st = s.stats()
    assert st is not None
    w = numbers[-10:]
    counts = Counter(w)
    assert st["window"] == 10
    assert st["hot"] == [
        [n, counts[n]] for n in sorted(range(37), key=lambda n: (-counts[n], n))[:3]
    ]
    assert st["cold"] == [[n, 0] for n in (0, 3, 4)]  # 0 left the window
    assert st["red"] + st["black"] + st["green"] == 10
    assert st["green"] == w.count(0)
    assert [r["number"] for r in s.snapshot()["results"]] == numbers[::-1][:5]


@pytest.mark.parametrize("capture", ["whole-shoe", "whole-shoe-2", "dealer-errors"])
def test_no_snapshot_shows_a_hole_card_before_its_reveal(capture: str):
    evs = events(CAPTURES / "blackjack" / f"{capture}.expected.jsonl")
    s = DisplayState("bj")
    hole_open = False
    seen = 0
    for e in evs:
        s.apply(e)
        d = e["data"]
        if e["type"] == "card.dealt" and d.get("hole"):
            hole_open = True
        if e["type"] in ("dealer.hole_card", "hand.void"):
            hole_open = False
        if hole_open:
            dealer = s.snapshot()["current"]["dealer"]
            assert dealer[1] == "hole", (e["seq"], dealer)
            seen += 1
    assert seen > 0


def test_a_new_journal_starts_afresh():
    s = DisplayState("r")
    s.apply(spin(1, 7))
    s.reset("another")
    assert s.snapshot()["results"] == [] and s.journal_id == "another"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--table", "t"], "no --publish, --replay: give them or --from-table CONFIG"),
        (["--from-table", "/nonexistent.toml"], "--from-table /nonexistent.toml"),
        (
            ["--table", "t", "--publish", "tcp://a:1", "--replay", "tcp://a:2", "--listen", "8080"],
            "--listen '8080': expected HOST:PORT",
        ),
        (
            ["--table", "t", "--publish", "tcp://a:1", "--replay", "tcp://a:2", "--window", "0"],
            "--window must be at least 1",
        ),
        (
            [
                "--table",
                "t",
                "--publish",
                "tcp://a:1",
                "--replay",
                "tcp://a:2",
                "--client-key",
                "x",
            ],
            "--client-key and --server-key go together",
        ),
    ],
)
def test_bad_options_say_what_is_wrong(args, says, capsys):
    assert main(args) == 2
    assert says in capsys.readouterr().err


def test_pit_passwords_roles_and_tries(tmp_path: Path):
    from views.pit.users import Tries, UsersError, check_password, hash_password, load_users

    h = hash_password("s3cret")
    assert check_password("s3cret", h) and not check_password("S3cret", h)
    assert not check_password("s3cret", "plain")
    f = tmp_path / "users.toml"
    f.write_text(f'[users.a]\nrole = "pitboss"\npassword = "{h}"\n')
    assert load_users(f)["a"].role == "pitboss"
    f.write_text(f'[users.a]\nrole = "boss"\npassword = "{h}"\n')
    with pytest.raises(UsersError, match=r"users\.a\.role: 'boss' is not one of viewer, pitboss"):
        load_users(f)
    f.write_text('[users.a]\nrole = "viewer"\npassword = "hunter2"\n')
    with pytest.raises(UsersError, match="not a hash from `tabled-pit hash-password`"):
        load_users(f)
    t = Tries(limit=3, window=60)
    for i in range(3):
        assert t.wait("a", 100 + i) == 0
        t.fail("a", 100 + i)
    assert t.wait("a", 103) == pytest.approx(57)
    assert t.wait("b", 103) == 0  # another name is not held
    assert t.wait("a", 161) == 0  # the oldest failure left the window
