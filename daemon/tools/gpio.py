"""``tablectl gpio test``: the dealer's panel without the daemon — presses live, each light cycled.

A technician at the table stops the service, runs this, presses each button
and watches the lamps: every debounced press and release is printed with its
time, how long it was held and how many raw edges the contact made (a worn
button bounces more), and each light goes on, then blinks, then off. The
daemon must not be running on real pins: one pin, one owner. ``--mock`` uses
gpiozero's MockFactory instead (demos, tests, a PC without pins), and there
``--press NAME`` simulates a press, or a shoe lifted and put back
(``shoe_present``), or the panel's cable pulled and replugged (``panel_sense``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
from typing import Any

import structlog

from daemon.runtime.config import DeviceConfig, Settings

EXIT_OK, EXIT_ATTENTION, EXIT_USAGE = 0, 1, 2


def _panel_device(s: Settings, name: str | None) -> DeviceConfig | str:
    panels = [d for d in s.config.devices if d.driver == "gpio-panel"]
    if name is not None:
        panels = [d for d in panels if d.name == name]
        if not panels:
            return f"no gpio-panel device named {name!r} in {s.source}"
    if not panels:
        return f"no gpio-panel device in {s.source}"
    if len(panels) > 1:
        names = ", ".join(d.name for d in panels)
        return f"{len(panels)} gpio-panel devices in {s.source} ({names}): choose one with --device"
    return panels[0]


def daemon_answers(s: Settings, timeout: float = 1.0) -> str | None:
    """Where a running tabled answers for this table, or None when none does."""
    from daemon.bus.control import ControlError
    from daemon.bus.ipc import ipc_path, probe_unix
    from daemon.ctl.control_client import ControlClient, DaemonUnreachable

    for ep in (s.control_endpoint, *s.role_endpoints.values()):
        path = ipc_path(ep)
        if path is not None:
            if probe_unix(path) in ("live", "denied"):
                return path
            continue
        client = ControlClient(ep, timeout=timeout)
        try:
            client.call("status")
            return ep
        except ControlError:
            return ep  # it answered, if only to refuse
        except (DaemonUnreachable, OSError):
            continue
        finally:
            client.close()
    return None


class _Out:
    """Lines for a person, or JSON lines with ``--json``; times from the start."""

    def __init__(self, as_json: bool) -> None:
        self.json = as_json
        self.t0 = time.monotonic()

    def __call__(self, kind: str, text: str, mono: float | None = None, **data: Any) -> None:
        t = (time.monotonic() if mono is None else mono) - self.t0
        if self.json:
            rec = {"t": round(t, 3), "kind": kind, **data}
            sys.stdout.write(json.dumps(rec, sort_keys=True) + "\n")
        else:
            sys.stdout.write(f"{t:8.3f}  {text}\n")
        sys.stdout.flush()


class _Sink:
    """Stands in for the daemon's device runner: prints the link and the shoe switch."""

    def __init__(self, out: _Out) -> None:
        self.out = out
        self.first: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def on_connected(self, info: dict[str, Any]) -> None:
        self.out("connected", f"panel open on {info.get('port')}", port=info.get("port"))
        if not self.first.done():
            self.first.set_result(None)

    def on_disconnected(self, reason: str) -> None:
        self.out("disconnected", f"panel not available: {reason}", reason=reason)
        if not self.first.done():
            self.first.set_result(reason)

    def on_data(self, data: bytes, mono: float) -> None:
        pass  # the shoe switch is printed from the panel's own events


def run_test(a: argparse.Namespace) -> int:
    from daemon.ctl.shared import settings as _settings
    from drivers.gpio.options import BUTTONS, SWITCHES, GpioPanelOptions
    from drivers.gpio_panel import GpioPanelDriver

    s = _settings(a)
    dc = _panel_device(s, a.device)
    if isinstance(dc, str):
        print(f"tablectl gpio test: {dc}", file=sys.stderr)
        return EXIT_USAGE
    options = s.device_options[dc.name]
    assert isinstance(options, GpioPanelOptions)
    mock = a.mock or dc.port == "sim"
    if a.press and not mock:
        print("tablectl gpio test: --press drives mock pins: add --mock", file=sys.stderr)
        return EXIT_USAGE
    pins = options.pins()
    for name in a.press:
        if name not in (*BUTTONS, *SWITCHES):
            known = ", ".join((*BUTTONS, *SWITCHES))
            print(
                f"tablectl gpio test: --press {name}: not a panel input ({known})", file=sys.stderr
            )
            return EXIT_USAGE
        if name not in pins:
            print(
                f"tablectl gpio test: --press {name}: no pin configured for it on {dc.name}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if not mock:  # mock pins are the tool's own: no owner to collide with
        where = daemon_answers(s)
        if where is not None:
            print(
                f"tabled is running for table {s.table} (it answers on {where}) and owns the "
                f"panel's pins: one pin, one owner. Stop it first (systemctl stop "
                f"tabled@{s.table}), or use --mock.",
                file=sys.stderr,
            )
            return EXIT_ATTENTION
    # The panel's own log would repeat what is printed here: only its errors, on stderr.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    panel = GpioPanelDriver(options).panel(
        None,
        name=dc.name,
        port="sim" if mock else "gpio",
        sim=dc.sim if dc.port == "sim" else {},
        reconnect_max=5.0,
    )
    return asyncio.run(_test(panel, a, _Out(a.json)))


async def _test(panel: Any, a: argparse.Namespace, out: _Out) -> int:
    from daemon.table.buttons import BUTTON_COMMANDS
    from drivers.gpio.options import BUTTONS, LIGHTS
    from drivers.gpio.panel import PanelEvent
    from drivers.sim.gpio_panel import drive_active

    o = panel.o

    def seen(ev: PanelEvent) -> None:
        if ev.kind == "press":
            cmd = BUTTON_COMMANDS[ev.name][0]
            role = o.role_of(ev.name)
            out(
                "press",
                f"{ev.name:<14} pressed  ({ev.edges} edge(s); the daemon would send {cmd} "
                f"as {role})",
                ev.mono,
                name=ev.name,
                edges=ev.edges,
                command=cmd,
                role=role,
            )
        elif ev.kind == "release":
            out(
                "release",
                f"{ev.name:<14} released after {ev.held:.3f} s ({ev.edges} edge(s))",
                ev.mono,
                name=ev.name,
                held=round(ev.held or 0.0, 3),
                edges=ev.edges,
            )
        elif ev.kind == "shoe":
            what = "shoe present" if ev.state else "shoe removed"
            out("shoe", f"{'shoe_present':<14} {what}", ev.mono, present=ev.state)
        else:
            what = "panel plugged in" if ev.state else "panel UNPLUGGED (sense line open)"
            out("sense", f"{'panel_sense':<14} {what}", ev.mono, plugged=ev.state)

    panel.watchers.append(seen)
    sink = _Sink(out)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(panel.run(sink))
    try:
        problem = await sink.first
        if problem is not None and not panel.inputs and not panel.leds:
            return EXIT_ATTENTION
        for name, pin in o.pins().items():
            out("pin", f"{name:<14} pin {pin!r}", name=name, pin=pin)
        out("ready", "press the buttons; Ctrl-C to stop")

        async def lights() -> None:
            ls = a.light_seconds
            for color in LIGHTS:
                if color not in panel.leds:
                    continue
                for mode, secs in (("on", ls), ("blink", max(2 * ls, 2 * o.blink)), ("off", 0)):
                    panel.set_light(color, mode)
                    out("light", f"light {color:<6} {mode}", name=color, mode=mode)
                    if secs:
                        await asyncio.sleep(secs)

        async def presses() -> None:
            need = max(o.debounce, o.hold)
            for name in a.press:
                pin = panel.mock_pin(name)
                if name in BUTTONS:
                    hold = max(o.debounce, o.hold_of(name))
                    drive_active(pin, True, o.pull_up)
                    await asyncio.sleep(hold + 0.05)
                    drive_active(pin, False, o.pull_up)
                else:  # a switch: out and back to where it was
                    was = bool(panel.inputs[name].device.is_active)
                    drive_active(pin, not was, o.pull_up)
                    await asyncio.sleep(need + 0.1)
                    drive_active(pin, was, o.pull_up)
                await asyncio.sleep(o.debounce + 0.05)

        jobs = []
        if not a.no_lights:
            jobs.append(asyncio.create_task(lights()))
        if a.press:
            jobs.append(asyncio.create_task(presses()))
        if a.seconds is not None:
            try:
                await asyncio.wait_for(stop.wait(), a.seconds)
            except TimeoutError:
                pass
        elif a.mock and jobs:  # mock pins: done when the presses and the light cycle are
            stopper = asyncio.create_task(stop.wait())
            both = asyncio.gather(*jobs)
            await asyncio.wait([both, stopper], return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if both.done() and not both.cancelled() and both.exception() is not None:
                raise both.exception()  # type: ignore[misc]
        else:
            await stop.wait()
        for j in jobs:
            j.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        if panel.port == "sim":
            for color, led in panel.leds.items():
                changes = len(led.pin.states) - 1
                out(
                    "light-pin",
                    f"light {color:<6} pin {led.pin.info.name}: {changes} change(s)",
                    name=color,
                    changes=changes,
                )
        presses_seen = sum(panel.counters.presses.values())
        out("done", f"{presses_seen} press(es) seen", presses=presses_seen)
        return EXIT_OK
    finally:
        await panel.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
