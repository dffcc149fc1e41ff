"""tabled-display on a table with CURVE (``[security] server_key``): a display whose key the
table admits shows the table; one it does not admit shows nothing and says the table is
offline (the table sends it nothing, not even a heartbeat). Real daemon, real display, no
browser: the page draws exactly ``/state``."""

from __future__ import annotations

import time
from pathlib import Path

from daemon_harness import Daemon, write_config
from display_harness import DisplayProc

from daemon.ctl.keys import create_curve


def test_a_curve_table_shows_only_to_an_admitted_display(tmp_path: Path):
    keys = tmp_path / "keys"
    _, server_secret = create_curve(keys, "table")
    (keys / "clients").mkdir()
    pub, admitted = create_curve(keys / "private", "display")
    (keys / "clients" / pub.name).write_bytes(pub.read_bytes())
    _, stranger = create_curve(keys / "private", "stranger")
    cfg = write_config(
        tmp_path,
        extra=f'\n[security]\nserver_key = "{server_secret}"\nclients = "{keys / "clients"}"\n',
    )
    d = Daemon(cfg)
    good = DisplayProc(cfg, "--client-key", str(admitted), "--server-key", str(keys / "table.key"))
    bad = DisplayProc(cfg, "--client-key", str(stranger), "--server-key", str(keys / "table.key"))
    plain = DisplayProc(cfg)
    try:
        d.start()
        for p in (good, bad, plain):
            p.start()
        deadline = time.monotonic() + 30
        while (st := good.state())["seq"] < 20 or not st["online"]:
            assert time.monotonic() < deadline, st
            time.sleep(0.2)
        assert st["game"] == "baccarat" and st["error"] is None
        for p in (bad, plain):  # no key the table admits: nothing, and it says so
            s = p.state()
            assert s["seq"] == 0 and s["online"] is False and s["status"] == "waiting", s
    finally:
        for p in (good, bad, plain):
            p.stop()
        d.stop()
        d.close()
