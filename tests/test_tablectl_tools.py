"""tablectl ports, probe and doctor, against real ptys and made-up configs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import tty

import serial
from daemon_harness import ROOT

from daemon.tools.doctor import holders


def ctl(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def config(tmp_path, port: str) -> str:
    p = tmp_path / "t.toml"
    p.write_text(
        f'[table]\nid = "t"\ngame = "baccarat"\nstate_dir = "{tmp_path}"\n'
        f'[[devices]]\nname = "shoe"\ndriver = "shoe-line"\nport = "{port}"\n'
    )
    return str(p)


def pty() -> tuple[int, str]:
    m, s = os.openpty()
    tty.setraw(s)
    name = os.ttyname(s)
    os.close(s)
    return m, name


def test_ports_marks_a_missing_configured_device(tmp_path):
    r = ctl("--config", config(tmp_path, "usb:0403:6001:NOPE"), "ports")
    assert r.returncode == 1
    assert "MISSING: device 'shoe' (shoe-line) at usb:0403:6001:NOPE" in r.stdout
    assert "serial ports:" in r.stdout and "usb devices:" in r.stdout


def test_doctor_flags_a_bare_ttyusb_name(tmp_path):
    r = ctl("--config", config(tmp_path, "/dev/ttyUSB0"), "doctor")
    assert r.returncode == 1
    assert "renumbered after a replug" in r.stdout and "/dev/serial/by-id" in r.stdout
    assert "/dev/ttyUSB0 does not exist" in r.stdout


def test_holders_finds_who_has_a_port_open():
    m, name = pty()
    fd = os.open(name, os.O_RDWR | os.O_NOCTTY)
    try:
        assert any(pid == os.getpid() for pid, _ in holders(name))
    finally:
        os.close(fd)
        os.close(m)


def test_probe_decodes_traffic_and_refuses_a_held_port(tmp_path):
    m, name = pty()
    stop = threading.Event()

    def device() -> None:  # a shoe that keeps sending, as a device on a bench would
        while not stop.wait(0.05):
            try:
                os.write(m, b"KD\r\nZZ\x01\r\n")
            except OSError:
                return

    t = threading.Thread(target=device, daemon=True)
    t.start()
    try:
        r = ctl("probe", "--driver", "shoe-line", "--port", name, "--seconds", "1.5")
        assert r.returncode == 0, r.stderr
        assert '"card": "KD"' in r.stdout and "malformed" in r.stdout
        held = serial.Serial(name, exclusive=True)
        try:
            r = ctl("probe", "--driver", "shoe-line", "--port", name, "--seconds", "0.5")
            assert r.returncode == 1 and "held by another process" in r.stderr
        finally:
            held.close()
    finally:
        stop.set()
        t.join(2)
        os.close(m)
