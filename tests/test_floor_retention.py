"""Bounded retention with signed checkpoints (docs/floor.md, Retention; issue 31, acceptance 3).

The bridge's stream keeps ``max_age`` seconds; tables sign their journal head in each
heartbeat; the bridge carries each checkpoint into the stream on the event after it (header
``Tabled-Checkpoint``). A backend that starts after retention removed a table's oldest
events verifies it from such a checkpoint with the table's public key, and refuses a forged
one (bad signature, another key, a hash or seq the stream's events do not have).

Real nats-server, real ``tabled-bridge``, fake tables signing with the daemon's own
``Checkpointer``; the forgeries are published into a real stream by the test.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import random
import time
from pathlib import Path
from typing import Any

import nats
import pytest
import zmq.asyncio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from nats.js.api import StreamConfig
from tabled_client.chain import ChainBroken
from tabled_client.checkpoint import CheckpointRefused
from tabled_client.floor import FloorFollower

from bench.floor.harness import Floor, run
from bench.floor.loadgen import FakeTable
from bench.floor.natsd import NatsServer, available
from daemon.security.checkpoints import Checkpointer

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

MAX_AGE = 4.0


def _keypair(folder: Path, name: str) -> tuple[Path, bytes]:
    """An Ed25519 key as ``tablectl keys --checkpoint`` writes it (PEM PKCS #8, 0600) and its
    public key (PEM SubjectPublicKeyInfo)."""
    key = Ed25519PrivateKey.generate()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ed25519"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return path, pub


async def _read(
    url: str, durable: str, want: dict[str, int], timeout: float, expired: list | None = None, **kw
) -> dict:
    """Each table's seqs as a new FloorFollower hands them on, until it reached ``want``
    (what it reports expired on the way appended to ``expired``)."""
    seqs: dict[str, list[int]] = {}
    deadline = time.monotonic() + timeout
    async with FloorFollower(url, durable=durable, **kw) as f:
        async for e in f.events(idle=5):
            seqs.setdefault(e.table, []).append(e.event.seq)
            if all(seqs.get(t, [0])[-1] >= s for t, s in want.items()):
                break
            assert time.monotonic() < deadline, {t: s[-1] for t, s in seqs.items()}
        if expired is not None:
            expired.extend(f.expired)
    return seqs


async def _oldest(url: str, tables: list[str]) -> dict[str, Any]:
    """Each table's oldest seq held in the stream, how many messages carry a checkpoint,
    the stream's max_age."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        out = {}
        for t in tables:
            m = await js.get_msg("TABLES", seq=1, subject=f"tables.{t}.>", next=True)
            out[t] = int(m.headers["Tabled-Seq"])
        info = await js.stream_info("TABLES")
        signed = 0
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                m = await js.get_msg("TABLES", seq=seq)
            except nats.js.errors.NotFoundError:
                continue
            signed += "Tabled-Checkpoint" in (m.headers or {})
        return {"oldest": out, "signed": signed, "max_age": info.config.max_age}
    finally:
        await nc.close()


def test_a_backend_started_after_retention_verifies_every_table_from_a_signed_checkpoint(
    tmp_path,
):
    key, pub = _keypair(tmp_path / "keys", "tables")
    _, stranger = _keypair(tmp_path / "keys", "stranger")
    f = Floor(
        tmp_path / "floor",
        real=0,
        fake=3,
        interval=0.05,
        checkpoint_key=key,
        nats_lines=[f"max_age = {MAX_AGE}", "duplicate_window = 1.0", "max_bytes = 67108864"],
    )
    try:
        f.start()
        f.start_bridge()
        tables = sorted(f.fake_endpoints)
        # the tables deal on; JetStream removes what is MAX_AGE old: waited for, not slept on
        # (how far a loaded machine's tables got in a fixed MAX_AGE + 4 s varies)
        deadline = time.monotonic() + 60
        while True:
            try:
                seen = run(_oldest(f.nats.url, tables))
            except nats.js.errors.NotFoundError as e:  # a table not in the stream yet
                seen = {"oldest": {}, "signed": 0, "error": str(e)}
            if seen["oldest"] and all(s > 20 for s in seen["oldest"].values()):
                if seen["signed"] > 10:
                    break
            assert time.monotonic() < deadline, seen
            time.sleep(0.5)
        assert seen["max_age"] == MAX_AGE
        assert all(s > 20 for s in seen["oldest"].values()), seen  # retention removed seq 1…
        assert seen["signed"] > 10, seen  # the bridge carried the tables' checkpoints
        want = {t: s for t, (_j, s) in f.heads().items()}
        keys = dict.fromkeys(tables, pub)
        # before checkpoints: a new backend could only verify from genesis, and seq 1 is gone
        with pytest.raises(ChainBroken, match="resumes at seq"):
            run(_read(f.nats.url, "genesis", want, 30))
        # the backend reads at the retention edge: what expires under it is skipped, proven
        # from the next checkpoint, and reported (issue 31; test_floor_retention_edge.py)
        expired: list = []
        seqs = run(_read(f.nats.url, "late", want, 60, expired, keys=keys))
        assert set(seqs) == set(tables)
        for t, got in seqs.items():
            assert got[0] > 1, (t, got[:3])  # verified from a checkpoint, not from seq 1
            jumps = {x.after[1]: x.resumed[1] for x in expired if x.table == t}
            for a, b in itertools.pairwise(got):  # every event, once, in order...
                assert b == jumps.get(a, a + 1), (t, a, b, expired)  # ...but what expired
            assert got[-1] >= want[t]
        # the tables' checkpoints checked with another key: refused, naming the key
        with pytest.raises(CheckpointRefused, match="not the table's key"):
            run(_read(f.nats.url, "stranger", want, 30, keys=dict.fromkeys(tables, stranger)))
    finally:
        f.close()


# -- forged checkpoints, published into a real stream -------------------------------------


def _table(key: Path) -> tuple[FakeTable, zmq.asyncio.Context]:
    ctx = zmq.asyncio.Context()
    t = FakeTable(ctx, "fg-001", random.Random(7), Checkpointer.load(key))
    t.cut = True  # deals into its journal only
    for _ in range(30):
        t.deal()
    return t, ctx


async def fresh_stream(js: Any) -> None:
    """An empty ``TABLES`` stream, whatever an earlier step left in it."""
    try:
        await js.delete_stream("TABLES")
    except nats.js.errors.NotFoundError:
        pass
    await js.add_stream(StreamConfig(name="TABLES", subjects=["tables.>"]))


async def _publish(url: str, t: FakeTable, checkpoint: dict, on_seq: int) -> None:
    """The table's events 11…30 in a fresh stream (1…10 removed by retention), as the bridge
    stores them, ``checkpoint`` on event ``on_seq``."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await fresh_stream(js)
        for raw in t.journal[10:]:
            ev = json.loads(raw)
            headers = {
                "Nats-Msg-Id": f"{t.table}:{t.journal_id}:{ev['seq']}",
                "Tabled-Journal": t.journal_id,
                "Tabled-Seq": str(ev["seq"]),
                "Tabled-Hash": ev["hash"],
                "Tabled-Prev": ev["prev"],
            }
            if ev["seq"] == on_seq:
                headers["Tabled-Checkpoint"] = json.dumps(checkpoint)
            await js.publish(f"tables.{t.table}.card.dealt", raw, headers=headers)
    finally:
        await nc.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = NatsServer(tmp_path_factory.mktemp("nats"))
    s.start()
    yield s
    s.stop()


def _forgery(kind: str, t: FakeTable, key: Path, other: Path) -> tuple[dict, int]:
    """A checkpoint of ``kind`` and the seq of the event that carries it."""
    h = {json.loads(r)["seq"]: json.loads(r)["hash"] for r in t.journal}
    sign = Checkpointer.load(key)
    if kind == "good":
        return sign(t.table, t.journal_id, 14, h[14]), 15
    if kind == "bad signature":
        cp = dict(sign(t.table, t.journal_id, 14, h[14]))
        sig = bytearray(base64.b64decode(cp["sig"]))
        sig[0] ^= 1
        cp["sig"] = base64.b64encode(bytes(sig)).decode()
        return cp, 15
    if kind == "another key":
        return Checkpointer.load(other)(t.table, t.journal_id, 14, h[14]), 15
    if kind == "another hash":  # signed by the table's key, but not what the stream holds
        return sign(t.table, t.journal_id, 14, h[13]), 15
    if kind == "another seq":  # a true checkpoint of seq 14, carried by event 18
        return sign(t.table, t.journal_id, 14, h[14]), 18
    if kind == "another journal":
        return sign(t.table, "f" * 32, 14, h[14]), 15
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("kind", "refusal"),
    [
        ("good", None),
        ("bad signature", "signature does not verify"),
        ("another key", "not the table's key"),
        ("another hash", "not the events it signed"),
        ("another seq", "names table 'fg-001', journal .*, seq 14"),
        ("another journal", "not this event's"),
    ],
)
def test_a_forged_checkpoint_is_refused(tmp_path, server, kind, refusal):
    key, pub = _keypair(tmp_path, "table")
    other, _ = _keypair(tmp_path, "other")
    t, ctx = _table(key)
    try:
        cp, on_seq = _forgery(kind, t, key, other)
        asyncio.run(_publish(server.url, t, cp, on_seq))
        read = _read(server.url, f"r{abs(hash(kind))}", {t.table: 30}, 20, keys={t.table: pub})
        if refusal is None:
            assert run(read) == {t.table: list(range(11, 31))}  # from seq 11, every event
        else:
            with pytest.raises(CheckpointRefused, match=refusal):
                run(read)
    finally:
        t.close()
        ctx.destroy(linger=0)


def test_retention_keys_are_checked_against_what_jetstream_accepts(tmp_path):
    from bridge.config import load
    from daemon.runtime.config import ConfigError

    p = tmp_path / "bridge.toml"
    table = '[[tables]]\nid = "t1"\npublish = "tcp://x:1"\nreplay = "tcp://x:2"\n'
    p.write_text("[nats]\nmax_age = 60\nduplicate_window = 120\nmax_bytes = 1000\n" + table)
    with pytest.raises(ConfigError) as e:
        load(p)
    text = str(e.value)
    assert "nats.duplicate_window: 120 s is longer than nats.max_age (60 s)" in text
    assert "nats.max_bytes: 1000 is under 1 MiB" in text
    p.write_text("[nats]\nmax_age = -1\n" + table)
    with pytest.raises(ConfigError, match=r"nats\.max_age"):
        load(p)
    p.write_text("[nats]\nmax_age = 86400\nmax_bytes = 1073741824\n" + table)
    n = load(p).nats
    assert (n.max_age, n.max_bytes) == (86400, 1 << 30)
