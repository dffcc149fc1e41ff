"""Many fake tables in one process, speaking the tabled bus and replay protocol.

Each table has its own PUB and replay (ROUTER) socket on a free loopback port, a
journal in memory sealed with the daemon's own code (``daemon.journal.events.seal``, data
built through ``draft``, so every event is a valid ``card.dealt`` with a real hash
chain), a heartbeat every second (with ``--checkpoint-key``, carrying the journal head
signed with that Ed25519 key, as ``[security] checkpoint_key`` makes a table do), and deals a card every ``interval`` seconds with
jitter (a live table's rate). Controlled over a REP socket with JSON commands:

- ``{"cmd": "endpoints"}``: ``{table: [publish, replay]}``
- ``{"cmd": "cut", "table": T}`` / ``{"cmd": "resume", "table": T}``: stop and restart the
  table's PUB (no events, no heartbeats: the network is cut); it keeps dealing meanwhile
- ``{"cmd": "burst", "n": N}``: every table deals N cards at once
- ``{"cmd": "backlog", "table": T, "n": N}``: T deals N cards while cut (an hour offline)
- ``{"cmd": "outage", "n": N, "seconds": S}``: every table journals N cards spread evenly
  over the S seconds before now, none of them published (the floor's link was down: what a
  bridge started afterwards must catch up by replay); built at once, not in S seconds
- ``{"cmd": "tamper", "table": T, "seq": N}``: edit event N in T's journal (a replay then
  sends bytes whose hash does not match: what a chain check must catch)
- ``{"cmd": "endless", "table": T, "frames": N}``: T's replay answers are N frames of 64 KiB
  junk each and no end marker (a broken or hostile table)
- ``{"cmd": "rollback", "table": T, "n": N}``: T's journal loses its last N events (same
  journal id: restored from an older copy) and T deals on from there
- ``{"cmd": "replace", "table": T}``: T starts a new journal (a new journal id, seqs from 1),
  as a table whose journal file was replaced
- ``{"cmd": "heads"}``: ``{table: [journal_id, last_seq, last_hash]}``
- ``{"cmd": "deal"}``: a generator started with ``--no-deal`` starts dealing now (every
  table at its rate: a floor whose bridge was up before the first card)
- ``{"cmd": "stop"}``

    python -m bench.floor.loadgen --tables 480 --control ipc:///tmp/lg.ctl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import zmq
import zmq.asyncio

from daemon.journal.events import GENESIS, draft, seal, utc_text

RANKS, SUITS = "A23456789TJQK", "SHDC"
_encode = msgspec.json.Encoder().encode


class FakeTable:
    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        table: str,
        rng: random.Random,
        checkpointer: Callable[[str, str, int, str], dict[str, Any]] | None = None,
    ) -> None:
        self.table = table
        self.checkpointer = checkpointer
        self.rng = rng
        self.journal: list[bytes] = []
        self.last_hash = GENESIS
        self.journal_id = uuid.uuid4().hex
        self.cut = False
        self.pub = ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.setsockopt(zmq.SNDHWM, 100_000)
        self.pub.bind("tcp://127.0.0.1:*")
        self.pub_now = zmq.Socket.shadow(self.pub.underlying)  # a PUB never blocks
        self.hb_topic = f"{table}.heartbeat".encode()
        self.rep = ctx.socket(zmq.ROUTER)
        self.rep.setsockopt(zmq.LINGER, 0)
        # A ROUTER drops what a peer's full queue cannot take, silently: a bridge slowed by
        # load then got a replay answer with a hole in it (seq 1329 after 1151) and, rightly,
        # a broken chain: the catch-up never ended. tabled's own replay server waits instead
        # (ROUTER_MANDATORY, daemon/bus/replay_server.py); this fake queues the whole answer.
        self.rep.setsockopt(zmq.SNDHWM, 0)
        self.rep.bind("tcp://127.0.0.1:*")
        #: the same socket, written without the event loop (a whole answer at once)
        self.rep_now = zmq.Socket.shadow(self.rep.underlying)
        self.endpoints = (
            self.pub.getsockopt_string(zmq.LAST_ENDPOINT),
            self.rep.getsockopt_string(zmq.LAST_ENDPOINT),
        )
        self.hand, self.position = 1, 0
        #: a broken or hostile replay server: each answer is this many 64 KiB data frames,
        #: never its end marker (0: a true answer)
        self.endless = 0

    def deal(self, ago: float = 0.0) -> bytes:
        """Deal a card now, or journaled ``ago`` seconds back (an outage's backlog)."""
        self.position += 1
        if self.position > 5:
            self.hand, self.position = self.hand + 1, 1
        card = self.rng.choice(RANKS) + self.rng.choice(SUITS)
        d = draft(
            "card.dealt",
            {
                "shoe": 1,
                "hand": self.hand,
                "box": "player" if self.position % 2 else "banker",
                "position": self.position,
                "card": card,
                "shoe_position": len(self.journal) + 1,
                "device": "shoe",
                "face_up": False,
            },
        )
        now = time.time() - ago
        ev, raw = seal(
            table=self.table,
            seq=len(self.journal) + 1,
            draft=d,
            time=utc_text(now),
            mono=time.monotonic() - ago,
            prev=self.last_hash,
        )
        self.journal.append(raw)
        self.last_hash = ev.hash
        if not self.cut:
            self.pub.send_multipart([ev.topic, raw], copy=False)
        return raw

    def heartbeat(self) -> None:
        if self.cut:
            return
        hb = {
            "v": 1,
            "table": self.table,
            "type": "heartbeat",
            "time": utc_text(time.time()),
            "mono": time.monotonic(),
            "data": {
                "last_seq": len(self.journal),
                "last_hash": self.last_hash,
                "journal_id": self.journal_id,
                "journal_ok": True,
                "alarms": 0,
                "devices": {},
            },
        }
        if self.checkpointer is not None and self.journal:
            hb["data"]["checkpoint"] = self.checkpointer(  # type: ignore[index]
                self.table, self.journal_id, len(self.journal), self.last_hash
            )
        # encoded and queued without the event loop: 5,000 fake tables' heartbeats were a
        # share of the 2 cores the floor's catch-up stage measures the bridges on
        self.pub_now.send_multipart([self.hb_topic, _encode(hb)], zmq.NOBLOCK)

    async def serve_replay(self) -> None:
        while True:
            ident, req = await self.rep.recv_multipart()
            try:
                q = json.loads(req)
                start, stop = int(q["from"]), int(q.get("to", len(self.journal)))
            except (ValueError, KeyError, TypeError):
                await self.rep.send_multipart([ident, b'{"error":"bad request"}'])
                continue
            stop = min(stop, len(self.journal))
            if self.endless:
                junk = b'{"data":"' + b"x" * 65_536 + b'"}'
                for i in range(self.endless):
                    await self.rep.send_multipart([ident, junk])
                    if i % 64 == 0:
                        await asyncio.sleep(0)
                continue
            # queued without the event loop: SNDHWM 0 never refuses (an awaited send per
            # frame made the fake tables' replay cost as much CPU as the bridge's reading of
            # it, on the same 2 cores, in the floor's catch-up: issue 31)
            for raw in self.journal[start - 1 : stop]:
                self.rep_now.send_multipart([ident, raw], zmq.NOBLOCK)
            end = {
                "end": True,
                "from": start,
                "to": max(stop, start - 1),
                "last_seq": len(self.journal),
                "journal_id": self.journal_id,
            }
            await self.rep.send_multipart([ident, json.dumps(end).encode()])

    def close(self) -> None:
        self.pub.close()
        self.rep.close()


class LoadGen:
    def __init__(
        self,
        n: int,
        *,
        prefix: str = "lg",
        interval: float = 0.5,
        seed: int = 1,
        checkpoint_key: str | None = None,
    ) -> None:
        self.ctx = zmq.asyncio.Context()
        self.ctx.set(zmq.MAX_SOCKETS, 8 * n + 64)
        rng = random.Random(seed)
        signer = None
        if checkpoint_key:
            from daemon.security.checkpoints import Checkpointer

            signer = Checkpointer.load(checkpoint_key)
        self.tables = {
            f"{prefix}-{i:03d}": FakeTable(
                self.ctx, f"{prefix}-{i:03d}", random.Random(rng.random()), signer
            )
            for i in range(1, n + 1)
        }
        self.interval = interval
        self.rng = rng
        self.dealt = 0
        #: what ``run`` cancels at the end (the dealers join it on ``deal``)
        self.tasks: list[asyncio.Task[None]] = []
        self.dealing = False

    async def dealer(self, t: FakeTable) -> None:
        await asyncio.sleep(self.rng.random() * self.interval)
        while True:
            t.deal()
            self.dealt += 1
            await asyncio.sleep(self.interval * (0.5 + self.rng.random()))

    async def heartbeats(self) -> None:
        while True:
            for t in self.tables.values():
                t.heartbeat()
            await asyncio.sleep(1.0)

    def command(self, q: dict[str, Any]) -> Any:
        cmd = q.get("cmd")
        if cmd == "endpoints":
            return {k: list(t.endpoints) for k, t in self.tables.items()}
        if cmd == "heads":
            return {k: [t.journal_id, len(t.journal), t.last_hash] for k, t in self.tables.items()}
        if cmd in ("cut", "resume"):
            self.tables[q["table"]].cut = cmd == "cut"
            return {"ok": True}
        if cmd == "deal":
            if not self.dealing:
                self.dealing = True
                self.tasks += [asyncio.create_task(self.dealer(t)) for t in self.tables.values()]
            return {"ok": True}
        if cmd == "burst":
            for t in self.tables.values():
                for _ in range(int(q["n"])):
                    t.deal()
            return {"ok": True}
        if cmd == "replace":
            t = self.tables[q["table"]]
            t.journal, t.last_hash, t.journal_id = [], GENESIS, uuid.uuid4().hex
            t.hand, t.position = 1, 0
            return {"ok": True, "journal_id": t.journal_id}
        if cmd == "endless":
            self.tables[q["table"]].endless = int(q.get("frames", 2000))
            return {"ok": True}
        if cmd == "rollback":
            # the journal restored from an older copy: same id, its last N events gone; the
            # table deals on from there (new events under seqs others already hold)
            t = self.tables[q["table"]]
            keep = len(t.journal) - int(q["n"])
            t.journal = t.journal[:keep]
            t.last_hash = json.loads(t.journal[-1])["hash"] if t.journal else GENESIS
            return {"ok": True, "last_seq": keep}
        if cmd == "tamper":
            t = self.tables[q["table"]]
            i = int(q["seq"]) - 1
            t.journal[i] = t.journal[i].replace(b'"device":"shoe"', b'"device":"shoe2"')
            return {"ok": True}
        if cmd == "outage":
            n, span = int(q["n"]), float(q["seconds"])
            for t in self.tables.values():
                was, t.cut = t.cut, True
                for i in range(n):
                    t.deal(ago=span * (n - i) / n)
                t.cut = was
            return {"ok": True, "events": n * len(self.tables)}
        if cmd == "backlog":
            t = self.tables[q["table"]]
            was, t.cut = t.cut, True
            for _ in range(int(q["n"])):
                t.deal()
            t.cut = was
            return {"ok": True, "last_seq": len(t.journal)}
        return {"error": f"unknown command {cmd!r}"}

    async def run(self, control: str, *, deal: bool = True) -> None:
        rep = self.ctx.socket(zmq.REP)
        rep.bind(control)
        tasks = self.tasks
        tasks += [asyncio.create_task(t.serve_replay()) for t in self.tables.values()]
        tasks.append(asyncio.create_task(self.heartbeats()))
        if deal:
            self.command({"cmd": "deal"})
        try:
            while True:
                q = json.loads(await rep.recv())
                if q.get("cmd") == "stop":
                    await rep.send(b'{"ok":true}')
                    return
                await rep.send(json.dumps(self.command(q)).encode())
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for t in self.tables.values():
                t.close()
            rep.close()
            self.ctx.destroy(linger=0)


class Control:
    """The other end of a running load generator's control socket."""

    def __init__(self, endpoint: str, timeout: float = 30.0) -> None:
        self.sock = zmq.Context.instance().socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, int(timeout * 1000))
        self.sock.connect(endpoint)

    def __call__(self, cmd: str, **args: Any) -> Any:
        self.sock.send(json.dumps({"cmd": cmd, **args}).encode())
        return json.loads(self.sock.recv())

    def close(self) -> None:
        self.sock.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", type=int, required=True)
    p.add_argument("--control", required=True, help="REP endpoint for commands")
    p.add_argument("--prefix", default="lg")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between cards per table")
    p.add_argument("--no-deal", action="store_true", help="only deal on command (bursts, backlogs)")
    p.add_argument("--checkpoint-key", help="Ed25519 PEM: heartbeats carry signed checkpoints")
    a = p.parse_args(argv)
    gen = LoadGen(a.tables, prefix=a.prefix, interval=a.interval, checkpoint_key=a.checkpoint_key)
    asyncio.run(gen.run(a.control, deal=not a.no_deal))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
