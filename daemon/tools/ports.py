"""``tablectl ports`` and ``tablectl probe``: what is plugged in, and talking to one device without the daemon.

``ports`` lists serial ports (with their USB identity and stable by-id names)
and USB devices, each marked with the configured device it serves, "unused",
or — for a configured device that is not there — "missing". ``probe`` opens
one port itself (never one the daemon holds), asks the device who it is,
runs its self-test where the protocol has one, and shows a few seconds of
decoded traffic: NUT's ``upsc`` and gpsd's ``gpsctl`` for a table.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

BY_ID = Path("/dev/serial/by-id")


def _by_id_names() -> dict[str, str]:
    out: dict[str, str] = {}
    if BY_ID.is_dir():
        for link in BY_ID.iterdir():
            out[os.path.realpath(link)] = str(link)
    return out


def serial_ports() -> list[dict[str, Any]]:
    from serial.tools import list_ports

    names = _by_id_names()
    ports = []
    for p in sorted(list_ports.comports(), key=lambda p: p.device):
        ports.append(
            {
                "device": p.device,
                "by_id": names.get(os.path.realpath(p.device)),
                "vid": f"{p.vid:04x}" if p.vid is not None else None,
                "pid": f"{p.pid:04x}" if p.pid is not None else None,
                "serial": p.serial_number,
                "description": p.description,
            }
        )
    return ports


def usb_devices() -> tuple[list[dict[str, Any]], str | None]:
    try:
        import usb.core

        devs = list(usb.core.find(find_all=True))
    except Exception as e:  # no libusb is common on a fresh PC: say so, don't fail
        return [], f"USB devices not listed: {e} (apt install libusb-1.0-0)"
    out = []
    for d in devs:
        out.append(
            {
                "vid": f"{d.idVendor:04x}",
                "pid": f"{d.idProduct:04x}",
                "bus": d.bus,
                "address": d.address,
            }
        )
    return out, None


def _configured(a: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(name, driver, port spec) of the configured devices, if the config can be read."""
    from daemon.ctl.shared import settings as _settings

    try:
        s = _settings(a)
    except Exception:
        return []
    return [(d.name, d.driver, d.port) for d in s.config.devices]


def _matches(spec: str, port: dict[str, Any]) -> bool:
    from drivers.serial import parse_usb_spec

    usb = parse_usb_spec(spec) if spec.startswith("usb:") else None
    if usb is not None:
        vid, pid, serial = usb
        return (
            port["vid"] == f"{vid:04x}"
            and port["pid"] == f"{pid:04x}"
            and (serial is None or port["serial"] == serial)
        )
    return os.path.realpath(spec) == os.path.realpath(port["device"])


def run_ports(a: argparse.Namespace) -> int:
    ports = serial_ports()
    usb, usb_note = usb_devices()
    conf = _configured(a)
    used: set[str] = set()
    for p in ports:
        owner = [n for n, _, spec in conf if spec != "sim" and _matches(spec, p)]
        p["used_by"] = owner[0] if owner else None
        used.update(owner)
    for u in usb:
        owner = [
            n
            for n, _, spec in conf
            if spec.startswith("usb:") and spec[4:].lower().startswith(f"{u['vid']}:{u['pid']}")
        ]
        u["used_by"] = owner[0] if owner else None
        used.update(owner)
    missing = [
        {"name": n, "driver": drv, "port": spec}
        for n, drv, spec in conf
        if n not in used and spec != "sim"
    ]
    if a.json:
        print(
            json.dumps(
                {"serial": ports, "usb": usb, "missing": missing, "usb_note": usb_note}, indent=2
            )
        )
        return 1 if missing else 0
    print("serial ports:")
    if not ports:
        print("  none")
    for p in ports:
        ident = (
            f"{p['vid']}:{p['pid']}" + (f" serial {p['serial']}" if p["serial"] else "")
            if p["vid"]
            else "-"
        )
        print(f"  {p['device']:<14} {ident:<28} {p['used_by'] or 'unused':<10} {p['description']}")
        if p["by_id"]:
            print(f"  {'':<14} stable name: {p['by_id']}")
    print("usb devices:")
    if usb_note:
        print(f"  {usb_note}")
    for u in usb:
        print(
            f"  {u['vid']}:{u['pid']} bus {u['bus']} address {u['address']}  {u['used_by'] or 'unused'}"
        )
    for m in missing:
        print(f"MISSING: device {m['name']!r} ({m['driver']}) at {m['port']} is not present")
    return 1 if missing else 0


def run_probe(a: argparse.Namespace) -> int:
    import serial

    from daemon.pipeline.replay import _value
    from drivers.base import driver_class
    from drivers.readings import Malformed, Unknown
    from drivers.serial import PortUnavailable, resolve_port

    cls = driver_class(a.driver)
    opts: dict[str, Any] = {}
    for kv in a.option:
        k, _, v = kv.partition("=")
        opts[k] = _value(v)
    driver = cls(msgspec.convert(opts, cls.Options))
    if cls.transport != "serial":
        print(
            f"probe talks to serial devices; {a.driver} is a {cls.transport} device",
            file=sys.stderr,
        )
        return 2
    try:
        target = resolve_port(a.port)
    except PortUnavailable as e:
        print(f"cannot find the port: {e}", file=sys.stderr)
        return 1
    d = cls.serial_defaults
    try:
        ser = serial.serial_for_url(
            target,
            baudrate=d.baudrate,
            bytesize=d.bytesize,
            parity=d.parity,
            stopbits=d.stopbits,
            timeout=0.2,
            exclusive=True,
        )
    except (serial.SerialException, OSError) as e:
        if getattr(e, "errno", None) in (errno.EAGAIN, errno.EBUSY) or "lock" in str(e).lower():
            print(
                f"{target} is held by another process — if tabled is running, use "
                "`tablectl trace` instead, or stop it first",
                file=sys.stderr,
            )
        else:
            print(f"cannot open {target}: {e}", file=sys.stderr)
        return 1
    proto = driver.protocol()
    print(f"probing {target} as {a.driver} for {a.seconds:g} s")
    asks = [*driver.on_connect(), *driver.probe_commands()]
    counts = {"frames": 0, "malformed": 0, "unknown": 0}
    try:
        for cmd in asks:
            ser.write(cmd)
            proto.sent(cmd, time.monotonic())
            print(f"  tx {cmd!r}")
        end = time.monotonic() + a.seconds
        while time.monotonic() < end:
            data = ser.read(4096)
            if not data:
                continue
            for r in proto.feed(data, time.monotonic()):
                kind = (
                    "malformed"
                    if isinstance(r, Malformed)
                    else "unknown"
                    if isinstance(r, Unknown)
                    else "frames"
                )
                counts[kind] += 1
                body = {k: v for k, v in msgspec.to_builtins(r).items() if k != "frame"}
                print(f"  rx {r.frame!r:<24} {json.dumps(body)}")
    finally:
        ser.close()
    print(
        f"{counts['frames']} frames, {counts['malformed']} malformed, {counts['unknown']} unknown"
    )
    return 0 if counts["frames"] else 1
