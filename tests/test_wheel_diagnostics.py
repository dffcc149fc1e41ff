"""tablectl wheel: a technician's commands to the wheel go through the table, journaled, with replies."""

from __future__ import annotations

import grp
import json
import os
import re
import sqlite3
import subprocess
import sys
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


def test_wheel_selftest_exits_1_on_busy_and_0_only_on_a_clean_self_test(tmp_path):
    """`*F BUSY` is no self-test: exit 1 saying why (issue 33: it exited 0), `*F 0` exit 0."""
    cfg = roulette_config(tmp_path, roles=False)
    d = Daemon(cfg)
    seen: dict[str, int] = {}
    try:
        d.start()
        for _ in range(20):  # the demo wheel is idle at start, then spins: both are met
            r = tablectl(cfg, "--actor", "tech1", "--json", "wheel", "selftest", "--wait", "5")
            texts = {x["text"] for x in json.loads(r.stdout)}
            if "BUSY" in texts:
                assert r.returncode == 1 and "no self-test ran" in r.stderr, r.stderr
                seen["BUSY"] = r.returncode
            elif texts == {"0"}:
                assert r.returncode == 0, r.stderr
                seen["0"] = r.returncode
            if "BUSY" in seen:
                break
    finally:
        d.stop()
        d.close()
    assert seen.get("BUSY") == 1, seen


def test_self_test_verdicts():
    from drivers.cammegh.tools import self_test_verdict

    def rep(*texts: str) -> list[dict[str, str]]:
        return [{"command": "*F", "text": t} for t in texts]

    assert self_test_verdict(rep("0")) is None
    assert "BUSY" in self_test_verdict(rep("BUSY"))
    assert "BUSY" in self_test_verdict(rep("*F BUSY"))
    assert "fault code(s) 11, 5" in self_test_verdict(rep("11", "5", "0"))
    assert "fault code(s) 11 " in self_test_verdict(rep("11"))
    assert "did not finish" in self_test_verdict([])


def test_what_the_device_s_driver_lacks_is_refused_before_anything_is_sent(tmp_path):
    """tablectl wheel asks the device's driver (found by its configured name): a session or
    a log it does not declare, or a game with no log check, is exit 2 saying why, before the
    daemon is asked anything (none runs here)."""
    demo = ROOT / "config" / "demo.toml"
    r = tablectl(demo, "wheel", "version", "--device", "shoe")
    assert r.returncode == 2, r.stderr
    assert "shoe's driver (shoe-line) has no such session (its sessions: none)" in r.stderr
    r = tablectl(demo, "wheel", "reconcile", "--device", "shoe")
    assert r.returncode == 2 and "driver (shoe-line) reads no log of results" in r.stderr
    r = tablectl(demo, "wheel", "version")
    assert r.returncode == 2 and "this table has no device 'wheel' (shoe)" in r.stderr
    # a wheel at a table whose game compares no device log with its journal
    cfg = tmp_path / "t.toml"
    cfg.write_text(
        demo.read_text() + '\n[[devices]]\nname = "wheel"\ndriver = "cammegh-ss2"\nport = "sim"\n'
    )
    r = tablectl(cfg, "wheel", "reconcile")
    assert r.returncode == 2, r.stderr
    assert "table has no log of results to compare" in r.stderr


def test_a_wheel_s_sessions_are_its_driver_s():
    """The sessions tablectl wheel ran before they moved to the driver, command for command."""
    from drivers.base import driver_class

    for name in ("cammegh-ss2", "cammegh-m360"):
        tools = driver_class(name).diagnostics
        assert tools["version"].commands([]) == ["*V", "*S"]
        assert tools["selftest"].commands([]) == ["*F"] and tools["selftest"].wait == 330.0
        assert tools["settings"].commands(["d", "Z"]) == ["*T D", "*T Z"]
        assert len(tools["settings"].commands([])) == 15
        assert tools["log"].commands([]) == ["*s r 0"]
        assert tools["log"].commands(["1", "2"]) == ["*s r 1", "*s r 2"]
        log = driver_class(name).result_log
        assert log is not None and log.page_command(3) == "*s r 3"
        page = "~" * 250 + "".join(chr(n + 0x21) for n in (17, 4, 30, 0, 36, 12))
        assert log.page("*s r 0", page) == [17, 4, 30, 0, 36, 12]
        assert log.page("*T D", page) is None and log.page("*s r 0", "short") is None
        assert "busy" in (log.busy("BUSY") or "") and log.busy(page) is None


def test_a_user_who_cannot_read_the_config_gets_the_wheel_s_driver_from_the_daemon(tmp_path):
    """tablectl -t TABLE without the config (a role's user reads the daemon's note): the
    device's driver comes from the daemon's `devices`, and its session runs as before."""
    cfg = roulette_config(tmp_path, roles=False)
    run_root = Path(tempfile.mkdtemp(prefix="twn-", dir="/tmp"))
    text = re.sub(r'runtime_dir = ".*"', f'runtime_dir = "{run_root}/roulette-1"', cfg.read_text())
    cfg.write_text(text)
    (tmp_path / "etc").mkdir()  # no roulette-1.toml there: the note is all tablectl reads
    env = {**os.environ, "TABLED_ETC": str(tmp_path / "etc"), "TABLED_RUN_ROOT": str(run_root)}
    d = Daemon(cfg)
    try:
        d.start()
        v = subprocess.run(
            [sys.executable, "-m", "daemon.ctl.cli", "-t", "roulette-1", "--actor", "tech1", "wheel",
             "version"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert v.returncode == 0, v.stderr
        assert "*V" in v.stdout and "*S" in v.stdout
    finally:
        d.stop()
        d.close()
