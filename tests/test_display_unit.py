"""systemd/tabled-display@.service and tabled-pit.service, checked as tests/test_systemd_units.py checks the others:
it parses, runs the display from the same prefix on the table's own config, binds to
localhost, verifies with ``systemd-analyze`` at the bridge's exposure or better, and its
system call filter lets ZeroMQ and aiohttp run (tests/unit_seccomp.py reads it from the file)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_systemd_units import (
    _ZMQ_PROBE,
    SYSTEMD_DIR,
    _need,
    _under_filter,
    analyze,
    exec_start_binary,
    make_root,
    parse_unit,
    single,
)
from test_systemd_units import UNIT as TABLE_UNIT
from test_systemd_units import seccomp as seccomp

DISPLAY = SYSTEMD_DIR / "tabled-display@.service"
PIT = SYSTEMD_DIR / "tabled-pit.service"


def test_display_unit_follows_its_table_and_binds_to_localhost():
    s = parse_unit(DISPLAY.read_text())["Service"]
    start = single(s, "ExecStart")
    assert start.split()[0].rsplit("/", 1)[0] == exec_start_binary().rsplit("/", 1)[0]
    assert start.split()[0].endswith("/tabled-display")
    assert "--from-table /etc/tabled/%i.toml" in start
    assert re.search(r"--listen 127\.0\.0\.1:\d+", start)
    assert single(s, "Restart") == "always"
    u = parse_unit(DISPLAY.read_text())["Unit"]
    assert "tabled@%i.service" in single(u, "After")


def test_pit_unit_reads_the_floor_and_binds_to_localhost():
    s = parse_unit(PIT.read_text())["Service"]
    start = single(s, "ExecStart")
    assert start.split()[0].rsplit("/", 1)[0] == exec_start_binary().rsplit("/", 1)[0]
    assert start.split()[0].endswith("/tabled-pit")
    assert "--users /etc/tabled/pit-users.toml" in start and "--nats " in start
    assert re.search(r"--listen 127\.0\.0\.1:\d+", start)


@pytest.mark.system
@pytest.mark.parametrize(
    ("unit", "instance"),
    [(DISPLAY, "tabled-display@t1.service"), (PIT, "tabled-pit.service")],
    ids=["display", "pit"],
)
def test_view_units_verify_and_are_locked_down(tmp_path: Path, unit: Path, instance: str):
    _need("systemd-analyze")
    root = make_root(tmp_path, TABLE_UNIT.read_text())
    (root / "etc/systemd/system" / unit.name).write_text(unit.read_text())
    exe = single(parse_unit(unit.read_text())["Service"], "ExecStart").split()[0]
    stub = root / exe.lstrip("/")
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    result = analyze(root, "verify", instance)
    noise = [x for x in (result.stdout + result.stderr).splitlines() if instance.split("@")[0] in x]
    assert noise == [] and result.returncode == 0, result.stdout + result.stderr
    sec = analyze(root, "security", "--offline=true", "--no-pager", instance)
    assert sec.returncode == 0, sec.stderr
    exposure = float(re.search(r"Overall exposure level for \S+: (\d+\.\d+)", sec.stdout)[1])
    assert exposure <= 2.5, sec.stdout


_AIOHTTP_PROBE = """
import asyncio
from aiohttp import web

async def main():
    runner = web.AppRunner(web.Application())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    await runner.cleanup()

asyncio.run(main())
print("OK")
"""


@pytest.mark.parametrize("unit", [DISPLAY, PIT], ids=["display", "pit"])
@pytest.mark.parametrize("probe", [_ZMQ_PROBE, _AIOHTTP_PROBE], ids=["zeromq", "aiohttp"])
def test_the_views_run_under_their_units_system_call_filter(seccomp, unit, probe, tmp_path):
    r = _under_filter(unit, sys.executable, "-c", probe, str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr[-2000:]
