"""Issue 30, result corrections: a supervisor corrects a published result from corrected
inputs; the game re-derives it by its own rules (``daemon/table/corrections.py``).

Each game's capture is replayed through the real drivers and table into a real journal
(:class:`daemon.pipeline.replay.Replayer`), a correction is decided like any command, and the
journal is then read by ``tablectl verify`` and ``tablectl recall``. The corrected result
is checked against the game's rules (the independent oracles where there is one).
"""

from __future__ import annotations

import grp
import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import independent_baccarat
import msgspec
import pytest

from daemon.games.paigow import rules as paigow
from daemon.games.roulette import rules as roulette
from daemon.games.sicbo import rules as sicbo
from daemon.pipeline.capture import load
from daemon.pipeline.replay import Replayer
from daemon.procedures.shoe import roads
from daemon.table import Command, corrections

ROOT = Path(__file__).resolve().parents[1]
CAPS = ROOT / "tests" / "captures"


def _replay(name: str, share: float = 1.0) -> tuple[Replayer, list[Any]]:
    """The capture replayed up to ``share`` of its lines; the rest returned to feed later."""
    cap = load(CAPS / f"{name}.log")
    cut = int(len(cap.lines) * share)
    r = Replayer.for_capture(cap)
    r.feed(replace(cap, lines=cap.lines[:cut]))
    return r, cap.lines[cut:]


def _correct(r: Replayer, role: str = "supervisor", **args: Any) -> tuple[str | None, list[Any]]:
    args.setdefault("reason", "card misread, seen on the video")
    args.setdefault("ref", "INC-2026-0412 cam3 14:02:11")
    before = len(r.events)
    refused = len(r.stats.refused)
    r._decide(Command("result.correct", args, "pit-boss", role), r.events[-1].mono or 0.0)
    why = r.stats.refused[-1] if len(r.stats.refused) > refused else None
    return why, r.events[before:]


def _last(r: Replayer, type_: str) -> Any:
    return next(e for e in reversed(r.events) if e.type == type_)


def _fixed(evs: list[Any]) -> dict[str, Any]:
    (ev,) = [e for e in evs if e.type == "result.corrected"]
    return ev.data


def _file(r: Replayer, tmp: Path) -> Path:
    path = tmp / "journal.db"
    dst = sqlite3.connect(path)
    r.journal.db.backup(dst)
    dst.close()
    return path


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- each game, from a capture ------------------------------------------------------------


def test_a_baccarat_hand_corrected_is_re_dealt_by_the_rules_and_the_roads_follow(tmp_path):
    r, rest = _replay("shoe-line/full-shoe-first-card-burn", 0.5)
    orig = _last(r, "hand.result")
    winners_before = r.state.game.winners
    why, evs = _correct(r, seq=orig.seq, inputs=["player=9S,KD", "banker=8H,2C"])
    assert why is None
    c = _fixed(evs)
    oracle = independent_baccarat.settle(["9S", "KD"], ["8H", "2C"])
    assert c["result"]["winner"] == oracle["winner"] == "player"
    assert c["result"]["player_total"] == 9 and c["result"]["banker_total"] == 0
    assert c["result"]["natural"] and c["result"]["player_natural"]
    assert (c["result"]["shoe"], c["result"]["hand"]) == (orig.data["shoe"], orig.data["hand"])
    assert c["original"] == orig.data and c["supersedes"] == orig.seq
    assert (c["shoe"], c["hand"], c["by"], c["later"]) == (
        orig.data["shoe"],
        orig.data["hand"],
        "pit-boss",
        0,
    )
    assert c["inputs"] == {"player": ["9S", "KD"], "banker": ["8H", "2C"]}
    # the roads: the whole board as corrected, and the next hand drawn on it
    corrected = (*winners_before[:-1], "player")
    assert r.state.game.winners == corrected
    assert c["roads"] == roads.roads(corrected, ("player", "banker"))
    r.feed(replace(load(CAPS / "shoe-line/full-shoe-first-card-burn.log"), lines=rest[:80]))
    nxt = next(e for e in r.events if e.type == "hand.result" and e.seq > orig.seq)
    assert nxt.data["roads"] == roads.update((*corrected, nxt.data["winner"]), ("player", "banker"))
    # the original stays in the chain, which verifies; recall shows both
    path = _file(r, tmp_path)
    v = _tablectl("verify", str(path), "--game", "baccarat")
    assert v.returncode == 0, v.stdout + v.stderr
    key = f"{orig.data['shoe']}:{orig.data['hand']}"
    rc = _tablectl("recall", "--game", "baccarat", "--hand", key, str(path))
    assert rc.returncode == 0, rc.stderr
    assert "CORRECTED at seq" in rc.stdout and "INC-2026-0412" in rc.stdout
    assert "PLAYER" in rc.stdout.upper().split("CORRECTED", 1)[1]


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        (["player=9S,KD", "banker=8H,2C,5D"], "no more cards"),  # a fifth card after naturals
        (["player=2S,3D,4C,5H", "banker=KH,KD,2C"], "no more cards"),  # a sixth card
        (["player=2S,3D", "banker=KH,KD"], "deal a card 3 to player"),  # 5 draws
        (["player=9S,1X", "banker=8H,2C"], "is not a card"),
        (["winner=player"], "is not a corrected input"),
        ([], "no corrected inputs"),
    ],
)
def test_a_baccarat_hand_the_rules_cannot_deal_is_refused(inputs, says):
    r, _ = _replay("shoe-line/full-shoe-first-card-burn", 0.5)
    why, evs = _correct(r, seq=_last(r, "hand.result").seq, inputs=inputs)
    assert why is not None and says in why and not evs


def test_a_dragon_tiger_hand_corrected(tmp_path):
    r, _ = _replay("dragon-tiger/full-shoe", 0.5)
    orig = _last(r, "hand.result")
    dragon, tiger = ("KD", "2C") if orig.data["winner"] != "dragon" else ("2C", "KD")
    why, evs = _correct(r, seq=orig.seq, inputs=[f"dragon={dragon}", f"tiger={tiger}"])
    assert why is None
    c = _fixed(evs)
    assert c["result"]["winner"] == ("dragon" if dragon == "KD" else "tiger")
    assert c["result"]["dragon"] == dragon and c["result"]["dragon_rank"] in (13, 2)
    assert r.state.game.winners[-1] == c["result"]["winner"]
    why, _ = _correct(r, seq=orig.seq, inputs=["dragon=KD,QD"])
    assert why is not None and "no more cards" in why
    path = _file(r, tmp_path)
    assert _tablectl("verify", str(path), "--game", "dragon-tiger").returncode == 0
    rc = _tablectl("recall", "--game", "dragon-tiger", "--last", "1", str(path))
    assert "CORRECTED" in rc.stdout, rc.stdout + rc.stderr


def test_a_roulette_spin_corrected(tmp_path):
    r, _ = _replay("cammegh-ss2/synthetic-normal")
    orig = _last(r, "spin.result")
    why, evs = _correct(r, seq=orig.seq, inputs=["number=17"])
    assert why is None
    c = _fixed(evs)
    assert c["result"] == {**orig.data, **roulette.result_data(17, False)}
    assert c["result"]["color"] == "black" and c["result"]["wheel_spin"] == orig.data["wheel_spin"]
    for bad, says in (("37", "no such pocket"), ("00", "no such pocket"), ("x", "not a pocket")):
        why, _ = _correct(r, seq=orig.seq, inputs=[f"number={bad}"])
        assert why is not None and says in why, why
    path = _file(r, tmp_path)
    assert _tablectl("verify", str(path), "--game", "roulette").returncode == 0
    rc = _tablectl("recall", "--game", "roulette", "--hand", str(orig.data["spin"]), str(path))
    assert "CORRECTED" in rc.stdout and "17" in rc.stdout.split("CORRECTED")[1], rc.stdout


def test_a_sic_bo_roll_corrected():
    r, _ = _replay("dice-ref/rounds")
    orig = _last(r, "dice.result")
    why, evs = _correct(r, seq=orig.seq, inputs=["faces=4,4,4"])
    assert why is None
    c = _fixed(evs)
    assert c["result"] == {**orig.data, **sicbo.result([4, 4, 4])}
    assert c["result"]["triple"] and c["result"]["size"] is None  # a triple loses big/small
    for bad, says in (("1,2,7", "not in 1–6"), ("1,2", "expected 3"), ("a,b,c", "whole numbers")):
        why, _ = _correct(r, seq=orig.seq, inputs=[f"faces={bad}"])
        assert why is not None and says in why, why


def test_a_pai_gow_round_corrected():
    r, _ = _replay("tile-line/random-rounds")
    orig = _last(r, "round.result")
    tiles = list(orig.data["tiles"])
    i = next(i for i in range(1, 12) if tiles[i] != tiles[0])
    tiles[0], tiles[i] = tiles[i], tiles[0]  # two tiles read in each other's places
    why, evs = _correct(r, seq=orig.seq, inputs=["tiles=" + ",".join(tiles), "dice=1,1,1"])
    assert why is None
    c = _fixed(evs)
    first = paigow.first_position([1, 1, 1])
    hands: dict[str, list[str]] = {p: [] for p in paigow.POSITIONS}
    for pos, t in zip(paigow.deal_order(first), tiles, strict=True):
        hands[pos].append(t)
    assert c["result"]["first"] == first == "player2"
    assert c["result"]["positions"] == paigow.verdict(hands)["positions"]
    assert c["result"]["winners"] == paigow.verdict(hands)["winners"]
    three = ["wd", "wd", "wd", *orig.data["tiles"][3:]]
    for inputs, says in (
        (["tiles=" + ",".join(three)], "impossible tile set"),
        (["tiles=" + ",".join(["zz", *orig.data["tiles"][1:]])], "not in this table's set"),
        (["tiles=" + ",".join(orig.data["tiles"][:11])], "11 tiles"),
        (["dice=1,2,7"], "not in 1–6"),
    ):
        why, _ = _correct(r, seq=orig.seq, inputs=inputs)
        assert why is not None and says in why, why


# -- the limits ------------------------------------------------------------------------------


def test_only_a_supervisor_corrects_and_the_refusal_names_the_role():
    r, _ = _replay("dice-ref/rounds")
    seq = _last(r, "dice.result").seq
    for role in ("viewer", "dealer", "technician"):
        why, evs = _correct(r, role=role, seq=seq, inputs=["faces=1,2,3"])
        assert why == f"result.correct needs the supervisor role; you are {role}" and not evs


def test_outside_the_window_a_void_or_a_shoe_change_is_refused_with_the_reason():
    r, _ = _replay("dice-ref/rounds")
    results = [e.seq for e in r.events if e.type == "dice.result"]
    assert [x.seq for x in r.state.recent] == results[-corrections.WINDOW :]
    why, _ = _correct(r, seq=results[-corrections.WINDOW - 1], inputs=["faces=1,2,3"])
    assert why is not None and f"only the last {corrections.WINDOW} results" in why
    why, _ = _correct(r, seq=results[-1] - 1, inputs=["faces=1,2,3"])
    assert why is not None and "not a result" in why
    why, _ = _correct(r, seq=10**6, inputs=["faces=1,2,3"])
    assert why is not None and "no such event yet" in why
    why, _ = _correct(r, seq=results[-1], inputs=["faces=1,2,3"], reason="")
    assert why is not None and "--reason" in why
    same = ",".join(map(str, _last(r, "dice.result").data["faces"]))
    why, _ = _correct(r, seq=results[-1], inputs=[f"faces={same}"])
    assert why is not None and "the result as it stands" in why
    # a void closes the window: nothing before it may be corrected
    r.feed(load(CAPS / "dice-ref/voids.log"))
    assert any(e.type == "round.void" for e in r.events)
    void = max(e.seq for e in r.events if e.type == "round.void")
    before = [s for s in results if s < void]
    why, _ = _correct(r, seq=before[-1], inputs=["faces=1,2,3"])
    assert why is not None and "a void" in why
    # a shoe's end closes it too (the capture's shoe ends at its last hand)
    r, _ = _replay("shoe-line/full-shoe-first-card-burn")
    assert r.state.recent == ()
    why, _ = _correct(r, seq=_last(r, "hand.result").seq, inputs=["player=9S,KD"])
    assert why is not None and "a shoe's end" in why


def test_blackjack_refuses_a_correction_saying_why():
    r, _ = _replay("blackjack/whole-shoe", 0.5)
    why, _ = _correct(r, seq=_last(r, "hand.result").seq, inputs=["box1=TS,9H"])
    assert why is not None and "void the hand instead" in why


def test_a_restart_allows_exactly_what_was_allowed():
    """The window is state folded from the journal: rebuilt from the journal's JSON, or
    from a snapshot, it is the same, and a second correction names the first."""
    r, _ = _replay("shoe-line/full-shoe-first-card-burn", 0.5)
    seq = _last(r, "hand.result").seq
    why, _ = _correct(r, seq=seq, inputs=["player=9S,KD", "banker=8H,2C"])
    assert why is None
    table = r.table
    rebuilt = table.initial()
    for ev in r.events:
        rebuilt = table.apply(rebuilt, ev.type, msgspec.json.decode(msgspec.json.encode(ev.data)))
    assert rebuilt == r.state
    assert table.decode_state(table.encode_state(r.state)) == r.state
    assert rebuilt.seq == r.events[-1].seq
    r.state = rebuilt
    why, evs = _correct(r, seq=seq, inputs=["player=2S,5D", "banker=8H,KC"])
    assert why is None
    c = _fixed(evs)
    assert c["previous"] is not None and c["original"]["winner"] == "player"
    assert c["result"]["winner"] == "banker"
    # the same again, or the correction's own seq, is refused saying why
    why, _ = _correct(r, seq=seq, inputs=["player=2S,5D", "banker=8H,KC"])
    assert why is not None and "the result as it stands" in why
    latest = next(e.seq for e in evs if e.type == "result.corrected")
    why, _ = _correct(r, seq=latest, inputs=["player=9S,KD"])
    assert why is not None and f"name the result it corrects, seq {seq}" in why


# -- the real daemon: tablectl correct through the control socket --------------------------


def test_tablectl_correct_on_a_running_sic_bo_table_and_after_a_restart(tmp_path):
    """A supervisor's ``tablectl correct`` is journaled and published; the dealer's is
    refused naming the role; after a restart (recovered through the journal) the table
    still corrects its latest result, so the seq it counts is the journal's."""
    from daemon_harness import Daemon, endpoints, fast_copy, tablectl

    from daemon.bus.subscriber import Follower

    cfg = fast_copy(
        "sicbo.toml",
        tmp_path,
        # a round a second at least: ten results (the window) outlast the commands' starts
        {"betting_seconds": "1.0", "settle_seconds": "0.01"},
        "seed = 3\npace = 0.02\nerror_every = 0",
    )
    group = grp.getgrgid(os.getgid()).gr_name  # a socket per role, ours to open
    text = cfg.read_text().replace(
        'role = "supervisor"', f'roles = {{ supervisor = "{group}", dealer = "{group}" }}'
    )
    # the restart starts from a snapshot: the window and the seq come through it
    text = text.replace("snapshot_every = 1000", "snapshot_every = 10")
    cfg.write_text(text)
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    seen = 0
    try:
        for attempt in range(2):
            d.start()
            f = Follower(pub, rep, table="sicbo", last_seq=seen)
            try:
                last = f.until(lambda e: e.type == "dice.result", 30.0)[-1]
                faces = "1,1,1" if last.data["faces"] != [1, 1, 1] else "2,2,2"
                who = ("--role", "supervisor", "--actor", "pit-boss")
                why = ("--reason", "misread on the video", "--ref", f"INC-{attempt}")
                no = tablectl(
                    cfg, "--role", "dealer", "correct", str(last.seq), f"faces={faces}", *why
                )
                assert no.returncode == 1 and "needs the supervisor role" in no.stdout + no.stderr
                ok = tablectl(cfg, *who, "correct", str(last.seq), f"faces={faces}", *why)
                assert ok.returncode == 0, ok.stdout + ok.stderr
                assert "result.corrected" in ok.stdout
                ev = f.until(lambda e: e.type == "result.corrected", 30.0)[-1]
                assert ev.data["supersedes"] == last.seq and ev.data["round"] == last.data["round"]
                assert ev.data["result"]["faces"] == [int(x) for x in faces.split(",")]
                seen = ev.seq
            finally:
                f.close()
            d.stop()
        v = tablectl(cfg, "verify")
        assert v.returncode == 0, v.stdout + v.stderr
        rc = tablectl(cfg, "recall", "--hand", str(last.data["round"]))
        assert "CORRECTED" in rc.stdout and "INC-1" in rc.stdout, rc.stdout + rc.stderr
    finally:
        d.close()


def test_the_monitor_shows_the_corrected_result_marked_and_the_roads_redrawn():
    from daemon.tools.monitor import Model

    r, _ = _replay("shoe-line/full-shoe-first-card-burn", 0.5)
    orig = _last(r, "hand.result")
    why, _ = _correct(r, seq=orig.seq, inputs=["player=9S,KD", "banker=8H,2C"])
    assert why is None
    m = Model("t", r.table.game.describe)
    for ev in r.events:
        m.event(ev, 0.0)
    assert m.winners[-1] == "player" and tuple(m.winners) == r.state.game.winners
    assert m.board.roads()["big_road"] == roads.roads(m.winners, ("banker", "player"))["big_road"]
    assert "corrected at seq" in m.last_result
    assert m.marks[-1].text.endswith("*") and "underline" in m.marks[-1].style
    # roulette's board of numbers: the corrected number, marked
    r, _ = _replay("cammegh-ss2/synthetic-normal")
    orig = _last(r, "spin.result")
    assert _correct(r, seq=orig.seq, inputs=["number=17"])[0] is None
    m = Model("t", r.table.game.describe)
    for ev in r.events:
        m.event(ev, 0.0)
    assert m.marks[-1].text == "17*" and "17" in m.last_result


def test_an_earlier_hand_corrected_redraws_the_board_at_its_place(tmp_path):
    r, _ = _replay("shoe-line/full-shoe-first-card-burn", 0.5)
    results = [e for e in r.events if e.type == "hand.result"]
    orig = results[-3]  # two hands later
    before = r.state.game.winners
    want = "banker" if orig.data["winner"] != "banker" else "player"
    hand = (
        ["player=2S,5D", "banker=8H,KC"] if want == "banker" else ["player=9S,KD", "banker=8H,2C"]
    )
    why, evs = _correct(r, seq=orig.seq, inputs=hand)
    assert why is None
    c = _fixed(evs)
    assert c["later"] == 2 and c["result"]["winner"] == want
    corrected = (*before[:-3], want, *before[-2:])
    assert r.state.game.winners == corrected
    assert c["roads"] == roads.roads(corrected, ("player", "banker"))
    path = _file(r, tmp_path)
    out = _tablectl("--json", "recall", "--game", "baccarat", "--last", "3", str(path))
    games = json.loads(out.stdout)
    assert [len(g.get("corrections", [])) for g in games] == [1, 0, 0]
    assert games[0]["corrections"][0]["data"]["result"]["winner"] == want


def test_a_hand_corrected_to_its_own_cards_is_refused_as_nothing_to_correct():
    r, _ = _replay("shoe-line/full-shoe-first-card-burn", 0.5)
    orig = _last(r, "hand.result")
    same = [f"player={','.join(orig.data['player'])}", f"banker={','.join(orig.data['banker'])}"]
    why, evs = _correct(r, seq=orig.seq, inputs=same)
    assert why is not None and "the result as it stands" in why and not evs


def test_the_console_log_words_the_corrected_result_as_the_game_does():
    from structlog.testing import capture_logs

    from daemon.runtime.event_log import event_logger

    r, _ = _replay("dice-ref/rounds")
    orig = _last(r, "dice.result")
    _, evs = _correct(r, seq=orig.seq, inputs=["faces=4,4,4"])
    describe = r.table.game.describe
    with capture_logs() as logs:
        event_logger("results", describe)(evs)
    (line,) = [x for x in logs if x["event"].startswith(f"seq {orig.seq} corrected: ")]
    assert line["event"].endswith(describe.recall("dice.result", _fixed(evs)["result"]))
    assert line["log_level"] == "warning" and line["ref"] == "INC-2026-0412 cam3 14:02:11"


@pytest.mark.parametrize(
    ("capture", "spot", "was", "now"),
    [
        ("shoe-line/correction", "player", 0, 2),  # banker won; corrected: player 9 natural
        ("dragon-tiger/correction", "dragon", "1/2", 2),  # a tie (half back); corrected: dragon
        ("cammegh-ss2/correction", "straight:17", 0, 36),  # 19; corrected: 17
        ("dice-ref/correction", "triple:4", 0, 151),  # corrected: a triple 4 at 150:1
        ("tile-line/correction", "win:player1", None, None),  # whatever the dice change
    ],
)
def test_a_backend_re_settles_a_correction_from_its_two_results(capture, spot, was, now):
    """The correction carries the settlement facts of both results (the paytable too):
    ``tabled_client.settle`` pays every spot on each, and the difference is what to re-pay."""
    from fractions import Fraction

    from tabled_client import SettleError, settle, spots
    from tabled_client.settle import game_of

    evs = [json.loads(x) for x in (CAPS / f"{capture}.expected.jsonl").read_text().splitlines()]
    (c,) = [e["data"] for e in evs if e["type"] == "result.corrected"]
    before = {"type": c["result_type"], "data": c["original"]}
    after = {"type": c["result_type"], "data": c["result"]}
    assert c["result"]["paytable"] == c["original"]["paytable"]
    game = game_of(before)
    changed = 0
    for s in sorted(spots(game, c["result"].get("layout", "single-zero"))):
        try:
            old, new = settle(before, s, 10), settle(after, s, 10)
        except SettleError:  # a spot not offered on this hand (Big/Small late in a shoe)
            continue
        changed += old != new
    assert changed
    if was is not None:
        assert settle(before, spot, 1) == Fraction(was) and settle(after, spot, 1) == Fraction(now)


@pytest.mark.parametrize(
    ("capture", "key", "field", "now"),
    [
        ("shoe-line/correction", "hand", "winner", "player"),
        ("dragon-tiger/correction", "hand", "winner", "dragon"),
        ("cammegh-ss2/correction", "spin", "number", 17),
        ("dice-ref/correction", "round", "faces", [4, 4, 4]),
        ("tile-line/correction", "round", "dice", [1, 1, 1]),
    ],
)
def test_the_display_shows_the_corrected_result_marked_and_its_roads(capture, key, field, now):
    from views.display.state import DisplayState

    evs = [json.loads(x) for x in (CAPS / f"{capture}.expected.jsonl").read_text().splitlines()]
    at = next(i for i, e in enumerate(evs) if e["type"] == "result.corrected")
    c = evs[at]
    s = DisplayState("t")
    for e in evs[:at]:
        s.apply(e)
    hand, status = s.hand, s.status
    s.apply(c)
    (entry,) = [r for r in s.results if r.get(key) == c["data"][key]]
    assert entry[field] == now and entry["corrected"] == c["seq"]
    assert (s.hand, s.status) == (hand, status)  # the table in play is as it was
    if c["data"]["roads"] is not None:
        want = c["data"]["roads"]
        got = s.roads()
        for name in ("big_road", "big_eye_boy", "small_road", "cockroach_pig"):
            assert sorted(map(tuple, got[name])) == sorted(map(tuple, want[name])), name
        assert [sq[2] for sq in got["bead_plate"]] == want["bead_plate"]
    for e in evs[at + 1 :]:  # the next hands are drawn on the corrected board
        s.apply(e)
    assert next(r for r in s.results if r.get(key) == c["data"][key])["corrected"] == c["seq"]
