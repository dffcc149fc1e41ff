"""A shoe game that waits for a player's decision, added as a third party (issue 29, acceptance 1).

Casino War (``tests/third_party/casino_war/``) is written on the shoe procedure's public
hooks only and installed as ``tests/test_third_party_game.py`` installs the coin toss: its
package and one ``tabled.games`` entry-point line in its own ``.dist-info``, on the
``PYTHONPATH`` of the real daemon and ``tablectl``. Its shoe is a real pty the test deals
by hand (one ``rank-suit`` line a card), so every tie is chosen. Through one daemon: a tie
asks the player, a card out of turn is set aside, a late timeout and a decision nobody
awaits are refused, the war is burned and dealt and settled, and a new shoe keeps the game's
own tally. Through a second start on the same journal, with a short decision clock: the
clock's timeout surrenders a tie, and the tally carried across the shoe and the restart.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tty
from pathlib import Path
from typing import Any

import msgspec
import pytest
from daemon_harness import ROOT, Daemon, Subscriber, endpoints, free_port
from test_procedure_hooks import folder_uses, private_names

from daemon.ctl.control_client import ControlClient, ControlError

GAME = Path(__file__).parent / "third_party" / "casino_war"

pytestmark = pytest.mark.slow


def install(site: Path) -> None:
    """The package and its distribution metadata, as an installer lays them out."""
    shutil.copytree(GAME, site / "casino_war", ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "casino_war-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: casino-war\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[tabled.games]\ncasino-war = casino_war.table:CasinoWar\n"
    )


def config(tmp: Path, shoe: Path, run: str, ports: tuple[int, int], seconds: float) -> Path:
    cfg = tmp / "war.toml"
    cfg.write_text(
        f"""[table]
id = "war-1"
game = "casino-war"
state_dir = "{tmp / "state"}"
runtime_dir = "{run}"

[game]
decks = 6
start_burn = "none"
decision_seconds = {seconds}
war_burn = 3

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "{shoe}"
[devices.options]
encoding = "rank-suit"
repeat_window = 0

[bus]
publish = "tcp://127.0.0.1:{ports[0]}"
replay = "tcp://127.0.0.1:{ports[1]}"
heartbeat_interval = 0.2

[control]
role = "supervisor"
endpoint = "ipc://{run}/control.sock"

[log]
format = "json"
"""
    )
    return cfg


class Table:
    """One daemon playing the war game, its shoe a pty the test deals from."""

    def __init__(self, cfg: Path, run: str, master: int, env: dict[str, str]) -> None:
        self.master = master
        self.endpoint = f"ipc://{run}/control.sock"  # the config's (not loaded here: the
        # game is installed for the daemon, not in this process)
        self.daemon = Daemon(cfg, env)
        self.daemon.start()
        self.sub = Subscriber(endpoints(cfg)[0])
        self.sub.sock.poll(5000)  # the slow joiner: live once a heartbeat arrives
        self.seen: list[dict[str, Any]] = []

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        with ControlClient(self.endpoint, timeout=10.0, actor="war-test") as c:
            return c.call(cmd, **args)

    def refused(self, cmd: str, **args: Any) -> str:
        with pytest.raises(ControlError) as e:
            self.call(cmd, **args)
        return str(e.value)

    def until(self, pred: Any, timeout: float = 20.0) -> dict[str, Any]:
        while self.sub.sock.poll(int(timeout * 1000)):
            _topic, body = self.sub.sock.recv_multipart()
            ev = msgspec.json.decode(body)
            if "seq" not in ev:
                continue
            self.seen.append(ev)
            if pred(ev):
                return ev
        raise AssertionError(f"not seen in time; last: {[e['type'] for e in self.seen[-8:]]}")

    def deal(self, card: str, box: str) -> dict[str, Any]:
        """One card out of the shoe, and the ``card.dealt`` that places it."""
        os.write(self.master, card.encode() + b"\r\n")
        ev = self.until(lambda e: e["type"] == "card.dealt" and e["data"]["card"] == card)
        assert ev["data"]["box"] == box, ev
        return ev

    def round(self) -> None:
        self.call("betting.open")
        self.call("betting.close")
        exp = self.until(lambda e: e["type"] == "table.expects")
        assert exp["data"]["to"] == "player", exp

    def state(self) -> dict[str, Any]:
        return self.call("status")["state"]

    def close(self) -> int:
        self.sub.close()
        rc = self.daemon.stop()
        self.daemon.close()
        return rc


def expects(e: dict[str, Any], kind: str) -> bool:
    return e["type"] == "table.expects" and e["data"]["expects"] == kind


@pytest.fixture
def site(tmp_path: Path) -> dict[str, str]:
    install(tmp_path / "site")
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path.rstrip(os.pathsep)}


def test_the_war_game_uses_only_public_hooks():
    """Its folder imports, overrides and reaches no private name of a procedure, and nothing
    of ours names it."""
    assert folder_uses(GAME, private_names()) == []
    ours = [ROOT / "pyproject.toml", *(ROOT / "daemon").rglob("*.py")]
    assert not [p for p in ours if re.search(r"casino[-_ ]war", p.read_text(), re.I)]


def test_war_is_played_decided_timed_out_and_carried_across_shoes(tmp_path: Path, site):
    master, slave = os.openpty()
    tty.setraw(slave)
    link = tmp_path / "shoe-by-id"
    link.symlink_to(os.ttyname(slave))
    os.close(slave)
    run = tempfile.mkdtemp(prefix="tw-", dir="/tmp")  # unix socket paths are short
    ports = (free_port(), free_port())
    cfg = config(tmp_path, link, run, ports, seconds=600)
    env = {**os.environ, **site}
    check = subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "--config", str(cfg), "config", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    t = Table(cfg, run, master, site)
    try:
        t.call("shoe.new")
        t.until(lambda e: e["type"] == "shoe.started")

        # hand 1: a tie; the player is asked (a numbered wait the clock times)
        t.round()
        t.deal("5C", "player")
        t.deal("5D", "dealer")
        wait = t.until(lambda e: expects(e, "decision"))["data"]
        assert wait["allowed"] == ["war", "surrender"] and wait["turn"] == 1, wait
        assert t.state()["expects"]["text"] == "the player's choice: war or surrender"

        # a card while the player decides goes to no one: set aside with its alarm
        aside = t.deal("9S", "burn")["data"]
        assert aside["box"] == "burn" and aside["misdeal"] is True
        alarm = next(e for e in t.seen if e["type"] == "alarm.raised")["data"]
        assert alarm["kind"] == "war-card-not-due" and "the player's choice" in alarm["message"]

        # refused, each saying why: a timeout of another wait
        assert "no decision of turn 7 is waiting" in t.refused("decision.timeout", turn="7")

        # war: three burns, one more card each; the player wins
        t.call("war.go")
        assert t.until(lambda e: e["type"] == "war.decision")["data"]["decision"] == "war"
        for card in ("2C", "3C", "4C"):
            assert t.deal(card, "burn")["data"]["rule"].startswith("casino war rule 4")
        t.deal("KS", "player")
        t.deal("QH", "dealer")
        result = t.until(lambda e: e["type"] == "war.result")["data"]
        assert (result["winner"], result["war"], result["player"], result["dealer"]) == (
            "player",
            True,
            ["5C", "KS"],
            ["5D", "QH"],
        )
        # a decision nobody awaits
        assert "no decision is awaited" in t.refused("war.go")

        # hand 2: no tie, settled at the second card
        t.round()
        t.deal("AC", "player")
        t.deal("KD", "dealer")
        assert t.until(lambda e: e["type"] == "war.result")["data"]["winner"] == "player"

        # a new shoe: the shoe's state starts afresh, the game's own tally is carried
        t.call("shoe.new")
        t.until(lambda e: e["type"] == "shoe.started" and e["data"]["shoe"] == 2)
        st = t.state()
        assert (st["shoe"], st["hand"], st["wars"], st["surrenders"]) == (2, 0, 1, 0), st
    finally:
        assert t.close() == 0

    # the same journal, a decision clock of a fraction of a second: the clock decides
    cfg = config(tmp_path, link, run, ports, seconds=0.3)
    t = Table(cfg, run, master, site)
    try:
        assert t.state()["wars"] == 1  # rebuilt from the journal
        t.round()
        t.deal("7C", "player")
        t.deal("7D", "dealer")
        chose = t.until(lambda e: e["type"] == "war.decision")["data"]
        assert (chose["decision"], chose["timeout"], chose["by"]) == (
            "surrender",
            True,
            "decision-clock",
        )
        result = t.until(lambda e: e["type"] == "war.result")["data"]
        assert (result["winner"], result["surrendered"], result["net"]) == ("dealer", True, -0.5)
        st = t.state()
        assert (st["shoe"], st["wars"], st["surrenders"]) == (2, 1, 1), st
    finally:
        assert t.close() == 0
        os.close(master)

    recall = subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "--config", str(cfg), "recall", "--last", "3"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert recall.returncode == 0, recall.stderr
    assert "hand 1: PLAYER at war  player 5C KS  dealer 5D QH" in recall.stdout, recall.stdout
    assert "hand 1: DEALER (surrendered)" in recall.stdout, recall.stdout
    verify = subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "--config", str(cfg), "verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verify.returncode == 0 and "chain intact" in verify.stdout, verify.stdout
