"""``tablectl device shake``: the daemon commands the dice shaker's shake, journaled first.

config/sicbo.toml (no croupier: people open betting) runs as a daemon on the simulated
dice-ref shaker, through its pty; the shake is the protocol's ``S`` frame.
"""

from __future__ import annotations

import grp
import json
import os
import sqlite3
import tempfile

from daemon_harness import ROOT, Daemon, free_port, tablectl

from daemon.bus.subscriber import Follower
from drivers.dice_ref import DiceRefDriver, DiceRefOptions, encode_frame


def test_the_driver_encodes_its_commands_by_name_and_refuses_others():
    drv = DiceRefDriver(DiceRefOptions())
    assert drv.encode_command("shake") == encode_frame(b"S") == bytes.fromhex("7a00535355")
    assert drv.encode_command("self-test") == encode_frame(b"T")
    try:
        drv.encode_command("*V")
    except ValueError as e:
        assert "shake" in str(e)
    else:
        raise AssertionError("a text command reached a binary protocol")


def config(tmp_path):
    pub, rep = free_port(), free_port()
    text = (ROOT / "config" / "sicbo.toml").read_text()
    text = text.replace("tcp://127.0.0.1:7730", f"tcp://127.0.0.1:{pub}")
    text = text.replace("tcp://127.0.0.1:7731", f"tcp://127.0.0.1:{rep}")
    run = tempfile.mkdtemp(prefix="ds-", dir="/tmp")
    text = text.replace(
        'game = "sicbo"\n',
        f'game = "sicbo"\nstate_dir = "{tmp_path}/state"\nruntime_dir = "{run}"\n',
        1,
    )
    text = text.replace("betting_seconds = 5.0\n", "")  # no croupier: people open betting
    text = text.replace("pace = 1.5 ", "pace = 0.2 ").replace(
        "error_every = 6 ", "error_every = 0 "
    )
    group = grp.getgrgid(os.getgid()).gr_name
    text = text.replace(
        "[control]\n",
        f'[control]\nroles = {{ technician = "{group}", supervisor = "{group}" }}\n',
        1,
    )
    cfg = tmp_path / "sicbo.toml"
    cfg.write_text(text)
    return cfg, f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{rep}"


def test_device_shake_shakes_the_dice_through_the_table(tmp_path):
    cfg, pub, rep = config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        f = Follower(pub, rep, table="sicbo")
        f.until(lambda e: e.type == "device.connected", 10)
        assert tablectl(cfg, "--role", "supervisor", "betting", "open").returncode == 0
        bad = tablectl(cfg, "--role", "technician", "device", "shaker", "*V")
        assert bad.returncode == 1 and "the dice-ref shaker takes" in bad.stderr
        r = tablectl(cfg, "--role", "technician", "--actor", "tech1", "device", "shake")
        assert r.returncode == 0, r.stderr
        assert "accepted" in r.stdout
        seen = f.until(lambda e: e.type == "dice.result", 15)
        f.close()
    finally:
        d.stop()
        d.close()
    types = [e.type for e in seen]
    assert "dice.shaking" in types and "betting.closed" in types
    db = sqlite3.connect(tmp_path / "state" / "journal.sqlite")
    rows = [json.loads(b) for (b,) in db.execute("SELECT body FROM events ORDER BY seq")]
    db.close()
    cmds = [e for e in rows if e["type"] == "device.command"]
    assert [(c["data"]["command"], c["data"]["by"]) for c in cmds] == [("shake", "tech1")]
    shaking = next(e["seq"] for e in rows if e["type"] == "dice.shaking")
    assert cmds[0]["seq"] < shaking  # journaled before the shaker moved
    replies = [e["data"]["text"] for e in rows if e["type"] == "device.reply"]
    assert "accepted" in replies
