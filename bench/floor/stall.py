"""``make floor``'s stall of one of two active bridges (issue 31): 0 duplicates, 0 gaps.

Two ``tabled-bridge`` processes on the same tables and stream (active-active,
docs/floor.md, Redundancy), 200 fake tables dealing at their normal rate (a card every
0.5 s each), the shipped duplicate window (120 s). Once both have stored every table, one
is stopped (SIGSTOP) for ``seconds`` (10 minutes: five windows) while the tables deal on;
then it is woken (SIGCONT) with ten minutes of stale events queued and stale expectations.
Counted, not asserted per se (``run`` returns them; ``python -m bench.floor`` prints them
against the goal and exits 1 when one is not 0):

- while it was stopped, whether the other bridge alone stored every table up to the head
  the tables had when the stall ended (and in how long after it);
- after it woke and reached the tables' heads again: the whole stream read back, per table
  the messages stored twice (by message id), the seqs missing, the events whose chain does
  not verify, and tables not at their head;
- what each bridge counted: events it stored, events it found stored (refused as
  duplicates) and events it skipped because the other stored them first.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import nats
from tabled_client import Chain

from bench.floor.catchup import start_bridge
from bench.floor.harness import Floor


def _status(port: int) -> dict[str, Any]:
    """The bridge's status per table; {} when it does not answer in time (a loaded loop)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as r:
            return json.loads(r.read())["tables"]  # type: ignore[no-any-return]
    except (OSError, TimeoutError):
        return {}


def _until_stored(port: int, heads: dict[str, tuple[str, int]], timeout: float) -> float | None:
    """Seconds until the bridge on ``port`` has stored every table up to ``heads`` (None:
    not within ``timeout``). Read from its status each second: the bench's sampling."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        st = _status(port)
        if st and all(
            t in st and st[t]["journal_id"] == j and st[t]["stored_seq"] >= s
            for t, (j, s) in heads.items()
        ):
            return round(time.monotonic() - t0, 1)
        time.sleep(1.0)
    return None


async def tally(url: str, heads: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """The whole stream read back and counted per table, never raising: duplicates (a
    table's event, by journal and seq, stored again), gaps (seqs missing between two stored), chain errors, and
    tables whose stored head is short of ``heads``."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        left = (await js.stream_info("TABLES")).state.messages
        sub = await js.subscribe(">", ordered_consumer=True, stream="TABLES")
        seen: dict[str, set[tuple[str, int]]] = {}
        last: dict[str, int] = {}
        chains: dict[str, Chain] = {}
        dup = gaps = broken = 0
        while left > 0:
            msg = await sub.next_msg(timeout=30)
            left -= 1
            table = msg.subject.split(".")[1]
            hdr = msg.headers or {}
            jid, seq = hdr["Tabled-Journal"], int(hdr["Tabled-Seq"])
            if (jid, seq) in seen.setdefault(table, set()):
                dup += 1  # whatever its message id: the same event stored again
                continue
            seen[table].add((jid, seq))
            gaps += max(0, seq - last.get(table, 0) - 1)
            last[table] = max(last.get(table, 0), seq)
            try:
                chains.setdefault(table, Chain(table)).check(msg.data, journal_id=jid)
            except Exception:
                broken += 1
        await sub.unsubscribe()
    finally:
        await nc.close()
    short = sorted(t for t, (_j, s) in heads.items() if last.get(t, 0) < s)
    return {
        "tables": len(seen),
        "events": sum(len(v) for v in seen.values()),
        "duplicates": dup,
        "gaps": gaps,
        "chain_errors": broken,
        "tables_short_of_head": len(short),
    }


def run(
    folder: Path, *, tables: int = 200, seconds: float = 600.0, window: float | None = None
) -> dict[str, Any]:
    """The stage; ``window``: a duplicate window other than the shipped one (a short test)."""
    f = Floor(
        folder,
        real=0,
        fake=tables,
        interval=0.5,
        nats_lines=[] if window is None else [f"duplicate_window = {window}"],
    )
    other: subprocess.Popen[bytes] | None = None
    out: dict[str, Any] = {"tables": tables, "stall_s": seconds, "window_s": window or 120.0}
    try:
        f.start()
        assert f.nats is not None
        start_bridge(f, 120)
        for attempt in range(3):  # its status port, picked free, may be taken meanwhile
            try:
                other, port = f.start_other_bridge("bridge-b", 120)
                break
            except AssertionError:
                log = (f.folder / "bridge-b.log").read_text()
                if attempt == 2 or "address already in use" not in log:
                    raise
        ready = _until_stored(f.metrics_port, f.heads(), 300)
        if ready is None or _until_stored(port, f.heads(), 300) is None:
            raise TimeoutError("the two bridges did not store every table before the stall")
        print(
            f"  both bridges at the head of {tables} tables; stalling one for {seconds:g} s …",
            flush=True,
        )
        before = f.heads()
        other.send_signal(signal.SIGSTOP)
        try:
            time.sleep(seconds)  # the stall itself: the bench's clock, not the bridge's
            heads = f.heads()
            out["alone_stored_all_within_s"] = _until_stored(f.metrics_port, heads, 120)
        finally:
            other.send_signal(signal.SIGCONT)
        out["events_dealt_during_stall"] = sum(s - before[t][1] for t, (_j, s) in heads.items())
        back = _until_stored(port, f.heads(), 600)
        out["woken_at_head_within_s"] = back
        print(
            f"  the other bridge alone stored every table: within "
            f"{out['alone_stored_all_within_s']} s; the stalled one at the head again "
            f"{back} s after SIGCONT; reading the stream back …",
            flush=True,
        )
        final = f.heads()
        _until_stored(f.metrics_port, final, 120)
        _until_stored(port, final, 120)
        for name, p in (("a", f.metrics_port), ("b_stalled", port)):
            st = _status(p)
            out[f"bridge_{name}"] = {
                "stored": sum(t["published"] for t in st.values()),
                "found_stored": sum(t["duplicates"] for t in st.values()),
                "skipped": sum(t["skipped"] for t in st.values()),
                "following": sum(t["state"] == "following" for t in st.values()),
            }
        out["stream"] = asyncio.run(tally(f.nats.url, final))
        s = out["stream"]
        out["problems"] = (
            s["duplicates"] + s["gaps"] + s["chain_errors"] + s["tables_short_of_head"]
        )
        return out
    finally:
        if other is not None and other.poll() is None:
            other.send_signal(signal.SIGCONT)
            other.kill()
            other.wait(10)
        f.close()
