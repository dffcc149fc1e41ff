"""tablectl wheel: a technician's commands to the wheel go through the table, journaled, with replies."""

from __future__ import annotations

import grp
import json
import os
import re
import sqlite3
import tempfile
from pathlib import Path

from daemon_harness import ROOT, Daemon, free_port, tablectl


def roulette_config(tmp: Path, roles: bool = True) -> Path:
    text = (ROOT / "config" / "roulette.toml").read_text()
    text = re.sub(r"tcp://127.0.0.1:7710", f"tcp://127.0.0.1:{free_port()}", text)
    text = re.sub(r"tcp://127.0.0.1:7711", f"tcp://127.0.0.1:{free_port()}", text)
    run = tempfile.mkdtemp(prefix="tw-", dir="/tmp")
    group = grp.getgrgid(os.getgid()).gr_name
    text = text.replace(
        'game = "roulette"\n',
        f'game = "roulette"\nstate_dir = "{tmp}/state"\nruntime_dir = "{run}"\n',
        1,
    )
    text = text.replace("period = 0.5", "period = 0.05")
    if not roles:  # the demo's own control section
        cfg = tmp / "roulette.toml"
        cfg.write_text(text)
        return cfg
    text = re.sub(r"(?m)^roles = .*\n", "", text)
    roles_line = f'roles = {{ technician = "{group}", supervisor = "{group}" }}\n'
    text = (
        text.replace("[control]\n", "[control]\n" + roles_line, 1)
        if "[control]" in text
        else (text + "\n[control]\n" + roles_line)
    )
    cfg = tmp / "roulette.toml"
    cfg.write_text(text)
    return cfg


def test_wheel_version_and_settings_are_journaled_with_replies(tmp_path):
    cfg = roulette_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        refused = tablectl(cfg, "--role", "supervisor", "wheel", "version")
        assert refused.returncode == 1 and "needs the technician role" in refused.stderr
        v = tablectl(cfg, "--role", "technician", "--actor", "tech1", "wheel", "version")
        assert v.returncode == 0, v.stderr
        assert "SlingShot" in v.stdout or "Cammegh" in v.stdout
        st = tablectl(cfg, "--role", "technician", "--json", "wheel", "settings", "D", "Z")
        replies = json.loads(st.stdout)
        assert {r["command"] for r in replies} >= {"*T D", "*T Z"}
    finally:
        d.stop()
        d.close()
    db = sqlite3.connect(tmp_path / "state" / "journal.sqlite")
    cmds = [
        json.loads(b)["data"]
        for (b,) in db.execute("SELECT body FROM events WHERE type = 'device.command'")
    ]
    db.close()
    assert [(c["command"], c["by"]) for c in cmds[:2]] == [("*V", "tech1"), ("*S", "tech1")]


def test_the_roulette_demo_has_a_technician_socket_for_wheel_commands(tmp_path):
    """config/roulette.toml as shipped: `tablectl wheel version` works without --role."""
    cfg = roulette_config(tmp_path, roles=False)
    d = Daemon(cfg)
    try:
        d.start()
        v = tablectl(cfg, "--actor", "tech1", "wheel", "version")
        assert v.returncode == 0, v.stderr
        assert "SlingShot" in v.stdout or "Cammegh" in v.stdout
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert st["table"]  # the main socket (supervisor in the demo) still answers the rest
    finally:
        d.stop()
        d.close()
