"""The bridge under its unit's own limits carries a large floor (issue 31, The unit): the
open-file limit of ``systemd/tabled-bridge.service`` (``LimitNOFILE=``; systemd's default
soft limit, 1,024, when the unit sets none) and, where libseccomp is here, its system
call filter (``~@resources`` forbids raising the limit from inside). 2,500 fake tables,
each with one event to replay, every one bridged, no "Too many open files".

Marked ``floor`` (make floor): 2,500 tables take about a minute on this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.floor.harness import BIN, Floor, run, verify
from bench.floor.natsd import available

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "systemd" / "tabled-bridge.service"
TABLES = 2500

pytestmark = [
    pytest.mark.floor,
    pytest.mark.skipif(available() is not None, reason=str(available())),
]


def limit_nofile(unit: Path) -> int:
    """The unit's LimitNOFILE= (its soft limit), or systemd's default soft limit."""
    for line in unit.read_text().splitlines():
        if line.strip().startswith("LimitNOFILE="):
            return int(line.split("=", 1)[1].split(":")[0])
    return 1024


def test_the_unit_sets_room_for_its_largest_floor():
    # per table at most 3 fds (docs/floor.md, Open files, per table), and the rest of the process
    assert limit_nofile(UNIT) >= 3 * TABLES + 1024


def test_2500_tables_under_the_units_limits_with_no_fd_error(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from unit_seccomp import available as seccomp_why

    wrap = None
    if seccomp_why() is None:
        wrap = [sys.executable, str(ROOT / "tests" / "unit_seccomp.py"), str(UNIT), "--"]
    f = Floor(tmp_path / "floor", real=0, fake=TABLES, interval=60)
    try:
        f.start(deal=False)
        assert f.nats is not None and f.control is not None
        f.control("burst", n=1)
        f.start_bridge(timeout=120, wrap=wrap, nofile=limit_nofile(UNIT))
        counts = run(verify(f.nats.url, f.heads(), timeout=240))
        assert len(counts) == TABLES and all(n == 1 for n in counts.values())
        log = (f.folder / "bridge.log").read_text()
        assert "Too many open files" not in log and "EMFILE" not in log, log[-3000:]
        r = subprocess.run(
            [str(BIN / "tabled-bridge"), "--config", str(f.bridge_config), "status", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        st = json.loads(r.stdout)["tables"]
        assert sum(t["up"] for t in st.values()) == TABLES
        assert sum(t["restarts"] for t in st.values()) == 0
    finally:
        f.close()
