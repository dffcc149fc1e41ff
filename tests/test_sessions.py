"""Issue 30: dealer and table sessions, rounds per hour, and configuration changes journaled.

The commands are decided by the real table (every game has them); the capture
``shoe-line/two-dealers.log`` is a whole shoe dealt by two dealers' shifts; a real daemon
shows a sign-in kept across a restart and a restart with a changed ``[game]`` rule.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from daemon_harness import Daemon, tablectl, write_config

from daemon import games
from daemon.journal import Journal
from daemon.journal.events import Draft
from daemon.journal.format import Batch
from daemon.table import Command, Table, config_audit
from daemon.tools.pace import pace

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "tests" / "captures"
TWO = CAPTURES / "shoe-line" / "two-dealers.expected.jsonl"


def _table(game: str = "baccarat") -> Table:
    cls = games.find(game)
    assert cls is not None
    return Table(cls(msgspec.convert({}, cls.Rules)), ["shoe"])


def _run(table: Table, t, name: str, role: str = "supervisor", **args):
    d = table.decide(t, Command(name, args, "pit", role))
    for x in d.drafts:
        t = table.apply(t, x.type, x.data)
    return t, d


@pytest.mark.parametrize(
    ("script", "want"),
    [
        ([("dealer.sign-out", {})], "no dealer is signed in"),
        (
            [("dealer.sign-in", {"dealer": "D1"}), ("dealer.sign-out", {"dealer": "D2"})],
            "D2 is not signed in (the dealer on duty is D1)",
        ),
        (
            [("dealer.sign-in", {"dealer": "D1"}), ("dealer.sign-in", {"dealer": "D1"})],
            "D1 is already signed in",
        ),
        ([("dealer.sign-in", {"dealer": "no spaces"})], "is not a dealer id"),
        ([("table.close", {}), ("dealer.sign-in", {"dealer": "D1"})], "the table is closed"),
        ([("table.open", {}), ("table.open", {})], "already open"),
        ([("table.close", {}), ("table.close", {})], "already closed"),
        ([("table.limits", {"min": 500, "max": 10})], "min 500 is above max 10"),
        ([("table.limits", {"min": "-5"})], "min must be a whole positive amount"),
        ([("table.limits", {"spot": "tie=500-5"})], "spot tie: min 500"),
        ([("table.limits", {"spot": "tie:5"})], "is not SPOT=MIN-MAX"),
        ([("table.limits", {})], "give --min, --max or --spot"),
        ([("table.limits", {"min": 5}), ("table.limits", {"min": "5"})], "already in force"),
    ],
)
def test_bad_session_commands_are_refused_with_the_reason_and_not_journaled(script, want):
    table = _table()
    t = table.initial()
    for name, args in script[:-1]:
        t, d = _run(table, t, name, **args)
        assert d.refused is None, d.refused
    name, args = script[-1]
    _, d = _run(table, t, name, **args)
    assert d.refused is not None and want in d.refused, d.refused
    assert d.drafts == []


def test_a_relief_signs_the_dealer_on_duty_out_and_closing_signs_out_too():
    table = _table("roulette")
    t = table.initial()
    t, _ = _run(table, t, "dealer.sign-in", role="dealer", dealer="D1")
    t, d = _run(table, t, "dealer.sign-in", dealer="D2")
    assert [x.type for x in d.drafts][1:] == ["dealer.signed_out", "dealer.signed_in"]
    assert d.drafts[1].data["reason"] == "relieved by D2"
    t, d = _run(table, t, "table.close", reason="end of session")
    assert [x.type for x in d.drafts][1:] == ["dealer.signed_out", "table.closed"]
    assert t.session.dealer is None and t.session.open is False


def test_every_result_of_the_two_shifts_names_its_dealer():
    evs = [json.loads(x) for x in TWO.read_text().splitlines()]
    results = [e["data"].get("dealer_on_duty") for e in evs if e["type"] == "hand.result"]
    assert results == ["D1"] * 40 + ["D2"] * 41
    outs = [e["data"] for e in evs if e["type"] == "dealer.signed_out"]
    assert [(o["dealer"], o["rounds"]) for o in outs] == [("D1", 40), ("D2", 41)]


def test_no_other_capture_names_a_dealer():
    """The field is there only while a dealer is signed in: the other captures' expected
    events are unchanged (the capture items check them byte for byte)."""
    for exp in CAPTURES.rglob("*.expected.jsonl"):
        if exp != TWO:
            assert b"dealer_on_duty" not in exp.read_bytes(), exp.name


def test_pace_counts_rounds_per_hour_by_dealer_and_by_hour():
    evs = [json.loads(x) for x in TWO.read_text().splitlines()]
    p = pace(evs, {"hand.result"})
    assert p["rounds"] == 81
    by = {r["dealer"]: r for r in p["dealers"]}
    assert (by["D1"]["rounds"], by["D2"]["rounds"]) == (40, 41)
    assert by["D1"]["shifts"] == by["D2"]["shifts"] == 1
    # D1 from 20:50:00.300 to the relief; D2 from the relief to the sign-out at 21:08:58.699
    assert by["D1"]["seconds"] + by["D2"]["seconds"] == pytest.approx(1138.399, abs=0.01)
    assert by["D1"]["per_hour"] == round(40 * 3600 / by["D1"]["seconds"], 1)
    assert 200 < by["D1"]["per_hour"] < 300  # a hand about every 15 s
    hours = {h["hour"]: h for h in p["hours"]}
    assert sorted(hours) == ["2026-11-01 20:00", "2026-11-01 21:00"]
    assert sum(h["rounds"] for h in hours.values()) == 81
    # the relief came at 20:59:22: D2 dealt the hour's last two hands
    assert hours["2026-11-01 20:00"]["by_dealer"] == {"D1": 40, "D2": 2}
    assert hours["2026-11-01 21:00"]["by_dealer"] == {"D2": 39}


def test_tablectl_pace_reads_the_journal(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path, "cap")
    for line in TWO.read_text().splitlines():
        e = json.loads(line)
        j.append([Batch([Draft(e["type"], e["data"])], e["time"], e["mono"])])
    j.close()
    r = subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "pace", "--game", "baccarat", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("81 rounds, 2026-11-01T20:50:00.300Z to ")
    assert any(x.split()[:2] == ["D1", "1"] and x.split()[4] == "40" for x in lines), r.stdout
    assert any(x.split()[:2] == ["D2", "1"] and x.split()[4] == "41" for x in lines), r.stdout
    assert any("2026-11-01 20:00" in x and "D1 40, D2 2" in x for x in lines), r.stdout


def test_config_audit_journals_what_changed_and_nothing_when_unchanged():
    first = config_audit.changed(None, None, {"game.a": 1, "devices.shoe.driver": "x"})
    assert first is not None and first["first"] and first["previous_hash"] is None
    kept = config_audit.fold(None, first)
    assert config_audit.changed(kept, first["hash"], dict(kept)) is None
    now = {"game.a": 2, "control.role": "viewer"}
    ch = config_audit.changed(kept, first["hash"], now)
    assert ch is not None and ch["previous_hash"] == first["hash"]
    assert ch["changes"] == [
        {"key": "control.role", "old": None, "new": "viewer"},
        {"key": "devices.shoe.driver", "old": "x", "new": None},
        {"key": "game.a", "old": 1, "new": 2},
    ]
    assert config_audit.fold(kept, ch) == now


def _journal(cfg: Path) -> list[dict]:
    db = sqlite3.connect(f"file:{cfg.parent / 'state' / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return [json.loads(b) for (b,) in db.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        db.close()


def test_a_sign_in_outlives_a_restart_and_a_changed_game_rule_is_journaled(tmp_path):
    cfg = write_config(tmp_path)
    daemon = Daemon(cfg)
    try:
        daemon.start()
        r = tablectl(cfg, "dealer", "sign-in", "D7")
        assert r.returncode == 0 and "dealer.signed_in" in r.stdout, r.stdout + r.stderr
        deadline = time.monotonic() + 20
        while not any(
            e["data"].get("dealer_on_duty") == "D7"
            for e in _journal(cfg)
            if e["type"] == "hand.result"
        ):
            assert time.monotonic() < deadline, "no hand.result named D7"
            time.sleep(0.2)
        assert daemon.stop() == 0
        daemon.start()  # unchanged: no config.changed
        st = json.loads(tablectl(cfg, "status", "--json").stdout)
        assert st["session"]["dealer"] == "D7"
        text = tablectl(cfg, "status").stdout
        assert "dealer:  D7 (" in text and "table not opened" in text, text
        out = tablectl(cfg, "dealer", "sign-out", "D9")
        assert out.returncode != 0 and "D9 is not signed in" in out.stdout + out.stderr
        assert daemon.stop() == 0
        cfg.write_text(cfg.read_text().replace("betting_seconds = 0.05", "betting_seconds = 0.07"))
        daemon.start()
        assert daemon.stop() == 0
    finally:
        daemon.close()
    evs = _journal(cfg)
    starts = [i for i, e in enumerate(evs) if e["type"] == "daemon.started"]
    changed = [e for e in evs if e["type"] == "config.changed"]
    assert len(starts) == 3 and len(changed) == 2
    assert evs[starts[0] + 1]["type"] == "config.changed" and changed[0]["data"]["first"]
    assert evs[starts[1] + 1]["type"] != "config.changed"  # the unchanged restart
    assert evs[starts[2] + 1] == changed[1]
    assert changed[1]["data"]["changes"] == [
        {"key": "game.betting_seconds", "old": 0.05, "new": 0.07}
    ]
    assert changed[1]["data"]["previous_hash"] == changed[0]["data"]["hash"]


def test_recall_and_the_monitor_show_the_dealer_on_duty(tmp_path):
    from daemon.journal.events import decode
    from daemon.tools.monitor import Model, render

    evs = TWO.read_text().splitlines()
    cls = games.find("baccarat")
    m = Model("cap", cls.describe)
    for i, raw in enumerate(evs):
        m.event(decode(raw.encode()), float(i))
        if json.loads(raw)["type"] == "dealer.signed_in" and m.dealer == "D2":
            break
    assert m.dealer == "D2"
    from rich.console import Console

    con = Console(width=120, record=True)
    con.print(render(m, float(len(evs))))
    assert "dealer D2" in con.export_text()
    path = tmp_path / "j.sqlite"
    j = Journal(path, "cap")
    for line in evs:
        e = json.loads(line)
        j.append([Batch([Draft(e["type"], e["data"])], e["time"], e["mono"])])
    j.close()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "daemon.ctl.cli",
            "recall",
            "--game",
            "baccarat",
            "--last",
            "1",
            str(path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].endswith("  dealer D2"), r.stdout


def test_limits_in_the_config_are_journaled_when_they_change_and_bad_ones_are_refused(tmp_path):
    from daemon.runtime.config import ConfigError, load

    table = _table()
    t = table.initial()
    info = {"version": "x", "recovered_seq": 0, "pid": 1}
    conf = {"table.game": "baccarat", "limits.min": 10, "limits.max": 500}
    d = table.started(t, info, config=conf)
    assert [x.type for x in d.drafts] == ["daemon.started", "config.changed", "table.limits"]
    assert d.drafts[2].data == {
        "by": "config",
        "source": "config",
        "min": 10,
        "max": 500,
        "spots": {},
    }
    for x in d.drafts:
        t = table.apply(t, x.type, x.data)
    assert t.session.limits == {"min": 10, "max": 500, "spots": {}}
    assert [x.type for x in table.started(t, info, config=conf).drafts] == ["daemon.started"]
    cfg = write_config(tmp_path, extra="[limits]\nmin = 500\nmax = 10\n")
    with pytest.raises(ConfigError, match="min 500 is above max 10"):
        load(cfg)


def _typed(code: str) -> list[bytes]:
    """Boot keyboard reports typing ``code`` (upper-case letters and digits) then Enter."""
    out = []
    for ch in code:
        usage = 0x04 + ord(ch) - ord("A") if ch.isalpha() else 0x1E + "1234567890".index(ch)
        out += [bytes([0x02 if ch.isalpha() else 0, 0, usage, 0, 0, 0, 0, 0]), bytes(8)]
    return [*out, bytes([0, 0, 0x28, 0, 0, 0, 0, 0]), bytes(8)]


def test_a_badge_reader_signs_its_dealer_in_and_out_and_refuses_with_an_alarm():
    from daemon.table import DeviceReading
    from drivers.hid_scanner import HidKeyboardProtocol, HidScannerOptions
    from drivers.readings import BadgeRead, CardDrawn

    def read(reads: str, code: str):
        o = msgspec.convert(
            {"vendor_id": "05e0", "product_id": "1200", "reads": reads}, HidScannerOptions
        )
        p = HidKeyboardProtocol(o)
        return [r for rep in _typed(code) for r in p.feed(rep, 0.0)]

    assert read("badges", "D7") == [BadgeRead(frame=b"D7", code="D7")]
    assert isinstance(read("cards", "SA")[0], CardDrawn)  # the default: cards, as before
    table = _table()
    t = table.initial()

    def badge(code: str):
        nonlocal t
        d = table.decide(t, DeviceReading("badge", BadgeRead(frame=code.encode(), code=code), 1.0))
        for x in d.drafts:
            t = table.apply(t, x.type, x.data)
        return [(x.type, x.data) for x in d.drafts]

    assert badge("D7") == [("dealer.signed_in", {"dealer": "D7", "by": "badge", "source": "badge"})]
    assert [x for x, _ in badge("D8")] == ["dealer.signed_out", "dealer.signed_in"]
    assert badge("D8") == [
        ("dealer.signed_out", {"dealer": "D8", "by": "badge", "reason": "badge", "rounds": 0})
    ]
    t, _ = _run(table, t, "table.close")
    refused = badge("D7")
    assert [x for x, _ in refused] == ["alarm.raised"]
    assert (
        refused[0][1]["kind"] == "badge-refused"
        and "the table is closed" in refused[0][1]["message"]
    )
    assert t.session.dealer is None


@pytest.mark.parametrize("game", sorted(games.games()))
def test_every_game_s_results_can_name_the_dealer_on_duty(game):
    """Each result type of each game has the field, so the table stamps it in every game."""
    table = _table(game)
    assert table._stamped == table.game.describe.results != frozenset()


def test_the_audit_reads_rules_limits_devices_and_roles_but_not_the_plumbing(tmp_path):
    from daemon.runtime.config import load

    cfg = write_config(tmp_path, extra="[limits]\nmin = 10\nspots = { tie = [5, 500] }\n")
    got = config_audit.audited(load(cfg))
    assert got["table.game"] == "baccarat" and got["game.start_burn"] == "first-card"
    assert got["game.big_small_hands"] == 35  # a default is audited too
    assert got["limits.min"] == 10 and got["limits.spots.tie"] == [5, 500]
    assert got["devices.shoe.driver"] == "shoe-line"
    assert got["devices.shoe.options.encoding"] == "rank-suit"
    assert got["control.role"] == "supervisor"
    assert not any(k.split(".")[0] in config_audit.PLUMBING for k in got)
    assert not any("port" in k.split(".")[-1] or "dir" in k for k in got), got


def _first_capture_of(game: str) -> Path:
    """The first capture of ``game`` (by path) that has a result and names no seq (a
    correction names the result it corrects by seq, which a line put in front shifts)."""
    results = games.find(game).describe.results
    for log in sorted(CAPTURES.rglob("*.log")):
        text = log.read_text()
        if f"# game: {game}\n" not in text or log.name == "two-dealers.log":
            continue
        if " result.correct " in text:
            continue
        expected = log.with_name(log.name[: -len(".log")] + ".expected.jsonl").read_text()
        if any(f'"type":"{r}"' in expected for r in results):
            return log
    raise AssertionError(f"no capture of {game} with a result")


@pytest.mark.parametrize("game", sorted(games.games()))
def test_a_capture_of_every_game_names_the_dealer_signed_in_on_every_result(game):
    """The real capture of each game, replayed with a sign-in before its first line: every
    result names that dealer, and nothing else changes but that field and the session's
    events (the chain's hashes aside)."""
    from daemon.pipeline.capture import parse
    from daemon.pipeline.replay import replay

    log = _first_capture_of(game)
    text = log.read_text()
    head = [x for x in text.splitlines(keepends=True) if x.startswith("#")]
    body = [x for x in text.splitlines(keepends=True) if not x.startswith("#")]
    first = body[0].split()[0]
    signed = "".join(head) + f"{first} cmd dealer.sign-in dealer=D9 actor=pit role=supervisor\n"
    signed += "".join(body)

    def events(t: str) -> list[dict]:
        return [json.loads(x) for x in replay([parse(t, str(log))]).lines()]

    plain, named = events(text), events(signed)
    results = games.find(game).describe.results
    got = [e["data"].pop("dealer_on_duty", None) for e in named if e["type"] in results]
    assert got and got == ["D9"] * len(got), (log.name, got)
    session = {"operator.command", "dealer.signed_in"}
    assert [(e["type"], e["data"]) for e in named if e["type"] not in session] == [
        (e["type"], e["data"]) for e in plain if e["type"] not in session
    ]
