"""A game added as a third party adds one: ``docs/architecture.md``'s "add a game", proved.

The coin toss (``tests/third_party/coin_toss/``) is copied into a folder of its own with an
installed distribution's metadata beside it (``coin_toss-1.0.dist-info/entry_points.txt``,
one ``tabled.games`` line), as ``pip install`` would leave it, and that folder is put on the
``PYTHONPATH`` of the real daemon and the real ``tablectl``. Nothing of ours is edited or
told about it: config check validates its ``[game]`` keys, the daemon plays it and checks its
own event types, ``tablectl`` has its command, and recall, monitor, status and the console
log read it through its describer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, free_port

from daemon import games

GAME = Path(__file__).parent / "third_party" / "coin_toss"

pytestmark = pytest.mark.slow


def install(site: Path) -> None:
    """The package and its distribution metadata, as an installer lays them out."""
    shutil.copytree(GAME, site / "coin_toss", ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "coin_toss-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: coin-toss\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tabled.games]\ncoin-toss = coin_toss.table:CoinToss\n")


def config(tmp: Path, game_keys: str = "edge_voids = true") -> Path:
    run = tempfile.mkdtemp(prefix="tp-", dir="/tmp")  # unix socket paths are short
    cfg = tmp / "coin.toml"
    cfg.write_text(
        f"""[table]
id = "coin-1"
game = "coin-toss"
state_dir = "{tmp / "state"}"
runtime_dir = "{run}"

[game]
{game_keys}

[bus]
publish = "tcp://127.0.0.1:{free_port()}"
replay = "tcp://127.0.0.1:{free_port()}"
heartbeat_interval = 0.2

[control]
role = "supervisor"

[log]
format = "json"
"""
    )
    return cfg


@pytest.fixture
def site(tmp_path: Path) -> dict[str, str]:
    install(tmp_path / "site")
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path.rstrip(os.pathsep)}


def tablectl(env: dict[str, str], cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "--config", str(cfg), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_game_is_not_ours():
    """Nothing in this repository's metadata names it: only the test's folder does."""
    assert "coin-toss" not in games.names()
    ours = [
        ROOT / "pyproject.toml",
        *(ROOT / "daemon").rglob("*.py"),
        *(ROOT / "drivers").rglob("*.py"),
    ]
    assert not [p for p in ours if re.search(r"coin[-_]toss", p.read_text())]


def test_config_check_validates_its_house_rules(tmp_path: Path, site: dict[str, str]):
    ok = tablectl(site, config(tmp_path), "config", "check")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["game"] == {"edge_voids": True}
    bad = tablectl(site, config(tmp_path, "edge = 1"), "config", "check")
    assert bad.returncode == 2 and "game.edge" in bad.stderr, bad.stderr


def test_the_daemon_plays_it_and_tablectl_reads_it(tmp_path: Path, site: dict[str, str]):
    cfg = config(tmp_path)
    d = Daemon(cfg, {"PYTHONPATH": site["PYTHONPATH"]})
    try:
        d.start()
        for side in ("heads", "edge", "tails"):
            r = tablectl(site, cfg, "--actor", "pit", "toss", side)
            assert r.returncode == 0 and "ok: coin.landed" in r.stdout, r.stderr
        refused = tablectl(site, cfg, "--actor", "pit", "toss", "sideways")
        assert refused.returncode == 1 and "heads or tails" in refused.stderr, refused.stderr

        recall = tablectl(site, cfg, "recall", "--last", "3")
        assert recall.returncode == 0, recall.stderr
        heads = [x.split("  ", 2)[-1] for x in recall.stdout.splitlines() if x.startswith("seq ")]
        assert heads == ["toss 1: HEADS", "toss 2: VOID (edge) by pit", "toss 2: TAILS"], heads
        one = tablectl(site, cfg, "recall", "--hand", "2")
        assert one.returncode == 0 and one.stdout.splitlines()[0].endswith("toss 2: TAILS")

        status = tablectl(site, cfg, "status")
        assert "game:    waiting for toss 3  (toss 3)" in status.stdout, status.stdout

        monitor = tablectl(site, cfg, "monitor", "--history", "3000", "--seconds", "1")
        assert monitor.returncode == 0, monitor.stderr
        assert re.search(r"coin\.result +toss 1: HEADS$", monitor.stdout, re.M), monitor.stdout
        assert re.search(r"coin\.void +by=pit  reason=edge  toss=2$", monitor.stdout, re.M)
    finally:
        assert d.stop() == 0
        d.close()
    log = [json.loads(x) for x in d.log.read_text().splitlines() if x.startswith("{")]
    assert {"toss 1: HEADS", "toss 2: TAILS"} <= {x.get("event") for x in log}
    verify = tablectl(site, cfg, "verify")
    assert verify.returncode == 0 and "chain intact" in verify.stdout, verify.stdout


def test_an_event_of_its_own_is_checked_like_ours(tmp_path: Path, site: dict[str, str]):
    """The game's Structs are the daemon's check: a field it lacks is refused, loudly."""
    probe = (
        "from daemon import games; from daemon.journal.events import draft\n"
        "games.find('coin-toss')\n"
        "draft('coin.result', {'toss': 1, 'side': 'heads'})\n"
        "try:\n"
        "    draft('coin.result', {'toss': 1, 'side': 'heads', 'colour': 'gold'})\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=site, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "colour" in r.stdout, r.stdout


def test_a_game_may_not_redefine_one_of_our_event_types():
    from tabled_client.events import DATA, Data, register

    class Forged(Data):
        winner: str

    before = dict(DATA)
    with pytest.raises(ValueError, match="tabled's own"):
        register({"card.dealt": Forged})  # the shoe procedure's: shared, not a game's
    with pytest.raises(TypeError, match=r"not a tabled_client\.events\.Data"):
        register({"coin.flip": dict})  # type: ignore[dict-item]
    assert before == DATA  # nothing registered by a refusal
