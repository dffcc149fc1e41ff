"""Every event's JSON log line carries its type, seq and main fields as fields (issue 33).

A log pipeline (journald, Loki, jq) must read a card, a box, a result by field access,
never by parsing the message (``"event":"card TS → player"`` alone carried nothing).
Each game's captured events go through the daemon's event log as JSON lines; then a
real demo daemon's log is read the same way, by field access only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, endpoints, write_config

from daemon.bus.subscriber import Follower
from daemon.games import find
from daemon.journal.events import decode
from daemon.runtime import logs
from daemon.runtime.event_log import event_logger

CAPTURES = ROOT / "tests" / "captures"
#: a capture of each game and the fields each of its event types must carry
GAMES = {
    "baccarat": (
        "shoe-line/misdeals",
        {
            "card.dealt": ("card", "box", "hand"),
            "hand.result": ("hand", "winner", "player_total", "banker_total", "player"),
        },
    ),
    "blackjack": (
        "blackjack/whole-shoe",
        {"card.dealt": ("box", "hand"), "hand.result": ("hand", "boxes", "dealer")},
    ),
    "dragon-tiger": (
        "dragon-tiger/full-shoe",
        {"card.dealt": ("card", "box"), "hand.result": ("winner", "dragon", "tiger")},
    ),
    "sicbo": ("dice-ref/rounds", {"dice.result": ("round", "faces", "total")}),
    "paigow": (
        "tile-line/procedures",
        {"tile.dealt": ("tile", "position", "round"), "round.result": ("round", "positions")},
    ),
    "roulette": ("cammegh-m360/basic", {"spin.result": ("spin", "number", "color")}),
}


def _json_lines(capsys: pytest.CaptureFixture[str], game: str, capture: str) -> tuple[list, list]:
    events = [decode(x) for x in (CAPTURES / f"{capture}.expected.jsonl").read_bytes().splitlines()]
    cls = find(game)
    assert cls is not None
    logs.setup("debug", "json", table="cap")
    try:
        event_logger("all", cls.describe)(events)
    finally:
        import structlog

        structlog.reset_defaults()
        logs._fast[0] = None
    return events, [json.loads(x) for x in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("game", sorted(GAMES))
def test_each_games_event_lines_carry_type_seq_and_fields(game, capsys):
    capture, want = GAMES[game]
    events, lines = _json_lines(capsys, game, capture)
    assert [x["seq"] for x in lines] == [e.seq for e in events]
    for line, ev in zip(lines, events, strict=True):
        assert line["type"] == ev.type
        for k in want.get(ev.type, ()):
            assert line[k] == ev.data[k], (ev.type, k, line)
    assert {x["type"] for x in lines} >= set(want)


def test_a_demo_daemons_json_log_is_read_by_field_access(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        pub, rep = endpoints(cfg)
        f = Follower(pub, rep, table="it")
        try:
            f.until(lambda e: e.type == "hand.result", 20.0)
        finally:
            f.close()
        assert d.stop() == 0
    finally:
        d.close()
    lines = [json.loads(x) for x in Path(d.log).read_text().splitlines()]
    by_type: dict[str, list[dict]] = {}
    for x in lines:
        if "type" in x:
            by_type.setdefault(x["type"], []).append(x)
            assert isinstance(x["seq"], int) and x["table"] == "it"
    cards = by_type["card.dealt"]
    assert all(len(c["card"]) in (2, 3) and c["box"] and isinstance(c["hand"], int) for c in cards)
    result = by_type["hand.result"][0]
    assert result["winner"] in ("player", "banker", "tie")
    assert isinstance(result["player_total"], int) and isinstance(result["player"], list)
    assert "roads" not in result and by_type["daemon.started"][0]["clean"] is True
    # and with jq itself, as docs/operations.md shows it (field access only, no prose)
    import shutil
    import subprocess

    if shutil.which("jq") is None:
        return
    jq = subprocess.run(
        ["jq", "-c", 'select(.type == "card.dealt") | [.seq, .card, .box, .hand]', str(d.log)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    rows = [json.loads(x) for x in jq.stdout.splitlines()]
    assert rows == [[c["seq"], c["card"], c["box"], c["hand"]] for c in cards], jq.stderr


def test_an_unclean_restart_is_logged_at_warning(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        d.kill()
        d.start()
        assert d.stop() == 0
    finally:
        d.close()
    starts = [
        x
        for x in map(json.loads, Path(d.log).read_text().splitlines())
        if x.get("type") == "daemon.started"
    ]
    assert [(x["clean"], x["level"], x["priority"]) for x in starts] == [
        (True, "info", 6),
        (False, "warning", 4),
    ]
