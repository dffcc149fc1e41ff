"""Which request ids the journal committed, so a retried command is never applied twice.

A control request's ``id`` and its sender (the CURVE key's name, or the transport and
the socket's role: the same across reconnects and restarts) go into the
``operator.command`` it is journaled as (``request``, ``peer``). This index is built from
those events: from the journal's tail at start (:meth:`RequestIndex.load`), then from
each commit (:meth:`RequestIndex.on_events`, a pipeline listener, told before the
command's own reply). A request whose (peer, id) is here is answered as committed, with
its seq, and not run again; one still in flight is answered with the first one's reply.

Each peer keeps its own last :data:`PER_PEER` ids: no one else's requests, and no
read-only request (``status`` is never journaled), evict them (``docs/security.md``,
Replayed commands change nothing).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from daemon.journal.events import Event, decode

log = structlog.get_logger("requests")

#: committed ids remembered per peer (a busy game server sends ~2,000 commands an hour)
PER_PEER = 4096
#: how far back in the journal the index is rebuilt from at start, in events: ~20 hours of a
#: busy blackjack table (on the 2-vCPU dev VM a scan of 200,000 took 0.13-0.18 s, of 50,000
#: 0.04-0.1 s: it is paid by every start, before READY)
LOAD_EVENTS = 50_000

_sorted = msgspec.json.Encoder(order="sorted")


def digest(name: str, args: dict[str, Any] | None, actor: str) -> bytes:
    """What a request asked, as journaled: a retry must ask exactly this again.

    ``args`` None: a sealed command's (its args hold a card that may be the hole card and
    are published masked, ``daemon/table/secrecy.py``), whose retry is matched by name and actor.
    """
    return _sorted.encode([name, args, actor])


@dataclass(frozen=True, slots=True)
class Committed:
    """A request the journal holds: what it asked and the seq of its ``operator.command``."""

    name: str
    digest: bytes
    seq: int
    #: its args were sealed: the journal's published body holds them masked
    sealed: bool = False


Key = tuple[str, str | int]


class RequestIndex:
    """(peer, id) → the committed request, per peer bounded; and the requests in flight."""

    def __init__(self, per_peer: int = PER_PEER) -> None:
        self.per_peer = per_peer
        self._peers: dict[str, OrderedDict[str | int, Committed]] = {}
        #: requests submitted and not yet answered: a retry waits on the first's future
        self.pending: dict[Key, tuple[bytes, asyncio.Future[dict[str, Any]]]] = {}
        self.loaded = 0

    def get(self, key: Key) -> Committed | None:
        ids = self._peers.get(key[0])
        return None if ids is None else ids.get(key[1])

    def add(self, peer: str, req_id: str | int, c: Committed) -> None:
        ids = self._peers.setdefault(peer, OrderedDict())
        ids[req_id] = c
        ids.move_to_end(req_id)
        while len(ids) > self.per_peer:
            ids.popitem(last=False)

    def count(self) -> int:
        return sum(len(ids) for ids in self._peers.values())

    def on_events(self, events: Sequence[Event]) -> None:
        """A pipeline listener: each committed ``operator.command`` that carried an id."""
        for e in events:
            if e.type == "operator.command":
                self._take(e.seq, e.data)

    def _take(self, seq: int, data: dict[str, Any]) -> None:
        req_id, peer = data.get("request"), data.get("peer")
        if req_id is None or not isinstance(peer, str):
            return
        sealed = "sealed" in data  # the args as asked are in the secret part, not here
        args = None if sealed else data["args"]
        c = Committed(data["name"], digest(data["name"], args, data["actor"]), seq, sealed)
        self.add(peer, req_id, c)

    def load(self, db: sqlite3.Connection, last_seq: int, events: int = LOAD_EVENTS) -> None:
        """The ids committed in the journal's last ``events`` events (at start, before the
        control socket answers)."""
        rows = db.execute(
            "SELECT seq, body FROM events WHERE seq > ? AND type = 'operator.command' ORDER BY seq",
            (last_seq - events,),
        )
        for seq, body in rows:
            try:
                ev = decode(body)
            except Exception:  # proven by the chain walk; a row this build cannot read is skipped
                continue
            self._take(seq, ev.data)
        self.loaded = self.count()
