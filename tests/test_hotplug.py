"""Hotplug and backoff: a device that appears is tried at once; without udev the backoff, jittered."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from test_serial_transport import Sink, running, transport_for

from daemon.runtime.hotplug import Hotplug
from drivers.sim.pty import PtyLink


async def test_a_device_that_appears_is_tried_at_once_not_after_the_backoff(tmp_path: Path):
    where = tmp_path / "by-id" / "usb-replugged"
    # a backoff of ten minutes: only the nudge can connect it within the test's guard
    sink, t = Sink(), transport_for(str(where), reconnect_min=600.0, reconnect_max=600.0)
    hp = Hotplug(asyncio.get_running_loop(), lambda: [t])
    async with running(t, sink):
        await sink.expect("disconnected")
        link = PtyLink(link=where)  # plugged in; udev would now say "add"
        try:
            assert hp.nudge(str(where)) == 1
            info = await sink.expect("connected")
            assert info["port"] == link.slave_path
            assert hp.nudge("another") == 0, "a connected transport is left alone"
        finally:
            link.close()


def test_the_backoff_is_jittered_within_its_bounds():
    t = transport_for("/nonexistent", reconnect_min=0.5, reconnect_max=30.0)
    t.rng = random.Random(7)
    waits = [t.backoff(10.0) for _ in range(200)]
    assert all(8.0 <= w <= 12.0 for w in waits)
    assert len({round(w, 6) for w in waits}) > 150, "not jittered"
    assert min(t.backoff(0.5) for _ in range(100)) >= 0.5, "never below reconnect_min"
    t.jitter = 0.0
    assert t.backoff(10.0) == 10.0


def test_without_udev_the_watcher_says_so_and_changes_nothing(monkeypatch, tmp_path):
    import daemon.runtime.hotplug as hotplug

    monkeypatch.setattr(hotplug, "UDEV_CONTROL", tmp_path / "no-udev-control")
    hp = Hotplug(asyncio.new_event_loop(), list)
    assert hp.start() is False and hp.observer is None
    hp.close()
