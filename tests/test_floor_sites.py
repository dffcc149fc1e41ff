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

import nats
import pytest
from nats.js.api import ExternalStream, StreamConfig, StreamSource, SubjectTransform

from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import NatsServer, available, free_port

pytestmark = [
    pytest.mark.floor,
    pytest.mark.skipif(available() is not None, reason=str(available())),
]

SITES = ("s1", "s2", "s3")


async def _hq_stream(url: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().add_stream(
            StreamConfig(
                name="HQ",
                sources=[
                    StreamSource(
                        name="TABLES",
                        external=ExternalStream(api=f"$JS.{site}.API"),
                        subject_transforms=[
                            SubjectTransform(src=f"{site}-tables.>", dest="tables.>")
                        ],
                    )
                    for site in SITES
                ],
            )
        )
    finally:
        await nc.close()


def test_three_sites_into_a_headquarters_stream_with_one_site_cut(tmp_path):
    leaf = free_port()
    hq = NatsServer(
        tmp_path / "hq", conf=f"jetstream {{ domain: hq }}\nleafnodes {{ port: {leaf} }}\n"
    )
    floors: list[Floor] = []
    try:
        hq.start()
        for site in SITES:
            f = Floor(
                tmp_path / site,
                real=0,
                fake=2,
                interval=0.1,
                table_prefix=site,
                nats_conf=(
                    f"jetstream {{ domain: {site} }}\n"
                    f'leafnodes {{ remotes [ {{ url: "nats-leaf://127.0.0.1:{leaf}" }} ] }}\n'
                ),
                nats_lines=[f'prefix = "{site}-tables"'],
            )
            floors.append(f)
            f.start()
            f.start_bridge()
        run(_hq_stream(hq.url))
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
