"""The raw-frame tap behind ``tablectl trace``: what the table saw, in the order it saw it.

Off by default and free when off. A trace client takes a lease (renewed
every few seconds); while one is held, every raw chunk a device sends or
receives, every operator command and every link change is published on the
bus under ``<table>.~trace`` — tapped in the loop thread at the moment it
enters the pipeline, so the order in the trace is the order the table
decided in, and a saved trace replays to the same events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from daemon.journal.events import utc_text

_enc = msgspec.json.Encoder(order="sorted")


class Tracer:
    def __init__(
        self,
        table: str,
        send: Callable[[bytes, bytes], object],
        mono: Callable[[], float],
        wall: Callable[[], float],
    ) -> None:
        # not under "<table>." so that subscribers to a table never receive raw traces
        self.topic = f"~trace.{table}".encode()
        self.send = send
        self.mono = mono
        self.wall = wall
        self._leases: dict[str, float] = {}  # device (or "*") → monotonic expiry
        self.sent = 0
        #: true while the game keeps a card secret (a blackjack hole card face down): records
        #: are held, in order, and sent once it is turned over (``docs/decisions.md``)
        self.hold: Callable[[], bool] = lambda: False
        self._held: list[dict[str, Any]] = []

    def lease(self, device: str, seconds: float) -> float:
        until = self.mono() + max(1.0, min(seconds, 60.0))
        self._leases[device] = until
        return until

    def active(self, device: str) -> bool:
        if not self._leases:
            return False
        now = self.mono()
        for k in [k for k, v in self._leases.items() if v < now]:
            del self._leases[k]
        return device in self._leases or "*" in self._leases

    def _emit(self, rec: dict[str, Any]) -> None:
        rec["time"] = utc_text(self.wall())
        if self._held or self.hold():
            self._held.append(rec)
            self.flush()
            return
        self.send(self.topic, _enc.encode(rec))
        self.sent += 1

    def flush(self, *_: Any) -> None:
        """Send what was held, in order, once nothing is secret any more (an event listener)."""
        if not self._held or self.hold():
            return
        held, self._held = self._held, []
        for rec in held:
            self.send(self.topic, _enc.encode(rec))
            self.sent += 1

    def frame(self, device: str, direction: str, data: bytes, mono: float) -> None:
        if self.active(device):
            self._emit({"kind": direction, "device": device, "mono": mono, "hex": data.hex()})

    def command(self, name: str, args: dict[str, Any], actor: str, role: str, source: str) -> None:
        if any(self.active(d) for d in list(self._leases)):
            self._emit(
                {
                    "kind": "cmd",
                    "name": name,
                    "args": args,
                    "actor": actor,
                    "role": role,
                    "source": source,
                }
            )

    def link(self, device: str, up: bool, reason: str) -> None:
        if self.active(device):
            self._emit({"kind": "link", "device": device, "up": up, "reason": reason})
