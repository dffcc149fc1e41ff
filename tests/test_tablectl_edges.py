"""tablectl where a technician meets it: a simulator on a pty, replay on a terminal, monitor in a pipe."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import serial
from daemon_harness import ROOT, Daemon, write_config

CAPTURE = ROOT / "tests" / "captures" / "shoe-line" / "misdeals.log"


def tablectl_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "daemon.cli", *args]


def test_sim_starts_a_shoe_on_a_pty_that_pyserial_reads(tmp_path):
    link = tmp_path / "shoe"
    p = subprocess.Popen(
        tablectl_cmd("sim", "--driver", "shoe-line", "--pace", "0.01", "--link", str(link)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        path = p.stdout.readline().strip()  # printed once the pty is there
        assert path == str(link) and os.path.realpath(link).startswith("/dev/pts/")
        with serial.Serial(path, 9600, timeout=10) as port:
            codes = [port.readline().decode().strip() for _ in range(5)]
        assert all(re.fullmatch(r"(10|[2-9TJQKA])[SHDC]", c) for c in codes), codes
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 0
    assert not link.exists(), "the link goes with the simulator"


def test_sim_of_an_unknown_driver_says_so(tmp_path):
    r = subprocess.run(
        tablectl_cmd("sim", "--driver", "nope"), cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "nope" in r.stderr


def _on_a_terminal(*args: str) -> str:
    master, slave = os.openpty()
    p = subprocess.Popen(tablectl_cmd(*args), cwd=ROOT, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(30) == 0, p.stderr.read()
    return out.decode()


def test_replay_is_readable_on_a_terminal_and_json_when_asked():
    text = _on_a_terminal("replay", str(CAPTURE))
    lines = [x for x in text.splitlines() if x.strip()]
    assert lines and not any(x.lstrip().startswith("{") for x in lines)
    assert any("card.dealt" in x and "→" in x for x in lines)
    assert any("hand.result" in x and "player" in x for x in lines)
    as_json = _on_a_terminal("--json", "replay", str(CAPTURE))
    assert all(json.loads(x)["type"] for x in as_json.splitlines() if x.strip())
    piped = subprocess.run(tablectl_cmd("replay", str(CAPTURE)), cwd=ROOT, capture_output=True)
    assert all(json.loads(x) for x in piped.stdout.splitlines())


def test_monitor_without_a_terminal_prints_one_line_per_event(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        r = subprocess.run(
            tablectl_cmd("--config", str(cfg), "monitor", "--seconds", "2"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert any("daemon.started" in x for x in lines), r.stdout[:500]
        assert not any(x.startswith("{") for x in lines)
        assert "\x1b[" not in r.stdout, "no screen control codes in a pipe"
        assert d.stop() == 0
    finally:
        d.close()
