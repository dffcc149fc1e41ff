"""The configured devices at runtime: each one's runner (transport + protocol + health +
counters), and the set of them the daemon starts, feeds and stops (:class:`DeviceSet`).

The runner is the transport's sink: it feeds bytes to a fresh protocol per
connection, counts what comes back (frames, malformed, unknown), turns
silence into ``stale`` with a timer (no polling), and hands readings and
health changes to the pipeline. Garbage is counted and logged, never
raised and never passed on as a card.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from daemon.pipeline.listeners import follows
from daemon.table import DeviceHealth, DeviceReading, Input
from drivers.base import Driver, Protocol
from drivers.noise import DEFAULT_RULE, NoiseMeter, NoiseRule
from drivers.readings import DeviceReply, Malformed, Reading, Unknown

if TYPE_CHECKING:
    from daemon.runtime.config import DeviceConfig

Tap = Callable[[str, bytes, float], None]


@dataclass(slots=True)
class Counters:
    frames: int = 0
    malformed: int = 0
    unknown: int = 0
    reconnects: int = 0
    connects: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    last_frame_mono: float | None = None
    last_frame_wall: float | None = None


class DeviceRunner:
    def __init__(
        self,
        name: str,
        driver: Driver,
        submit: Callable[[Input], object],
        *,
        stale_after: float | None = None,
        noise: NoiseRule | None = DEFAULT_RULE,
        mono: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.driver = driver
        self.submit = submit
        self.stale_after = stale_after if stale_after is not None else driver.stale_after
        self.mono = mono
        self.wall = wall
        self.counters = Counters()
        self.health = "disconnected"
        self.reason = "not connected yet"
        self.port: str | None = None
        self.spec: str | None = None  # the port as configured (a by-id path, a usb: identity, …)
        self.identity: str | None = None
        self.protocol: Protocol = driver.protocol()
        self.transport: Any = None
        self.taps: list[Tap] = []
        self.last_malformed: tuple[str, bytes] | None = None
        #: true while the table keeps a card secret (the daemon wires the game's
        #: ``secret_in_play``): a frame that is no reading (garbage, an unknown code) may be
        #: a garbled hole card, so the log and the status say its length, not its bytes
        self.withhold: Callable[[], bool] = lambda: False
        self.noise = None if noise is None else NoiseMeter(noise)
        self.on_link: list[Callable[[bool], None]] = []
        self._stale_timer: asyncio.TimerHandle | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._warned_at = 0.0
        self.log = structlog.get_logger("device").bind(device=name, driver=driver.name)

    # -- TransportSink ------------------------------------------------------------------

    def on_connected(self, info: dict[str, Any]) -> None:
        self.port = str(info.get("port", ""))
        self.protocol = self.driver.protocol()
        if self.counters.connects:
            self.counters.reconnects += 1
        self.counters.connects += 1
        self._set_health("ok", f"port {self.port} open", {"port": self.port})
        for fn in self.on_link:
            fn(True)
        for cmd in self.driver.on_connect():
            self.send(cmd)
        poll = self.driver.poll()
        if poll is not None:
            self._poll_task = asyncio.get_running_loop().create_task(self._poll(*poll))
        self._arm_stale()

    def on_data(self, data: bytes, mono: float) -> None:
        c = self.counters
        c.bytes_in += len(data)
        for tap in self.taps:
            tap("rx", data, mono)
        try:
            readings = self.protocol.feed(data, mono)
        except Exception as e:  # a protocol bug must not take the device down
            self.log.exception("protocol raised; bytes counted as malformed")
            readings = [Malformed(frame=data[:64], reason=f"protocol error: {type(e).__name__}")]
        if readings:
            c.last_frame_mono = mono
            c.last_frame_wall = self.wall()
            if self.health == "stale":
                self._set_health("ok", "traffic resumed")
        for r in readings:
            self._reading(r, mono)

    def on_sent(self, data: bytes, mono: float) -> None:
        self.counters.bytes_out += len(data)
        for tap in self.taps:
            tap("tx", data, mono)
        for r in self.protocol.sent(data, mono):
            self._reading(r, mono)

    def on_disconnected(self, reason: str) -> None:
        for r in self.protocol.eof():
            self._reading(r, self.mono())
        self._cancel_timers()
        for fn in self.on_link:
            fn(False)
        self._set_health("disconnected", reason)

    # -- readings ------------------------------------------------------------------------

    def _reading(self, r: Reading, mono: float) -> None:
        c = self.counters
        noisy = None if self.noise is None else self.noise.reading(r, mono)
        if noisy is not None:
            # before the reading that tipped it, so the table holds what follows. The frames
            # that did decode are not quoted here: one may be a card dealt face down; the
            # line-noise alarm lists them, sealed while a card is secret (daemon/table/secrecy.py)
            self.log.warning(
                "line noisy",
                malformed=noisy.malformed,
                lines=noisy.lines,
                decoded=len(noisy.recent),
            )
            self.submit(DeviceReading(self.name, noisy, mono))
        if isinstance(r, Malformed):
            c.malformed += 1
            self.last_malformed = (r.reason, r.frame)
            now = self.mono()
            if now - self._warned_at >= 1.0:  # a flood is counted in full but logged once a second
                self._warned_at = now
                self.log.warning(
                    "malformed frame",
                    reason=r.reason,
                    frame=self._quoted(r.frame),
                    malformed=c.malformed,
                )
            return
        if isinstance(r, Unknown):
            c.unknown += 1
            self.log.info("unknown frame", frame=self._quoted(r.frame), reason=r.reason)
            return
        c.frames += 1
        if isinstance(r, DeviceReply) and r.command in ("*V", "version", "identity"):
            self.identity = r.text
        self.submit(DeviceReading(self.name, r, mono))

    def _quoted(self, frame: bytes) -> bytes | str:
        """A frame as the log may quote it: its first bytes, or only its length while a
        card is secret."""
        if self.withhold():
            return f"({len(frame)} bytes, withheld while a card is secret)"
        return frame[:64]

    # -- health -------------------------------------------------------------------------

    def _set_health(self, health: str, reason: str, info: dict[str, Any] | None = None) -> None:
        if health == self.health and health != "ok":
            self.reason = reason  # still down, for a new reason: shown, not an event
            return
        changed = health != self.health
        self.health, self.reason = health, reason
        if changed:
            (self.log.info if health == "ok" else self.log.warning)(
                "device " + health, reason=reason
            )
            self.submit(DeviceHealth(self.name, health, reason, self.mono(), info or {}))

    def _arm_stale(self) -> None:
        if self.stale_after is None:
            return
        loop = asyncio.get_running_loop()
        self._stale_timer = loop.call_later(self.stale_after, self._check_stale)

    def _check_stale(self) -> None:
        """Fires once per window; re-arms for the rest of the window when traffic came."""
        assert self.stale_after is not None
        last = self.counters.last_frame_mono
        now = self.mono()
        since = now - last if last is not None else None
        if self.health != "disconnected":
            if since is None or since >= self.stale_after:
                self._set_health("stale", f"no frame for {self.stale_after:g} s")
                delay = self.stale_after
            else:
                delay = self.stale_after - since
            self._stale_timer = asyncio.get_running_loop().call_later(delay, self._check_stale)

    def _cancel_timers(self) -> None:
        if self._stale_timer is not None:
            self._stale_timer.cancel()
            self._stale_timer = None
        if self._poll_task is not None:
            self._poll_task.cancel()
            self._poll_task = None

    async def _poll(self, interval: float, command: bytes) -> None:
        while True:
            self.send(command)
            await asyncio.sleep(interval)

    # -- commands -------------------------------------------------------------------------

    def send(self, data: bytes) -> bool:
        if self.transport is None:
            return False
        ok: bool = self.transport.write(data)
        return ok

    def _status(self) -> dict[str, Any]:
        c = self.counters
        return {
            "name": self.name,
            "driver": self.driver.name,
            "health": self.health,
            "reason": self.reason,
            "port": self.port or self.spec,
            "configured_port": self.spec,
            "identity": self.identity,
            "frames": c.frames,
            "malformed": c.malformed,
            "unknown": c.unknown,
            "reconnects": c.reconnects,
            "bytes_in": c.bytes_in,
            "bytes_out": c.bytes_out,
            "last_frame_age": None
            if c.last_frame_mono is None
            else round(self.mono() - c.last_frame_mono, 3),
            "last_frame_time": c.last_frame_wall,
            "protocol": self.protocol.stats(),
            "line_noisy": None if self.noise is None else self.noise.noisy,
            "noise_bursts": None if self.noise is None else self.noise.bursts,
            "last_malformed": None
            if self.last_malformed is None
            else {
                "reason": self.last_malformed[0],
                "frame": self.last_malformed[1].hex() if not self.withhold() else None,
                "bytes": len(self.last_malformed[1]),
            },
        }

    def status(self) -> dict[str, Any]:
        """The runner's own figures, plus what its transport says of itself (a panel's lights)."""
        out = self._status()
        detail = getattr(self.transport, "status_detail", None)
        if detail is not None:
            out.update(detail())
        return out

    def close(self) -> None:
        self._cancel_timers()


class DeviceSet:
    """The daemon's devices: each opened by its transport kind's factory
    (``daemon/runtime/transports.py``), told the committed decisions meant for it, stopped
    first at shutdown (no new readings), its simulator's pty closed last.

    ``watch`` is called with each runner before it runs (the daemon taps it for traces).
    """

    def __init__(
        self,
        submit: Callable[..., Any],
        state: Callable[[], Any],
        summary: Callable[[], Mapping[str, Any]] | None,
        listen: Callable[[Callable[[Sequence[Any]], None]], None],
        *,
        acknowledged: frozenset[str] = frozenset(),
        mono: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        from daemon.runtime.transports import Wiring

        self.runners: dict[str, DeviceRunner] = {}
        #: the game's events a device must hear when they carry ``acknowledge`` (a void
        #: a wheel is told: ``Game.acknowledged``)
        self.acknowledged = acknowledged
        #: what :meth:`on_events` follows here: its own types and the game's acknowledged
        self.followed = self.on_events.follows | acknowledged
        self._tasks: list[asyncio.Task[Any]] = []
        self._closers: list[Callable[[], None]] = []
        self._submit = submit
        self._mono, self._wall = mono, wall
        self.wiring = Wiring(
            submit=submit,
            state=state,
            summary=summary,
            listen=listen,
            spawn=self._spawn,
            closing=self._closers.append,
            mono=mono,
        )

    def start(
        self,
        devices: Sequence[DeviceConfig],
        options: Mapping[str, Any],
        watch: Callable[[DeviceConfig, DeviceRunner], None],
    ) -> None:
        from daemon.runtime.transports import start_device
        from drivers.base import driver_class
        from drivers.noise import rule_for

        for dc in devices:
            driver = driver_class(dc.driver)(options[dc.name])
            runner = DeviceRunner(
                dc.name,
                driver,
                self._submit,
                stale_after=dc.stale_after,
                noise=rule_for(dc.noise_limit),
                mono=self._mono,
                wall=self._wall,
            )
            runner.transport = start_device(dc, driver, runner, self.wiring)
            runner.spec = dc.port
            watch(dc, runner)
            self.runners[dc.name] = runner
            self._spawn(runner.transport.run(runner), f"device:{dc.name}")

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """A device's or simulator's task: cancelled first at shutdown, before the drain."""
        self._tasks.append(asyncio.create_task(coro, name=name))

    def refusal(self, device: str, command: str) -> str | None:
        """Why ``command`` cannot go to ``device``'s wire, or None: a driver with a binary
        protocol says which it can encode, so the rest is refused before it is journaled."""
        runner = self.runners.get(device)
        if runner is not None:
            try:
                runner.driver.encode_command(command)
            except ValueError as e:
                return f"{device}: {e}"
        return None

    @follows("device.command")
    def on_events(self, events: Sequence[Any]) -> None:
        """Committed decisions that a device must hear: technicians' commands, void
        acknowledgements (added with :attr:`followed`)."""
        for ev in events:
            d = ev.data
            runner = self.runners.get(d.get("device", ""))
            if runner is None:
                continue
            if ev.type == "device.command":
                if not runner.send(runner.driver.encode_command(d["command"])):
                    runner.log.warning("device command not sent: device not connected")
            elif ev.type in self.acknowledged and d.get("acknowledge"):
                ack = runner.driver.void_acknowledgement()
                if ack:
                    runner.send(ack)

    async def stop(self) -> None:
        """No new readings: every transport and simulator task ends, every runner's timers."""
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for r in self.runners.values():
            r.close()

    def close(self) -> None:
        """What the factories left to close once the journal is (a simulator's pty)."""
        for close in self._closers:
            close()
