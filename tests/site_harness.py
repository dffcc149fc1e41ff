"""A casino group on loopback: site floors whose NATS is a leaf node of a headquarters
server, and the HQ stream sourcing each site's stream (docs/floor.md, Sites). Shared by
tests/test_floor_sites.py (a site's server hung) and tests/test_floor_site_link.py (a
site's link cut)."""

from __future__ import annotations

from pathlib import Path

import nats
from nats.js.api import ExternalStream, StreamConfig, StreamSource, SubjectTransform

from bench.floor.harness import Floor

SITES = ("s1", "s2", "s3")


def site_floor(folder: Path, site: str, leaf_port: int) -> Floor:
    """Site ``site``'s floor (two fake tables, its own JetStream domain and prefix), its NATS
    a leaf node of the HQ server listening for leaves on ``leaf_port``."""
    return Floor(
        folder,
        real=0,
        fake=2,
        interval=0.1,
        table_prefix=site,
        nats_conf=(
            f"jetstream {{ domain: {site} }}\n"
            f'leafnodes {{ remotes [ {{ url: "nats-leaf://127.0.0.1:{leaf_port}" }} ] }}\n'
        ),
        nats_lines=[f'prefix = "{site}-tables"'],
    )


async def hq_stream(url: str) -> None:
    """The headquarters stream ``HQ``, sourcing every site's ``TABLES`` across its domain."""
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
