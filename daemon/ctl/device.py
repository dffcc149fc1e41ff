"""``tablectl device`` and ``tablectl wheel``: a technician's commands to one device, journaled
through the table first, and the device's replies read back from the bus."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from daemon.ctl.shared import (
    EXIT_ATTENTION,
    EXIT_OK,
    EXIT_USAGE,
    call,
    follower,
    print_json,
    settings,
)


def _device_session(
    a: argparse.Namespace,
    device: str,
    commands: list[str],
    wait: float,
    until: Any = None,
    verdict: Any = None,
) -> int:
    """Send commands through the table (journaled), then show the device's replies from the bus."""

    s = settings(a)
    f = follower(a, s)
    try:
        next(f.events(timeout=3.0, heartbeats=True), None)  # live subscription before we ask
        start = None
        for text in commands:
            rc, res = call(a, "device.command", device=device, command=text)
            if rc:
                return rc
            start = res["last_seq"] if start is None else start
        f.rewind((start or 1) - 1)
        replies = []
        deadline = time.monotonic() + wait
        for ev in f.events(timeout=max(0.1, wait), heartbeats=False):
            if ev.type == "device.reply" and ev.data.get("device") == device:
                replies.append(ev.data)
                if not a.json:
                    print(f"{ev.time}  {ev.data['command']:<8} {ev.data['text']}")
            if time.monotonic() > deadline or (until is not None and until(replies)):
                break
        if a.json:
            print_json(replies)
        if not replies:
            if not a.json:
                print(f"no reply from {device} within {wait:g} s", file=sys.stderr)
            return EXIT_ATTENTION
        if verdict is not None and (bad := verdict(replies)):
            print(f"tablectl: {bad}", file=sys.stderr)
            return EXIT_ATTENTION
        return EXIT_OK
    finally:
        f.close()


def cmd_device(a: argparse.Namespace) -> int:
    if a.device == "shake" and not a.command:
        # the one device whose driver can shake (dice-ref: the S frame), journaled like any
        # device command; the shaker's reports then close betting and give the result
        from drivers.base import driver_class

        s = settings(a)
        shakers = [
            d.name
            for d in s.config.devices
            if driver_class(d.driver).shake_command is not None
        ]
        if len(shakers) != 1:
            print(
                f"tablectl device shake: {len(shakers)} devices of this table can shake dice "
                f"({', '.join(shakers) or 'none'}); name one: tablectl device NAME shake",
                file=sys.stderr,
            )
            return EXIT_USAGE
        a.device, a.command = shakers[0], ["shake"]
    named = _named_commands(a)
    if named is None:
        return EXIT_USAGE
    if a.list:
        if a.json:
            print_json({n: {"command": c, "help": h} for n, (c, h) in named.items()})
        elif not named:
            print(f"{a.device}: its driver names no commands; send the command text itself")
        else:
            wn = max(map(len, named))
            wc = max(len(c) for c, _ in named.values())
            for n, (c, h) in named.items():
                print(f"{n:<{wn}}  {c:<{wc}}  {h}")
        return EXIT_OK
    if not a.command:
        print(
            "tablectl device: give a command after the device name "
            f"(`tablectl device {a.device} --list` shows them by name)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    text = " ".join(a.command)
    text = named[text][0] if text in named else text  # by name, as `upscmd ups NAME`
    return _device_session(a, a.device, [text], a.wait, lambda r: len(r) >= 1)


def _named_commands(a: argparse.Namespace) -> dict[str, tuple[str, str]] | None:
    """The device's commands by name, from its driver (None: no such device, said why)."""
    from drivers.base import driver_class

    s = settings(a)
    if not s.config.devices:
        # this user cannot read the table's config (a role's user, docs/security.md): the
        # daemon knows its devices and judges the role; the command goes as its text
        return {}
    for d in s.config.devices:
        if d.name == a.device:
            return dict(driver_class(d.driver).named_commands)
    names = ", ".join(d.name for d in s.config.devices)
    print(f"tablectl device: this table has no device {a.device!r} ({names})", file=sys.stderr)
    return None


def _driver_of(a: argparse.Namespace, device: str) -> tuple[int, Any]:
    """(exit code, the device's driver class): from the config, else from the daemon (a
    role's user cannot read the config, docs/security.md), by its name in the registry."""
    from drivers.base import DriverError, driver_class

    s = settings(a)
    drivers = {d.name: d.driver for d in s.config.devices}
    if not drivers:
        rc, res = call(a, "devices")
        if rc:
            return rc, None
        drivers = {d["name"]: d["driver"] for d in res["devices"]}
    if device not in drivers:
        names = ", ".join(drivers) or "none"
        print(f"tablectl: this table has no device {device!r} ({names})", file=sys.stderr)
        return EXIT_USAGE, None
    try:
        return EXIT_OK, driver_class(drivers[device])
    except DriverError as e:
        print(f"tablectl: {device}: {e}", file=sys.stderr)
        return EXIT_USAGE, None


def cmd_wheel(a: argparse.Namespace) -> int:
    """A session the device's driver declares (``Driver.diagnostics``), or the reconciliation
    of its own log of results with the journal (``Driver.result_log``, the game's check)."""
    rc, driver = _driver_of(a, a.device)
    if rc:
        return int(rc)
    if a.action == "reconcile":
        from daemon.tools import reconcile

        return reconcile.run(a, driver)
    tool = driver.diagnostics.get(a.action)
    if tool is None:
        have = ", ".join(driver.diagnostics) or "none"
        print(
            f"tablectl wheel {a.action}: {a.device}'s driver ({driver.name}) has no such "
            f"session (its sessions: {have})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        commands = tool.commands(a.args)
    except ValueError as e:
        print(f"tablectl wheel {a.action}: {e}", file=sys.stderr)
        return EXIT_USAGE
    done = tool.done or (lambda replies: len(replies) >= len(commands))
    return _device_session(a, a.device, commands, a.wait or tool.wait, done, tool.verdict)
