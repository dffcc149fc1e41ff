"""A table whose journal went back (restored from an older copy: the same journal id, seqs
JetStream already holds) is seen at once as rolled back, quarantined, and nothing it sends
afterwards is lost: its events are kept aside in the quarantine stream until the operator
starts a new journal, which the bridge then bridges (docs/floor.md, A table rolled back).

A real nats-server, two fake tables dealing ten cards a second, ``tabled-bridge`` as
installed. Before this, the bridge dropped the table's new events as already held, then
marked it chain-broken for good.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from tabled_client.chain import Chain

from bench.floor.harness import BIN, Floor, run, verify
from bench.floor.natsd import available, stream_events

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def _tables(f: Floor) -> dict:
    r = subprocess.run(
        [str(BIN / "tabled-bridge"), "--config", str(f.bridge_config), "status", "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["tables"]


@pytest.mark.parametrize(
    ("back_by", "interval"),
    # 60 back: heartbeats show it first. 2 back at 20 cards/s: the table deals past what
    # JetStream holds before a heartbeat can, and its next event breaks the chain: that
    # break is asked about and found to be the same rollback (it was "chain-broken").
    [(60, 0.1), (2, 0.05)],
    ids=["far-back", "just-back"],
)
def test_a_journal_restored_from_an_older_copy_is_quarantined_and_nothing_is_lost(
    tmp_path, back_by, interval
):
    f = Floor(tmp_path / "floor", real=0, fake=2, interval=interval)
    try:
        f.start()
        assert f.nats is not None and f.control is not None
        f.control("burst", n=100)
        f.start_bridge()
        run(verify(f.nats.url, f.heads(), timeout=60))
        jid = f.heads()["lg-001"][0]
        back = f.control("rollback", table="lg-001", n=back_by)["last_seq"]
        deadline = time.monotonic() + 10
        while (st := _tables(f))["lg-001"]["state"] != "rolled-back":
            assert time.monotonic() < deadline, st["lg-001"]
            time.sleep(0.3)
        stored = st["lg-001"]["stored_seq"]
        assert stored > back and "went back" in st["lg-001"]["last_error"], st["lg-001"]
        log = [
            json.loads(ln)
            for ln in (f.folder / "bridge.log").read_text().splitlines()
            if ln.startswith("{")
        ]
        err = [ln for ln in log if ln.get("event", "").startswith("table rolled back")]
        assert len(err) == 1 and err[0]["level"] == "error" and err[0]["priority"] == 3, err
        # the other table goes on
        run(verify(f.nats.url, {"lg-002": f.heads()["lg-002"]}, timeout=30))
        time.sleep(3)  # lg-001 deals on: 30 new events, under seqs JetStream holds
        head = f.heads()["lg-001"]
        assert head[0] == jid and head[1] > back + 20 * interval / 0.1
        # every event it dealt since is kept aside, chain-checked from the table's own head
        deadline = time.monotonic() + 20
        while True:
            aside = run(stream_events(f.nats.url, "TABLES_QUARANTINE")).get("lg-001", [])
            seqs = [int(h["Tabled-Seq"]) for h, _ in aside]
            if seqs and seqs[-1] >= head[1]:
                break
            assert time.monotonic() < deadline, seqs
            time.sleep(0.5)
        # from the fork on: the table's first event JetStream does not hold the same
        assert seqs == list(range(back + 1, seqs[-1] + 1)), (back, seqs)
        assert _tables(f)["lg-001"]["fork_seq"] == back
        chain = Chain("lg-001", journal_id=jid, seq=seqs[0] - 1, hash=aside[0][0]["Tabled-Prev"])
        for _h, raw in aside:
            chain.check(raw, journal_id=jid)
        # nothing of it went to the table's own subjects: its chain there stops, never forks
        kept = run(stream_events(f.nats.url))["lg-001"]
        assert int(kept[-1][0]["Tabled-Seq"]) == stored
        # the operator starts a new journal on the table: the bridge bridges it from seq 1
        new = f.control("replace", table="lg-001")["journal_id"]
        f.control("burst", n=5)
        counts = run(verify(f.nats.url, f.heads(), timeout=60))
        assert counts["lg-001"] >= stored + 5
        st = _tables(f)["lg-001"]
        assert st["state"] == "following" and st["journal_id"] == new, st
    finally:
        f.close()
