"""Offline replay: a capture through the real protocol and the real table, on the capture's clock.

No waiting and no sockets: each line is fed at its recorded time, the events
are sealed in an in-memory journal exactly as the daemon seals them, and
the result is the same canonical JSON the bus publishes. This is how a
capture becomes a regression test (``tests/captures/``), gpsd's method.
"""

from __future__ import annotations

import base64
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from daemon.games import find as game_class
from daemon.journal import Batch, Journal
from daemon.journal.events import Event
from daemon.pipeline.capture import Capture, CaptureError, command_args, format_time
from daemon.procedures.paytable import problems as paytable_problems
from daemon.runtime.config import ConfigError, Settings
from daemon.runtime.validate import check
from daemon.table import Command, DeviceHealth, DeviceReading, Input, Table, TableState
from drivers.base import Driver, driver_class
from drivers.noise import DEFAULT_RULE, NoiseMeter, NoiseRule, rule_for
from drivers.readings import Malformed, Unknown

#: the salt key of offline replays: public, so a replay's commitments prove nothing
REPLAY_SALT_KEY = b"tabled offline replay"


@dataclass(slots=True)
class ReplayStats:
    frames: int = 0
    malformed: int = 0
    unknown: int = 0
    commands: int = 0
    refused: list[str] = field(default_factory=list)


def _value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


class Replayer:
    """One table and its devices, fed from captures in order."""

    def __init__(
        self,
        table: Table,
        drivers: dict[str, Driver],
        table_id: str = "replay",
        noise: dict[str, NoiseRule | None] | None = None,
    ) -> None:
        self.table = table
        # A game that seals a secret (a hole card) salts its commitment from this key
        # (``Game.salt_key``): random in the daemon, fixed here so a replay is reproducible.
        table.game.salt_key = REPLAY_SALT_KEY  # type: ignore[misc]
        self.drivers = drivers
        self.protocols = {n: d.protocol() for n, d in drivers.items()}
        # the daemon's line-noise verdicts, made the same way (``drivers/noise.py``)
        rules = noise or {}
        self.noise = {
            n: NoiseMeter(rule) for n in drivers if (rule := rules.get(n, DEFAULT_RULE)) is not None
        }
        self.journal = Journal(":memory:", table_id)
        self.state: TableState = table.initial()
        self.stats = ReplayStats()
        self.events: list[Event] = []
        self.raw: list[bytes] = []
        self._t0: float | None = None
        self._linked: set[str] = set()

    @classmethod
    def for_capture(cls, cap: Capture, settings: Settings | None = None) -> Replayer:
        h = cap.headers
        if settings is not None:
            game_cls = game_class(settings.config.table.game)
            assert game_cls is not None
            drivers = {
                d.name: driver_class(d.driver)(settings.device_options[d.name])
                for d in settings.config.devices
            }
            noise = {d.name: rule_for(d.noise_limit) for d in settings.config.devices}
            table = Table(game_cls(settings.game), list(drivers))
            return cls(table, drivers, settings.table, noise)
        drv_name = h.get("driver")
        if not drv_name:
            raise CaptureError(
                f"{cap.path}: no `# driver:` header and no --config to say which driver"
            )
        drv_cls = driver_class(drv_name)
        opts = {k[8:]: _value(v) for k, v in h.items() if k.startswith("options.")}
        rules = {k[5:]: _value(v) for k, v in h.items() if k.startswith("game.")}
        # the capture names its game: a driver names none (``docs/architecture.md``)
        game_name = h.get("game")
        game_cls = game_class(game_name) if game_name else None
        if game_cls is None:
            raise CaptureError(f"{cap.path}: unknown or missing `# game:` header ({game_name!r})")
        errors: list[str] = []
        check(opts, drv_cls.Options, "options", errors)
        check(rules, game_cls.Rules, "game", errors)
        errors += paytable_problems(game_cls.name, game_cls.Rules, rules)
        if errors:
            raise ConfigError(cap.path, errors)
        name = h.get("name", "device")
        driver = drv_cls(msgspec.convert(opts, drv_cls.Options))
        table = Table(game_cls(msgspec.convert(rules, game_cls.Rules)), [name])
        r = cls(table, {name: driver}, h.get("table", "replay"))
        if "state" in h:
            # A trace taken mid-game starts from the table's state at that moment.
            if h.get("state-version") != table.state_version:
                raise CaptureError(
                    f"{cap.path}: the trace's state is version {h.get('state-version')!r}, "
                    f"this tabled reads {table.state_version!r}"
                )
            r.state = table.decode_state(base64.b64decode(h["state"]))
            r._linked = {n for n, health in r.state.devices.items() if health == "ok"}
        return r

    # -- feeding ------------------------------------------------------------------------------

    def _decide(self, inp: Input, when: float) -> None:
        d = self.table.decide(self.state, inp)
        if d.refused is not None:
            self.stats.refused.append(d.refused)
        if not d.drafts:
            return
        for x in d.drafts:
            self.state = self.table.apply(self.state, x.type, x.data)
        mono = getattr(inp, "mono", None)
        evs = self.journal.append([Batch(d.drafts, format_time(when), mono)])
        self.events.extend(evs)

    def feed(self, cap: Capture) -> None:
        default = next(iter(self.drivers))
        for ln in cap.lines:
            if self._t0 is None:
                self._t0 = ln.time
            mono = round(ln.time - self._t0, 3)
            dev = ln.device or default
            if ln.kind in ("rx", "tx") and dev not in self.drivers:
                raise CaptureError(f"{cap.path}:{ln.lineno}: no device named {dev!r}")
            if ln.kind in ("rx", "tx") and dev not in self._linked:
                self._link(dev, "ok", "capture", ln.time, mono)
            if ln.kind == "rx":
                for r in self.protocols[dev].feed(ln.data, mono):
                    self._reading(dev, r, ln.time, mono)
            elif ln.kind == "tx":
                for r in self.protocols[dev].sent(ln.data, mono):
                    self._reading(dev, r, ln.time, mono)
            elif ln.kind == "link":
                state, _, why = ln.text.partition(" ")
                if state not in ("up", "down"):
                    raise CaptureError(f"{cap.path}:{ln.lineno}: link lines say `up` or `down`")
                if state == "down":
                    for r in self.protocols[dev].eof():
                        self._reading(dev, r, ln.time, mono)
                    self.protocols[dev] = self.drivers[dev].protocol()
                self._link(
                    dev, "ok" if state == "up" else "disconnected", why or state, ln.time, mono
                )
            elif ln.kind == "cmd":
                try:
                    name, args = command_args(ln.text)
                except CaptureError as e:
                    raise CaptureError(f"{cap.path}:{ln.lineno}: {e}") from None
                actor = args.pop("actor", "capture")
                role = args.pop("role", "supervisor")
                source = args.pop("source", "control")
                self.stats.commands += 1
                self._decide(Command(name, args, actor, role, source=source, mono=mono), ln.time)

    def _link(self, dev: str, health: str, why: str, when: float, mono: float) -> None:
        if health == "ok":
            self._linked.add(dev)
        else:
            self._linked.discard(dev)
        self._decide(DeviceHealth(dev, health, why, mono, {}), when)

    def _reading(self, dev: str, r: Any, when: float, mono: float) -> None:
        meter = self.noise.get(dev)
        noisy = None if meter is None else meter.reading(r, mono)
        if noisy is not None:
            self._decide(DeviceReading(dev, noisy, mono), when)
        if isinstance(r, Malformed):
            self.stats.malformed += 1
            return
        if isinstance(r, Unknown):
            self.stats.unknown += 1
            return
        self.stats.frames += 1
        self._decide(DeviceReading(dev, r, mono), when)

    def lines(self) -> Iterable[bytes]:
        for ev in self.events:
            yield ev.canonical()


def replay(caps: Iterable[Capture], settings: Settings | None = None) -> Replayer:
    caps = list(caps)
    r = Replayer.for_capture(caps[0], settings)
    for cap in caps:
        r.feed(cap)
    return r
