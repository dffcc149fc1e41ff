"""``tablectl trace DEVICE``: a device's raw frames, live from the running daemon.

Both directions, with time, hex and text; ``--save FILE`` writes them in the
capture format — with the operator commands and link changes in between and
the table's state at the start — so a technician's trace replays with
``tablectl replay`` to the same events: a field problem becomes a test.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any, TextIO

import zmq

from daemon.pipeline.capture import escape


def _header(info: dict[str, Any]) -> list[str]:
    lines = [
        "# what: tablectl trace",
        f"# driver: {info['driver']}",
        f"# name: {info['name']}",
        f"# table: {info['table']}",
        f"# game: {info['game']}",
    ]
    # TOML has no null: a rule or option that is None is left out, so it replays as its
    # default (None), where "null" would be read as the string "null" and refused
    for k, v in sorted(info["rules"].items()):
        if v is not None:
            lines.append(f"# game.{k}: {json.dumps(v)}")
    for k, v in sorted(info["options"].items()):
        if v is not None:
            lines.append(f"# options.{k}: {json.dumps(v)}")
    lines.append(f"# state-version: {info['state_version']}")
    lines.append(f"# state: {info['state']}")
    return lines


class Decoder:
    """The device's frames read as the daemon reads them, beside the bytes (as gpsmon and
    ``tablectl probe`` show them): a protocol of the device's own driver and options, fed
    what the trace shows; the daemon's own protocol is not touched."""

    def __init__(self, info: dict[str, Any]) -> None:
        import msgspec

        from drivers.base import driver_class

        cls = driver_class(info["driver"])
        options = {k: v for k, v in info.get("options", {}).items() if v is not None}
        self.proto = cls(msgspec.convert(options, cls.Options)).protocol()

    def rx(self, data: bytes, now: float) -> list[dict[str, Any]]:
        """Each reading the bytes complete: its kind and fields (the frame left out)."""
        import msgspec

        out = []
        for r in self.proto.feed(data, now):
            body = {k: v for k, v in msgspec.to_builtins(r).items() if k != "frame"}
            out.append({"reading": type(r).__name__, **body})
        return out

    def tx(self, data: bytes, now: float) -> None:
        self.proto.sent(data, now)  # so that replies are matched to their commands


def _decoder(info: dict[str, Any]) -> Decoder | None:
    """A decoder for the trace, or None (said on stderr) when this tablectl cannot build one."""
    try:
        return Decoder(info)
    except Exception as e:  # a driver not installed here, options it refuses: bytes only
        print(f"# frames not decoded: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def _cmd_line(rec: dict[str, Any]) -> str:
    args = " ".join(f"{k}={str(v).replace(' ', '_')}" for k, v in sorted(rec["args"].items()))
    who = f"actor={rec['actor']} role={rec['role']} source={rec['source']}"
    return f"{rec['time']} cmd {rec['name']} {args} {who}".replace("  ", " ")


def run(a: argparse.Namespace, call: Any) -> int:
    from daemon.ctl.shared import bus_curve
    from daemon.ctl.shared import settings as _settings

    s = _settings(a)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    curve = bus_curve(a, s)
    if curve is not None:
        curve.apply(sub)
    sub.setsockopt(zmq.SUBSCRIBE, f"~trace.{s.table}".encode())
    sub.setsockopt(zmq.SUBSCRIBE, f"{s.table}.heartbeat".encode())
    sub.connect(s.config.bus.publish)
    # Subscribe first and wait for a heartbeat: only then is the subscription live,
    # and the trace may start without losing its first frames (the slow joiner).
    if not sub.poll(int(max(3.0, 3 * s.config.bus.heartbeat_interval) * 1000)):
        print(f"no heartbeat from {s.config.bus.publish}: is tabled running?", file=sys.stderr)
        sub.close()
        ctx.term()
        return 3
    rc, info = call(a, "trace", device=a.device, seconds=15)
    if rc:
        sub.close()
        ctx.term()
        return int(rc)
    decoder = None if getattr(a, "raw", False) else _decoder(info)
    out: TextIO | None = open(a.save, "w", encoding="utf-8") if a.save else None
    if out is not None:
        out.write("\n".join(_header(info)) + "\n")
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    t_end = None if a.seconds is None else time.monotonic() + a.seconds
    renew_at = time.monotonic() + 5
    frames = 0
    try:
        while not stop["now"]:
            now = time.monotonic()
            if t_end is not None and now >= t_end:
                break
            if now >= renew_at:
                call(a, "trace", device=a.device, seconds=15, renew=True)
                renew_at = now + 5
            wait = min(renew_at, t_end if t_end is not None else renew_at) - now
            if not sub.poll(max(1, int(wait * 1000))):
                continue
            topic, body = sub.recv_multipart()
            if topic.endswith(b".heartbeat"):
                continue
            rec = json.loads(body)
            kind = rec["kind"]
            if kind in ("rx", "tx"):
                if rec["device"] != a.device:
                    continue
                data = bytes.fromhex(rec["hex"])
                frames += 1
                decoded: list[dict[str, Any]] = []
                if decoder is not None:
                    if kind == "tx":
                        decoder.tx(data, time.monotonic())
                    else:
                        decoded = decoder.rx(data, time.monotonic())
                if a.json:
                    print(json.dumps({**rec, "decoded": decoded} if decoder else rec), flush=True)
                else:
                    print(f"{rec['time']} {kind} {data.hex(' '):<48} {escape(data)}", flush=True)
                    for r in decoded:
                        fields = {
                            k: v
                            for k, v in r.items()
                            if k not in ("reading", "kind") and v is not None
                        }
                        print(f"{'':>24} = {r['reading']} {json.dumps(fields)}", flush=True)
                if out is not None:
                    out.write(f"{rec['time']} {kind} {escape(data)}\n")
                if a.frames is not None and frames >= a.frames:
                    break
            elif kind == "cmd":
                line = _cmd_line(rec)
                print(f"# {line}" if not a.json else json.dumps(rec), flush=True)
                if out is not None:
                    out.write(line + "\n")
            elif kind == "link" and rec["device"] == a.device:
                line = f"{rec['time']} link {'up' if rec['up'] else 'down'} {rec['reason']}"
                print(f"# {line}" if not a.json else json.dumps(rec), flush=True)
                if out is not None:
                    out.write(line + "\n")
    finally:
        if out is not None:
            out.close()
            print(f"# saved {frames} frames to {a.save}", file=sys.stderr)
        sub.close()
        ctx.term()
    return 0
