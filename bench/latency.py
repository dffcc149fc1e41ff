"""Wire to subscriber latency: a frame's last byte on a pty → its event at a SUB.

The daemon runs as a real process (``tabled``, the journal's fsync on: WAL
and ``synchronous=FULL``) on a pty this process owns. This process plays
the device and the croupier of a long, valid session (:mod:`bench.session`):
commands on the control socket, frames on the pty, one ``os.write`` per
frame. A plain pyzmq SUB on loopback takes the time each event arrives. One
thread and one clock (``time.monotonic_ns``) for writes and arrivals: the
loop polls every socket until the next write is due.

Every event that arrives is matched, in seq order, to the input the table
decided it from when the session was generated (the types must agree, or
the run stops); latency = arrival − the time the frame's last byte was
written (taken just before the ``os.write`` that writes it, so
a reader woken inside the write is never ahead of it). The shoe reports its ``card.dealt`` events (one per card, also
checked by ``shoe_position``); the wheel every event a frame caused.

Two paces:

* ``paced``: a frame is written, its events awaited, then the line is idle
  for a gap (uniform 0.5–1.5 × ``gap``, 0.5 ms) before the next, so every frame
  finds the daemon idle, as a dealer's 0.5–1 s or a wheel's 500 ms does
  (10,000 events at a real dealer's pace would take hours);
* ``full``: a round's frames (a hand's cards, a spin's frames) written back
  to back; the next round's commands are sent as soon as the last event of
  the round is in.

The floor: :mod:`bench.relay` (pyserial → PUB: no parsing, no journal) on
its own pty, fed the same frames at the same pace, interleaved round by
round with the daemon so that both see the same machine at the same time.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import zmq

from bench import proc
from bench.session import Frame, Session, shoe_session, wheel_available, wheel_session
from bench.sizes import Size, pick
from bench.stats import Load, summary_ms

_now = time.monotonic_ns


class Loop:
    """Every socket of the run, polled by one loop that timestamps arrivals."""

    def __init__(self) -> None:
        self.ctx = zmq.Context()
        self.poller = zmq.Poller()
        self.handlers: dict[zmq.Socket, Callable[[int, list[bytes]], None]] = {}

    def sub(self, endpoint: str, on: Callable[[int, list[bytes]], None]) -> zmq.Socket:
        s = self.ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVHWM, 0)  # never drop: every event is counted
        s.setsockopt(zmq.SUBSCRIBE, b"")
        s.connect(endpoint)
        self.poller.register(s, zmq.POLLIN)
        self.handlers[s] = on
        return s

    def dealer(self, endpoint: str, on: Callable[[int, list[bytes]], None]) -> zmq.Socket:
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(endpoint)
        self.poller.register(s, zmq.POLLIN)
        self.handlers[s] = on
        return s

    def pump(self, timeout_ms: float) -> None:
        """Wait up to ``timeout_ms`` for anything, then take everything that is there."""
        for sock, _ in self.poller.poll(timeout_ms):
            on = self.handlers[sock]
            while True:
                try:
                    frames = sock.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                on(_now(), frames)

    def wait(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"timed out waiting for {what}")
            self.pump(min(left, 0.2) * 1000)

    def idle(self, ns: int) -> None:
        """Let ``ns`` pass, taking arrivals meanwhile."""
        until = _now() + ns
        while (left := until - _now()) > 0:
            self.pump(left / 1e6)

    def close(self) -> None:
        self.ctx.destroy(linger=0)


# -- the daemon -----------------------------------------------------------------------------


class DaemonTarget:
    """tabled on its pty: commands, frames, and every event matched to its cause."""

    def __init__(
        self, loop: Loop, sess: Session, profile: Path | None = None, **daemon: Any
    ) -> None:
        self.loop = loop
        self.sess = sess
        self.where = proc.workdir("lat-")
        self.pty = proc.Pty()
        self.cfg, self.ep = proc.write_config(
            self.where,
            sess,
            port=self.pty.path,
            log_level=daemon.pop("log_level", "info"),
            snapshot_every=daemon.pop("snapshot_every", 1000),
        )
        self.d = proc.DaemonProcess(self.cfg, log=self.where / "daemon.log", **daemon)
        self.profile = profile
        self.spy: subprocess.Popen[bytes] | None = None
        # expected[i] = (event type, frame index or -1 for a command); arrivals line up with it
        self.expected: list[tuple[str, int]] = []
        self.arrivals: list[tuple[int, bytes, bytes]] = []  # (ns, topic, body)
        self.matching = False
        self.mismatch: str | None = None
        self.writes: dict[int, int] = {}
        self.heartbeats = 0
        self.snapshots = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._ids = 0
        loop.sub(self.ep["publish"], self._on_event)
        self.ctl = loop.dealer(self.ep["control"], self._on_reply)

    def _on_event(self, t: int, frames: list[bytes]) -> None:
        topic = frames[0]
        if topic.endswith(b".heartbeat"):
            self.heartbeats += 1
            return
        if topic.endswith(b".journal.snapshot"):
            # sealed by the journal every 1,000 events, decided from no input: not matched
            self.snapshots += 1
            return
        if not self.matching:
            return
        i = len(self.arrivals)
        self.arrivals.append((t, topic, frames[1]))
        etype = topic.split(b".", 1)[1].decode()
        if i >= len(self.expected) or self.expected[i][0] != etype:
            want = self.expected[i][0] if i < len(self.expected) else "nothing"
            self.mismatch = self.mismatch or f"event {i}: got {etype}, the session expects {want}"

    def _on_reply(self, t: int, frames: list[bytes]) -> None:
        msg = msgspec.json.decode(frames[-1])
        self._replies[msg.get("id")] = msg

    def start(self) -> None:
        self.d.start()

    def call(self, cmd: str, timeout: float = 10.0) -> dict[str, Any]:
        self._ids += 1
        i = self._ids
        self.ctl.send(msgspec.json.encode({"cmd": cmd, "args": {}, "id": i, "actor": "bench"}))
        self.loop.wait(lambda: i in self._replies, timeout, f"tabled's reply to {cmd}")
        reply = self._replies.pop(i)
        if not reply.get("ok"):
            raise RuntimeError(f"tabled refused {cmd}: {reply.get('error')}")
        return reply["result"]  # type: ignore[no-any-return]

    def ready(self, timeout: float = 15.0) -> None:
        """Subscribed (a heartbeat came), the port open, the connect noise over."""
        self.loop.wait(lambda: self.heartbeats > 0, timeout, "a heartbeat from tabled")
        deadline = time.monotonic() + timeout
        while not all(x["health"] == "ok" for x in self.call("devices")["devices"]):
            if time.monotonic() > deadline:
                raise RuntimeError("tabled never opened the device pty" + self.d._tail())
            self.loop.idle(20_000_000)
        self.loop.idle(300_000_000)  # device.connected and the rest of the start-up
        self.pty.drain()
        self.matching = True
        if self.profile is not None:
            from bench.profile import start_pyspy

            self.spy = start_pyspy(self.d.pid, self.profile)

    def command(self, name: str, events: list[str]) -> None:
        self.expected += [(e, -1) for e in events]
        self.call(name)

    def write(self, idx: int, f: Frame) -> None:
        self.expected += [(e, idx) for e in f.events]
        self.writes[idx] = _now()  # before the write: the last byte is written within it
        self.pty.write(f.line)

    def done(self) -> bool:
        """Every event expected so far has arrived."""
        return len(self.arrivals) >= len(self.expected)

    def check(self) -> None:
        if self.mismatch:
            raise RuntimeError(f"tabled decided differently from the session: {self.mismatch}")
        if self.d.proc is not None and self.d.proc.poll() is not None:
            raise RuntimeError("tabled exited during the run" + self.d._tail())

    def finish(self) -> None:
        if self.spy is not None:
            from bench.profile import stop_pyspy

            stop_pyspy(self.spy)
            self.spy = None
        code = self.d.stop()
        if code != 0:
            raise RuntimeError(f"tabled exited with {code}" + self.d._tail())

    def close(self) -> None:
        if self.spy is not None and self.spy.poll() is None:
            self.spy.kill()
        self.d.close()
        self.pty.close()
        proc.cleanup(self.where, self.ep)


# -- the floor ------------------------------------------------------------------------------


class FloorTarget:
    """The bare relay on its own pty: lines in, the same bytes out on PUB.

    ``journal``: the durable relay (a SQLite commit per read before the publish).
    """

    def __init__(self, loop: Loop, journal: Path | None = None) -> None:
        self.loop = loop
        self.pty = proc.Pty()
        endpoint = f"tcp://127.0.0.1:{proc.free_port()}"
        self.relay = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.relay",
                self.pty.path,
                endpoint,
                *([str(journal)] if journal is not None else []),
            ],
            cwd=proc.ROOT,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        self.lines: list[int] = []  # arrival ns of each line
        self.reads: list[int] = []  # the relay's read ns of each line
        self.buf = bytearray()
        self.writes: dict[int, int] = {}
        self.written: list[int] = []
        loop.sub(endpoint, self._on)

    def _on(self, t: int, frames: list[bytes]) -> None:
        self.buf += frames[0]
        n = self.buf.count(b"\n")
        if n:
            self.lines += [t] * n
            self.reads += [int(frames[1])] * n
            del self.buf[: self.buf.rindex(b"\n") + 1]

    def start(self) -> None:
        assert self.relay.stdout is not None
        if self.relay.stdout.readline().strip() != b"ready":
            raise RuntimeError("the relay did not start")
        # the port is open; the subscription is live once a sync line comes back
        deadline = time.monotonic() + 10
        while not self.lines:
            if time.monotonic() > deadline:
                raise RuntimeError("the relay never published the sync line")
            self.pty.write(b"SYNC\r\n")
            self.loop.pump(50)
        self.loop.idle(100_000_000)
        self.lines.clear()
        self.reads.clear()

    def write(self, idx: int, f: Frame) -> None:
        self.writes[idx] = _now()
        self.pty.write(f.line)
        self.written.append(idx)

    def done(self) -> bool:
        return len(self.lines) >= len(self.written)

    def cpu_seconds(self) -> float:
        return proc.oncpu_seconds(self.relay.pid)

    def close(self) -> None:
        self.relay.terminate()
        try:
            self.relay.wait(10)
        except subprocess.TimeoutExpired:
            self.relay.kill()
        self.pty.close()


# -- one run: a session, both targets, one pace --------------------------------------------------


def _burst(
    loop: Loop,
    target: Any,
    frames: list[tuple[int, Frame]],
    gap: float | None,
    rng: random.Random,
    *,
    all_lines: bool,
) -> None:
    for idx, f in frames:
        target.write(idx, f)
        if gap is not None:
            if f.events or all_lines:
                loop.wait(target.done, 30.0, f"the output of frame {f.line!r}")
            loop.idle(int(gap * rng.uniform(0.5, 1.5) * 1e9))
    loop.wait(target.done, 30.0, "the output of the round")


def run_one(
    sess: Session,
    gap: float | None,
    *,
    profile: Path | None = None,
    log: Callable[[str], None] = print,
    **opts: Any,
) -> dict[str, Any]:
    """One session at one pace, tabled and the floor interleaved round by round.

    ``opts``: ``variant``, ``cpus``, ``log_level`` for experiments (bench.experiments);
    ``snapshot_every`` (the smoke's runs are short: it snapshots often, so the snapshot
    events a long run meets are met there too); ``durable_floor``: the floor is the
    durable relay, its journal in the daemon's scratch folder.
    """
    loop = Loop()
    durable = opts.pop("durable_floor", False)
    daemon = DaemonTarget(loop, sess, profile, **opts)
    floor = FloorTarget(loop, daemon.where / "relay.sqlite" if durable else None)
    rng_d, rng_f = random.Random(1), random.Random(1)
    try:
        floor.start()
        daemon.start()
        daemon.ready()
        load = Load([daemon.d.pid, floor.relay.pid])
        cpu0, th0, fcpu0 = daemon.d.oncpu_seconds(), daemon.d.thread_cpu(), floor.cpu_seconds()
        mem0 = daemon.d.memory()
        t0 = time.monotonic()
        idx = 0
        for step in sess.steps:
            if step.kind == "cmd":
                daemon.command(step.name, step.events)
                loop.wait(daemon.done, 30.0, f"the events of {step.name}")
                continue
            frames = list(enumerate(step.frames, idx))
            idx += len(frames)
            _burst(loop, floor, frames, gap, rng_f, all_lines=True)
            _burst(loop, daemon, frames, gap, rng_d, all_lines=False)
            daemon.check()
        seconds = time.monotonic() - t0
        cpu1, th1, fcpu1 = daemon.d.oncpu_seconds(), daemon.d.thread_cpu(), floor.cpu_seconds()
        mem1 = daemon.d.memory()
        loadr = load.result()
        daemon.finish()
        timeline = _read_timeline(daemon.cfg.parent / "timeline.json")
        cprofile = _keep_profile(daemon.cfg.parent / "loop.prof", gap)
    finally:
        daemon.close()
        floor.close()
        loop.close()

    # -- match ----------------------------------------------------------------------------
    if len(daemon.arrivals) != len(daemon.expected):
        raise RuntimeError(
            f"{len(daemon.arrivals)} events arrived, the session expects {len(daemon.expected)}"
        )
    all_frames = sess.frames
    ours: list[int] = []
    ours_read: list[int] = []  # write → the daemon read the bytes (the event's mono)
    sampled: set[int] = set()
    samples: list[tuple[int, float, int]] = []  # (write ns, the event's mono, arrival ns)
    seqs: list[int] = []
    for (t, _topic, body), (etype, fidx) in zip(daemon.arrivals, daemon.expected, strict=True):
        ev = msgspec.json.decode(body)
        seqs.append(ev["seq"])
        if fidx < 0:
            continue
        if sess.game == "baccarat" and etype != "card.dealt":
            continue
        f = all_frames[fidx]
        if etype == "card.dealt" and (ev["data"]["shoe"], ev["data"]["shoe_position"]) != (
            f.shoe,
            f.position,
        ):
            raise RuntimeError(f"card.dealt {ev['data']} matched to the wrong frame {f}")
        ours.append(t - daemon.writes[fidx])
        if ev.get("mono") is not None:
            ours_read.append(int(ev["mono"] * 1e9) - daemon.writes[fidx])
            samples.append((daemon.writes[fidx], ev["mono"], t))
        sampled.add(fidx)
    if len(floor.lines) != len(floor.written):
        raise RuntimeError(f"relay: {len(floor.written)} lines written, {len(floor.lines)} arrived")
    floor_lat = [
        floor.lines[i] - floor.writes[fi] for i, fi in enumerate(floor.written) if fi in sampled
    ]
    floor_read = [
        floor.reads[i] - floor.writes[fi] for i, fi in enumerate(floor.written) if fi in sampled
    ]
    gaps = sum(1 for a, b in itertools.pairwise(seqs) if b != a + 1)
    stages = _stages(timeline, samples) if timeline is not None else None
    events = len(daemon.arrivals)
    cpu = cpu1 - cpu0
    o, fl = summary_ms(ours), summary_ms(floor_lat)
    return {
        **({"cpu_profile": cprofile} if cprofile else {}),
        "gap_s": gap,
        "frames": len(all_frames),
        "events": events,
        "sampled_events": len(ours),
        "seconds": round(seconds, 2),
        "seq_gaps": gaps,
        "tabled_ms": o,
        "floor_ms": fl,
        "overhead_ms": {k: round(o[k] - fl[k], 3) for k in ("p50", "p99", "p99_9", "max")},
        # where it goes: write → the process read the bytes, and read → the subscriber
        "tabled_write_to_read_ms": summary_ms(ours_read),
        "tabled_read_to_sub_ms": summary_ms([a - b for a, b in zip(ours, ours_read, strict=False)])
        if len(ours_read) == len(ours)
        else None,
        "floor_write_to_read_ms": summary_ms(floor_read),
        "floor_read_to_sub_ms": summary_ms(
            [a - b for a, b in zip(floor_lat, floor_read, strict=True)]
        ),
        "tabled_cpu_s": round(cpu, 2),
        "tabled_cpu_us_per_event": round(cpu / events * 1e6, 1) if events else None,
        "tabled_cpu_us_per_frame": round(cpu / len(all_frames) * 1e6, 1),
        "tabled_cpu_by_thread_s": {
            k: round(v - th0.get(k, 0.0), 4) for k, v in sorted(th1.items())
        },
        "floor_cpu_us_per_frame": round((fcpu1 - fcpu0) / len(all_frames) * 1e6, 1),
        "tabled_rss_kib": [mem0.get("VmRSS"), mem1.get("VmRSS")],
        "tabled_peak_rss_kib": mem1.get("VmHWM"),
        "machine_load": loadr,
    } | ({"stages_ms": stages} if stages is not None else {})


def _keep_profile(path: Path, gap: float | None) -> str | None:
    """The loop's CPU profile (bench.variant ``cpu-profile``), kept where the results go."""
    if not path.exists():
        return None
    kept = proc.ROOT / "bench" / "results" / f"loop-{'full' if gap is None else 'paced'}.prof"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(path.read_bytes())
    return str(kept.relative_to(proc.ROOT))


def _read_timeline(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    return msgspec.json.decode(path.read_bytes())  # type: ignore[no-any-return]


def _stages(tl: dict[str, Any], samples: list[tuple[int, float, int]]) -> dict[str, Any]:
    """Per card, the commit path stage by stage (bench.variant ``timeline``)."""
    import bisect

    procs = sorted(t for t, _ in tl["process"])
    pubs = sorted((a, b) for a, b, _ in tl["publish"])
    pub_starts = [a for a, _ in pubs]
    by_mono = {m: (a, b) for a, b, m, n in tl["append"] if m is not None and n}
    names = (
        "write → read",
        "read → pipeline",
        "pipeline → commit (decide, batch)",
        "append (seal, SQLite, fsync)",
        "commit → publish",
        "publish (zmq send)",
        "publish → subscriber",
    )
    out: dict[str, list[int]] = {n: [] for n in names}
    for w, mono, arrival in samples:
        ap = by_mono.get(mono)
        if ap is None:
            continue
        read = int(mono * 1e9)
        i = bisect.bisect_right(procs, ap[0]) - 1
        j = bisect.bisect_left(pub_starts, ap[1])
        if i < 0 or j >= len(pubs):
            continue
        p0, (q0, q1) = procs[i], pubs[j]
        for n, v in zip(
            names,
            (read - w, p0 - read, ap[0] - p0, ap[1] - ap[0], q0 - ap[1], q1 - q0, arrival - q1),
            strict=True,
        ):
            out[n].append(v)
    return {n: summary_ms(v) for n, v in out.items() if v}


def run(
    *, size: Size = "full", profile_dir: Path | None = None, log: Callable[[str], None] = print
) -> dict[str, Any]:
    target = pick(size, 10_000, 1_000, 200)
    snapshot_every = pick(size, 1000, 1000, 50)
    gap = 0.0005
    out: dict[str, Any] = {
        "fsync": "on (WAL, synchronous=FULL)",
        "paced_gap_s": gap,
        "min_events": target,
    }
    sessions = [("shoe", shoe_session(cards=target))]
    if wheel_available():
        sessions.append(("wheel", wheel_session(events=target)))
    else:
        out["wheel"] = "not measured: roulette is not an installed game (tabled.games)"
    for name, sess in sessions:
        res: dict[str, Any] = {"rounds": sess.rounds, "frames": len(sess.frames)}
        for mode, g in (("paced", gap), ("full", None)):
            log(
                f"  latency {name}/{mode}: {len(sess.frames)} frames, tabled and the floor interleaved"
            )
            prof = None if profile_dir is None else profile_dir / f"latency-{name}-{mode}.txt"
            res[mode] = run_one(sess, g, profile=prof, log=log, snapshot_every=snapshot_every)
        out[name] = res
    return out


if __name__ == "__main__":
    import pprint

    pprint.pprint(run(size="quick" if "--quick" in sys.argv else "full"), width=110)
