"""``tablectl wheel reconcile``: the wheel's log against the journal, pure and through the daemon."""

from __future__ import annotations

import grp
import json
import os
import re
import sqlite3
import tempfile
import time

import pytest
from daemon_harness import ROOT, Daemon, free_port, tablectl

from daemon.bus.subscriber import Follower
from daemon.games.roulette.log_check import Spin, compare


def spins(*pairs: tuple[int, int | None]) -> list[Spin]:
    return [Spin(seq=10 * i + 10, wheel_spin=g, number=n) for i, (g, n) in enumerate(pairs)]


def test_a_clean_log_has_no_mismatch_and_older_entries_are_not_compared():
    journal = spins((1, 17), (2, 4), (3, 30))
    # newest first; 8 and 9 are from before this journal
    assert compare([30, 4, 17, 9, 8], journal) == (3, [])


def test_a_different_number_names_its_game():
    journal = spins((1, 17), (2, 4), (3, 30), (4, 12))
    compared, found = compare([12, 30, 5, 17], journal)
    assert compared == 4
    assert found == [
        {
            "kind": "different-number",
            "wheel_spin": 2,
            "wheel_number": 5,
            "table_number": 4,
            "seq": 20,
        }
    ]


def test_a_number_the_table_voided_or_missed_and_one_the_wheel_lacks():
    journal = [
        Spin(10, 1, 17),
        Spin(20, 2, None, "ball-revolutions"),  # voided: the wheel still logged its number
        Spin(30, 2, 4),
        Spin(40, 3, 30),
        Spin(50, 4, 11),
    ]
    # the wheel: 17, 22 (the voided spin), 4, 30, 6 (never seen by the table), no 11
    _, found = compare([6, 30, 4, 22, 17], journal)
    kinds = [(m["kind"], m["wheel_number"], m["table_number"]) for m in found]
    assert ("voided-by-table", 22, None) in kinds
    assert found[0]["reason"] == "ball-revolutions" and found[0]["wheel_spin"] == 2
    assert ("different-number", 6, 11) in kinds or {
        ("missed-by-table", 6, None),
        ("not-in-wheel-log", None, 11),
    } <= set(kinds)


def roulette_config(tmp_path, misrecord: list[int]):
    pub, rep = free_port(), free_port()
    text = (ROOT / "config" / "roulette.toml").read_text()
    text = text.replace("tcp://127.0.0.1:7710", f"tcp://127.0.0.1:{pub}")
    text = text.replace("tcp://127.0.0.1:7711", f"tcp://127.0.0.1:{rep}")
    run = tempfile.mkdtemp(prefix="wr-", dir="/tmp")
    text = text.replace(
        'game = "roulette"\n',
        f'game = "roulette"\nstate_dir = "{tmp_path}/state"\nruntime_dir = "{run}"\n',
        1,
    )
    text = text.replace("period = 0.5", f"period = 0.05\nmisrecord = {misrecord}")
    text = re.sub(
        r'"2" = [\d.]+\n"3" = [\d.]+\n"4" = [\d.]+\n"5" = [\d.]+',
        '"2" = 0.4\n"3" = 0.4\n"4" = 0.4\n"5" = 0.3',
        text,
    )
    group = grp.getgrgid(os.getgid()).gr_name  # a technician's socket, for the wheel's commands
    text = re.sub(r"^roles = .*\n", "", text, flags=re.M)  # the demo's own technician socket
    text = text.replace("[control]\n", f'[control]\nroles = {{ technician = "{group}" }}\n', 1)
    cfg = tmp_path / "roulette.toml"
    cfg.write_text(text)
    return cfg, f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{rep}"


@pytest.mark.parametrize("misrecord", [[], [3]], ids=["clean", "planted"])
def test_against_the_simulated_wheel(tmp_path, misrecord):
    """The SS2 simulator logs its 3rd result wrongly (a planted memory fault), or not at all."""
    cfg, pub, rep = roulette_config(tmp_path, misrecord)
    d = Daemon(cfg)
    try:
        d.start()
        f = Follower(pub, rep, table="roulette-1")
        results = 0
        deadline = time.monotonic() + 120  # a hang guard: what the test waits for ends it
        for e in f.events(timeout=15):
            results += e.type == "spin.result"
            if results >= 4 or time.monotonic() > deadline:
                break
        assert results >= 4
        # log pages are read only while the wheel is idle: power it down, as at table close
        r = tablectl(cfg, "--role", "technician", "device", "wheel", "*P", "0")
        assert r.returncode == 0, r.stderr
        f.until(lambda e: e.type == "wheel.state" and e.data["wheel_state"] == 6, 10)
        f.close()
        r = tablectl(cfg, "--role", "technician", "--actor", "tech1", "wheel", "reconcile")
        out = r.stdout
    finally:
        d.stop()
        d.close()
    db = sqlite3.connect(tmp_path / "state" / "journal.sqlite")
    rows = [json.loads(b) for (b,) in db.execute("SELECT body FROM events ORDER BY seq")]
    db.close()
    [rec] = [e["data"] for e in rows if e["type"] == "wheel.reconciled"]
    settled = [e["data"] for e in rows if e["type"] == "spin.result"]
    assert rec["compared"] == len(settled) == rec["logged"]
    alarms = [e["data"]["kind"] for e in rows if e["type"] == "alarm.raised"]
    if not misrecord:
        assert (r.returncode, rec["mismatches"]) == (0, []), out
        assert "no mismatch" in out and "wheel-log-mismatch" not in alarms
    else:
        third = settled[2]
        assert r.returncode == 1, out
        assert rec["mismatches"] == [
            {
                "kind": "different-number",
                "wheel_spin": third["wheel_spin"],
                "wheel_number": (third["number"] + 1) % 37,
                "table_number": third["number"],
                "seq": next(
                    e["seq"]
                    for e in rows
                    if e["type"] == "spin.result" and e["data"]["spin"] == third["spin"]
                ),
            }
        ]
        assert f"game {third['wheel_spin']}: the wheel logged" in out
        assert "wheel-log-mismatch" in alarms
