"""Every wheel exception end to end: the SS2 simulator on a pty, the real daemon, the bus."""

from __future__ import annotations

import re
import tempfile
import time

import pytest
from daemon_harness import ROOT, Daemon, free_port

from daemon.bus.subscriber import Follower

pytestmark = pytest.mark.slow

#: what the table must publish for each exception the simulator injects
EXPECTED = {
    "ball-direction": {("spin.void", "ball-direction")},
    "launch-failure": {("spin.void", "launch-failure")},
    "ball-missing": {("spin.void", "ball-missing")},
    "no-number": {("spin.void", "no-winning-number")},
    "component-fault": {("alarm.raised", "device-fault"), ("spin.void", "component-fault")},
    "fault-code": {("alarm.raised", "device-fault"), ("spin.void", "component-fault")},
    "drop-to-idle": {("alarm.raised", "device-fault"), ("spin.void", "component-fault")},
    "counter-jump": {("alarm.raised", "spin-counter")},
    "impossible-state": {("alarm.raised", "impossible-state"), ("spin.void", "impossible-state")},
    "repeat-number": {("alarm.raised", "repeat-number")},
}


def test_every_injected_fault_is_covered():
    from drivers.sim.wheel import FAULTS

    assert set(FAULTS) == set(EXPECTED)


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_wheel_exception_through_the_daemon(tmp_path, kind):
    pub, rep = free_port(), free_port()
    text = (ROOT / "config" / "roulette.toml").read_text()
    text = text.replace("tcp://127.0.0.1:7710", f"tcp://127.0.0.1:{pub}")
    text = text.replace("tcp://127.0.0.1:7711", f"tcp://127.0.0.1:{rep}")
    run = tempfile.mkdtemp(prefix="we-", dir="/tmp")
    text = text.replace(
        'game = "roulette"\n',
        f'game = "roulette"\nstate_dir = "{tmp_path}/state"\nruntime_dir = "{run}"\n',
        1,
    )
    text = text.replace("period = 0.5", f'period = 0.05\nfaults = ["{kind}"]\nfault_hold = 1.0')
    text = re.sub(
        r'"2" = [\d.]+\n"3" = [\d.]+\n"4" = [\d.]+\n"5" = [\d.]+',
        '"2" = 0.6\n"3" = 0.6\n"4" = 0.6\n"5" = 0.4',
        text,
    )
    cfg = tmp_path / "roulette.toml"
    cfg.write_text(text)
    d = Daemon(cfg)
    seen: set[tuple[str, object]] = set()
    try:
        d.start()
        f = Follower(f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{rep}", table="roulette-1")
        deadline = time.monotonic() + 120  # a hang guard: what the test waits for ends it
        for e in f.events(timeout=15):
            if e.type in ("spin.void", "alarm.raised"):
                seen.add((e.type, e.data.get("reason") or e.data.get("kind")))
            if EXPECTED[kind] <= seen or time.monotonic() > deadline:
                break
        f.close()
    finally:
        d.stop()
        d.close()
    assert EXPECTED[kind] <= seen, seen
