"""A group of sites into a headquarters stream (docs/floor.md, Sites): each site its own
JetStream domain with its own bridge and subject prefix, joined to the headquarters'
server as a leaf node; the headquarters' stream sources every site's stream, its subjects
mapped back to ``tables.<table>.<type>``, so a backend reads the group as it reads a floor.

Three real sites (nats-server, fake tables with ids unique across the group, a bridge),
one site's NATS stopped (SIGSTOP) for a while and resumed: afterwards every event of every
table is at the headquarters exactly once, in order, its chain verifying from seq 1.
"""

from __future__ import annotations

import signal
import time

import pytest
from site_harness import SITES, hq_stream, site_floor

from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import NatsServer, available, free_port

pytestmark = [
    pytest.mark.floor,
    pytest.mark.skipif(available() is not None, reason=str(available())),
]




def test_three_sites_into_a_headquarters_stream_with_one_site_cut(tmp_path):
    leaf = free_port()
    hq = NatsServer(
        tmp_path / "hq", conf=f"jetstream {{ domain: hq }}\nleafnodes {{ port: {leaf} }}\n"
    )
    floors: list[Floor] = []
    try:
        hq.start()
        for site in SITES:
            f = site_floor(tmp_path / site, site, leaf)
            floors.append(f)
            f.start()
            f.start_bridge()
        run(hq_stream(hq.url))
        cut = floors[1]
        assert cut.nats is not None and cut.nats.proc is not None
        cut.nats.proc.send_signal(signal.SIGSTOP)  # the site's NATS, and so its link, hung
        try:
            time.sleep(5)  # the tables deal on; the site's bridge waits, HQ hears nothing
        finally:
            cut.nats.proc.send_signal(signal.SIGCONT)
        heads = {}
        for f in floors:
            heads.update(f.heads())
        assert len(heads) == 6 and all(t.startswith(SITES) for t in heads)
        counts = run(verify(hq.url, heads, timeout=90, stream="HQ"))
        assert set(counts) == set(heads) and all(n >= 50 for n in counts.values()), counts
    finally:
        for f in floors:
            f.close()
        hq.stop()
