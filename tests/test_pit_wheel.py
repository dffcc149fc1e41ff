"""The pit's wheel statistics against an independent computation, on a capture of 1,000 spins
(3,000 in ``make campaign``).

The capture is made here from the SlingShot 2 simulator (drivers/sim/wheel.py, stepped on
its own clock: ~1 s) and run through the real table offline (``tablectl replay``: ~3 s);
the pit folds the events it gives. The counts and the chi-square (to 4 decimals) must
equal what this test computes from the simulator's own log of winning numbers, exactly
(fractions), for the whole capture and for a window; the per-direction parts from the
spin results' rotor direction; the sectors must add up.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest
from daemon_harness import ROOT

from drivers.sim.wheel import WheelSimulator
from views.pit.floor import FloorState
from views.pit.pages import wheel_page
from views.pit.wheel import wheel_stats

#: spins in the capture: make test's, and make campaign's (the same checks on a longer run)
SPINS, CAMPAIGN_SPINS = 1000, 3000


@pytest.fixture(
    scope="module", params=[SPINS, pytest.param(CAMPAIGN_SPINS, marks=pytest.mark.campaign)]
)
def capture(request, tmp_path_factory) -> tuple[list[int], list[dict]]:
    spins = request.param
    sim = WheelSimulator(seed=5)
    t0 = datetime(2026, 11, 1, 20, tzinfo=UTC)
    lines = [
        f"# what: {spins} spins of the simulated SlingShot 2",
        "# driver: cammegh-ss2",
        "# game: roulette",
        "# name: wheel",
    ]
    while len(sim.history) < spins:
        sim.step()
        for raw in sim.sent:
            ts = (t0 + timedelta(seconds=sim.now)).isoformat(timespec="milliseconds")
            lines.append(f"{ts.replace('+00:00', 'Z')} rx {raw.decode().strip()}\\r\\n")
        sim.sent.clear()
    path = tmp_path_factory.mktemp("wheel") / "spins.log"
    path.write_text("\n".join(lines) + "\n")
    r = subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "--json", "replay", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    events = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return sim.history, events


def chi2(numbers: list[int], pockets: int = 37) -> Fraction:
    c = Counter(numbers)
    e = Fraction(len(numbers), pockets)
    return sum(((c[p] - e) ** 2 / e for p in range(pockets)), Fraction(0))


@pytest.mark.parametrize("part", [1, 3], ids=["whole", "last-third"])
def test_wheel_statistics_match_an_independent_count(capture, part):
    history, events = capture
    window = len(history) // part
    floor = FloorState()
    for e in events:
        floor.apply("rou-01", "j1", e)
    spins = floor.spins["rou-01"]
    assert [s["number"] for s in spins] == history  # every spin the wheel logged, settled once
    st = wheel_stats(spins, window)
    last = history[-window:]
    c = Counter(last)
    assert st["all"]["spins"] == window
    assert st["all"]["counts"] == [c[p] for p in range(37)]
    assert st["all"]["chi_square"] == round(float(chi2(last)), 4)
    assert f"{st['all']['chi_square']:.4f}" == f"{float(chi2(last)):.4f}"
    assert st["all"]["uniform_at_5"] == (chi2(last) <= Fraction("50.9985"))
    dirs = [e["data"]["rotor_direction"] for e in events if e["type"] == "spin.result"][-window:]
    assert set(st["by_direction"]) == set(dirs) and len(set(dirs)) == 2  # the wheel turns both ways
    for d, part in st["by_direction"].items():
        mine = [n for n, x in zip(last, dirs, strict=True) if x == d]
        assert part["spins"] == len(mine)
        assert part["chi_square"] == round(float(chi2(mine)), 4)
    sectors = st["sectors"]
    assert sum(v["count"] for k, v in sectors.items() if k != "jeu zéro") == window
    assert sectors["jeu zéro"]["count"] <= sectors["voisins du zéro"]["count"]
    assert f'<b class="chi2">{st["all"]["chi_square"]:.4f}</b>' in wheel_page("rou-01", st)
