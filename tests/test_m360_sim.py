"""The Mercury 360 simulator at each level: through a real pty, the real daemon and the bus.

``config/roulette-m360.toml`` (ports, state and pace moved) runs as a daemon
process with the simulator's faults queued; the table must publish for each
Mercury exception the same procedure's events a SlingShot 2 table publishes
for its own (``tests/test_wheel_e2e.py``), at the levels that can show it.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, free_port

from daemon.bus.subscriber import Follower
from drivers.cammegh import M360Driver, M360Options
from drivers.sim.m360 import M360_FAULTS, M360Simulator

#: what each Mercury exception must publish, at the levels whose frames can show it
EXPECTED: dict[str, dict[str, set[tuple[str, object]]]] = {
    "basic": {
        # basic frames carry no flags: a fault shows only as a re-spin (*S again, no *W)
        "no-number": {("spin.void", "no-winning-number")},
        "repeat-number": {("alarm.raised", "repeat-number")},
    },
    "advanced": {
        "ball-direction": {("spin.void", "ball-direction")},
        "wheel-void": {("spin.void", "wheel-void")},
        "rim-sensor": {("alarm.raised", "device-fault")},
        "no-number": {("spin.void", "no-winning-number")},
        "repeat-number": {("alarm.raised", "repeat-number")},
    },
    "extended": {
        "ball-direction": {("spin.void", "ball-direction")},
        "wheel-void": {("spin.void", "wheel-void")},
        "low-revolutions": {("spin.void", "ball-revolutions")},
        "no-number": {("spin.void", "no-winning-number")},
    },
}


def config(tmp_path: Path, level: str, faults: list[str]) -> tuple[Path, str, str]:
    pub, rep = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    text = (ROOT / "config" / "roulette-m360.toml").read_text()
    text = text.replace('"tcp://127.0.0.1:7750"', f'"{pub}"').replace(
        '"tcp://127.0.0.1:7751"', f'"{rep}"'
    )
    run = tempfile.mkdtemp(prefix="m3-", dir="/tmp")
    text = text.replace(
        'game = "roulette"\n',
        f'game = "roulette"\nstate_dir = "{tmp_path}/state"\nruntime_dir = "{run}"\n',
        1,
    )
    text = re.sub(r"level = \"\w+\"      #", f'level = "{level}"      #', text)
    text = text.replace("fault_every = 4", "fault_every = 0")
    if level != "extended":  # config check refuses the rule where the frames carry no revolutions
        text = re.sub(r"min_ball_revolutions = \d+ .*\n", "", text)
    text = text.replace(
        "period = 0.5            # seconds between status frames\n",
        f"period = 0.05\nfaults = {faults!r}\nfault_hold = 0.5\n".replace("'", '"'),
    )
    text = re.sub(
        r'"2" = [\d.]+\n"3" = [\d.]+\n"4" = [\d.]+\n"5" = [\d.]+',
        '"2" = 0.4\n"3" = 0.4\n"4" = 0.4\n"5" = 0.3',
        text,
    )
    assert pub in text and f'level = "{level}"' in text and "faults = [" in text
    cfg = tmp_path / "m360.toml"
    cfg.write_text(text)
    return cfg, pub, rep


def test_every_fault_is_shown_at_some_level():
    assert {k for want in EXPECTED.values() for k in want} | {"rotor-speed"} == set(M360_FAULTS)


def test_the_driver_has_a_simulator_and_config_check_accepts_the_config():
    sim = M360Driver(M360Options(level="basic")).simulator({"seed": 3})
    assert isinstance(sim, M360Simulator) and sim.level == "basic"
    with pytest.raises(ValueError, match="unknown field `bogus`"):
        M360Driver(M360Options(level="basic")).simulator({"bogus": 1})
    from daemon.runtime.config import load

    assert load(ROOT / "config" / "roulette-m360.toml").config.devices[0].port == "sim"


@pytest.mark.slow
@pytest.mark.parametrize("level", sorted(EXPECTED))
def test_each_level_runs_and_its_exceptions_reach_the_bus(tmp_path, level):
    faults = sorted(EXPECTED[level])
    cfg, pub, rep = config(tmp_path, level, faults)
    want = set().union(*EXPECTED[level].values()) | {("spin.result", None)}
    seen: set[tuple[str, object]] = set()
    results = 0
    d = Daemon(cfg)
    try:
        d.start()
        f = Follower(pub, rep, table="roulette-m360")
        deadline = time.monotonic() + 120  # a hang guard: what the test waits for ends it
        for e in f.events(timeout=15):
            if e.type == "spin.result":
                results += 1
                seen.add(("spin.result", None))
            elif e.type in ("spin.void", "alarm.raised"):
                seen.add((e.type, e.data.get("reason") or e.data.get("kind")))
            if want <= seen or time.monotonic() > deadline:
                break
        f.close()
    finally:
        d.stop()
        d.close()
    assert want <= seen, (level, seen)
    assert results >= 1
