"""A journal of a million real-table events, built fast and cached.

Shoe after shoe of the same generated session the latency benchmark plays
(:class:`bench.session.ShoeDealer`: the real table decides every event),
appended with ``Journal.append`` in transactions of about
``snapshot_every`` events, each with the snapshot of the table state after
its last event, as ``Pipeline._commit`` takes them (and pruned to the last
three, as it prunes). Event times advance with the session's own clock (a
card every 0.8 s), so the journal looks like about eleven days of one table.
Each snapshot's commit also stores its proof signed by a checkpoint key kept in
the cache (:func:`key_path`), as a daemon with ``[security] checkpoint_key`` does,
so a start with that key after a crash walks from the newest proof.

The file is cached in ``bench/results/cache/`` (ignored by git) under a
name that carries the event count and the table state version, and reused
while the table's ``state_version`` and this module's ``FORMAT`` match.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from bench.proc import CACHE
from bench.session import ShoeDealer
from daemon.journal import Batch, Journal
from daemon.journal.events import utc_text

FORMAT = 3  # 2: snapshots sealed by a journal.snapshot event; 3: signed proofs stored
T0 = 1_793_563_200.0  # 2026-11-01T20:00:00Z
TABLE = "bench"


def key_path() -> Path:
    """The benchmark's checkpoint key (created once, kept in the cache)."""
    from daemon.ctl.keys import create_checkpoint

    secret = CACHE / "bench-checkpoint.ed25519"
    if not secret.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        Path(f"{secret}.pub").unlink(missing_ok=True)
        create_checkpoint(CACHE, "bench-checkpoint")
    return secret


def path_for(events: int) -> Path:
    v = ShoeDealer().table.state_version.replace(":", "-")
    return CACHE / f"journal-{events}-{v}-f{FORMAT}.sqlite"


def build(events: int, *, snapshot_every: int = 1000, log: Callable[[str], None] = print) -> Path:
    """The cached journal of at least ``events`` events (built if missing)."""
    path = path_for(events)
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".building")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    log(f"  building a {events:,}-event journal (cached for later runs) …")
    t0 = time.perf_counter()
    dealer = ShoeDealer(seed=11)
    from daemon.security import Checkpointer

    j = Journal(tmp, TABLE)
    j.prover = Checkpointer.load(key_path())
    j.db.execute("PRAGMA synchronous=OFF")  # the build is not the thing measured
    steps = dealer.steps()
    tail = snapshot_every // 2  # a restart finds the head about half a snapshot past the last
    while j.last_seq < events:
        n = 0
        batches: list[Batch] = []
        snapshots = j.last_seq < events - tail
        if snapshots:
            want = min(snapshot_every, events - tail - j.last_seq)
        else:
            want = events - j.last_seq
        while n < want:
            next(steps)
            for inp, drafts in dealer.decisions:
                if drafts:
                    mono = getattr(inp, "mono", None)
                    batches.append(Batch(drafts, utc_text(T0 + (mono or 0.0)), mono))
                    n += len(drafts)
            dealer.decisions.clear()
        snap = None
        if snapshots:
            snap = (dealer.table.state_version, dealer.table.encode_state(dealer.state))
        j.append(batches, snap)
        j.prune_snapshots()
    done = j.last_seq
    j.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    j.close()
    os.replace(tmp, path)
    log(
        f"  built {done:,} events in {time.perf_counter() - t0:.1f} s ({path.stat().st_size >> 20} MiB)"
    )
    return path
