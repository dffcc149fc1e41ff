"""The contract read in another language (issue 33): Node's ajv in strict mode compiles the
shipped schemas (Draft 2020-12, no OpenAPI ``discriminator``) and validates every captured
event with them; a backend written in Node from docs/events.md alone, with zeromq and ajv,
follows a live demo table of two games, verifies its chain by the bytes and validates
every event and heartbeat; Node's own Ed25519 checks a signed checkpoint.

ajv and zeromq come from the npm registry (``tests/node/package.json``) into a scratch
directory; without node, npm or the registry the tests skip, saying which.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "tests" / "node"
SCHEMA = ROOT / "docs" / "events.schema.json"


@pytest.fixture(scope="module")
def ajv(tmp_path_factory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed here")
    d = tmp_path_factory.mktemp("node")
    for f in NODE.iterdir():
        shutil.copy(f, d / f.name)
    r = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent"],
        cwd=d,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode != 0:
        pytest.skip(f"npm could not install ajv: {r.stderr.strip()[-300:]}")
    return d


def test_a_strict_validator_compiles_the_schema_and_every_captured_event_passes(ajv):
    captures = sorted(str(p) for p in (ROOT / "tests" / "captures").rglob("*.expected.jsonl"))
    r = subprocess.run(
        ["node", "validate_events.js", str(SCHEMA), *captures],
        cwd=ajv,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().endswith(" events, 0 failed"), r.stdout
    assert int(r.stdout.split()[-4]) > 7000  # every capture's events


def test_the_strict_validator_refuses_an_unknown_keyword(ajv, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(SCHEMA.read_text().replace('"$defs"', '"discriminator": {}, "$defs"', 1))
    r = subprocess.run(
        ["node", "validate_events.js", str(bad)], cwd=ajv, capture_output=True, text=True
    )
    assert r.returncode == 2 and 'unknown keyword: "discriminator"' in r.stdout, r.stdout


def test_the_bus_frames_schema_compiles_strictly_and_the_docs_frames_pass(ajv, tmp_path):
    """The heartbeat, journal state and replay answers of docs/events.md, in ajv strict."""
    import json
    import re

    text = (ROOT / "docs" / "events.md").read_text()
    shown = re.findall(r"^(?:← )?(\{\"(?:data|end|error)\".*\})$", text, re.M)
    frames = [json.loads(x) for x in shown if "…" not in x and '"seq":' not in x]  # no events
    assert {f.get("type") for f in frames} >= {"heartbeat", "journal.state"}
    assert any("end" in f for f in frames) and any("error" in f for f in frames)
    lines = tmp_path / "frames.jsonl"
    lines.write_text("".join(json.dumps(f) + "\n" for f in frames))
    r = subprocess.run(
        ["node", "validate_events.js", str(ROOT / "docs" / "bus.schema.json"), str(lines)],
        cwd=ajv,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout.strip().endswith(" 0 failed"), r.stdout + r.stderr


def test_a_signed_checkpoint_is_checked_with_nodes_own_ed25519(tmp_path):
    """The key file is PEM SubjectPublicKeyInfo and the message is docs/events.md's: Node's
    crypto verifies a checkpoint the daemon's signer made, and refuses an altered one."""
    import json

    if shutil.which("node") is None:
        pytest.skip("node is not installed here")
    from daemon.ctl.keys import create_checkpoint
    from daemon.security.checkpoints import Checkpointer

    create_checkpoint(tmp_path, "table")
    secret, public = tmp_path / "table.ed25519", tmp_path / "table.ed25519.pub"
    cp = Checkpointer.load(secret)("bac-07", "745e4b3b53034c7999e555234d1c91da", 42, "ab" * 32)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(cp))
    bad.write_text(json.dumps({**cp, "seq": 43}))

    def verify(f: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["node", str(NODE / "verify_checkpoint.js"), str(public), str(f)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert verify(good).stdout.strip() == "ok", verify(good).stderr
    assert verify(bad).returncode == 1


@pytest.mark.parametrize("game", ["baccarat", "blackjack"])
def test_a_node_backend_follows_a_live_table_verifies_and_validates_every_event(
    ajv, tmp_path, game
):
    from daemon_harness import Daemon, endpoints, fast_copy, write_config

    if game == "baccarat":
        cfg, table = write_config(tmp_path), "it"
    else:  # the hole card: a commitment in the event, the card only at the reveal
        fast = {"settle_seconds": "0.05", "decision_seconds": "0.5", "insurance_seconds": "0.3"}
        cfg = fast_copy("blackjack.toml", tmp_path, fast, "seed = 3\npace = 0.005\nerror_every = 0")
        import tomllib

        table = tomllib.loads(cfg.read_text())["table"]["id"]
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    try:
        d.start()
        r = subprocess.run(
            [
                "node",
                "follow_table.js",
                pub,
                rep,
                table,
                str(SCHEMA),
                str(ROOT / "docs" / "bus.schema.json"),
                "400",
            ],
            cwd=ajv,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert d.stop() == 0
    finally:
        d.close()
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    import json

    got = json.loads(r.stdout)
    assert got["events"] == 400 and got["last"] == 400 and got["heartbeats"] >= 1, got
    result = "hand.result"
    assert got["types"].get(result, 0) >= 2, got["types"]


def test_the_node_backend_follows_across_a_sigkill_and_a_clean_restart(ajv, tmp_path):
    """The table killed, started, stopped and started again under the Node backend: it
    goes on through each start with every event once, in order, its chain and schema
    checked, as the issue's backend did (nothing lost or doubled)."""
    import json

    from daemon_harness import Daemon, endpoints, write_config

    from daemon.bus.subscriber import Follower

    cfg = write_config(tmp_path)
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    try:
        d.start()
        p = subprocess.Popen(
            [
                "node",
                "follow_table.js",
                pub,
                rep,
                "it",
                str(SCHEMA),
                str(ROOT / "docs" / "bus.schema.json"),
                "1500",
            ],
            cwd=ajv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for kill in (True, False):  # a hand under the backend before each stop
            f = Follower(pub, rep, table="it")
            try:
                f.until(lambda e: e.type == "hand.result", 30.0)
            finally:
                f.close()
            if kill:
                d.kill()
            else:
                d.stop()
            d.start()
        out, err = p.communicate(timeout=180)
        assert d.stop() == 0
    finally:
        d.close()
    assert p.returncode == 0, out[-2000:] + err[-2000:]
    got = json.loads(out)
    assert got["events"] == 1500 and got["last"] == 1500, got
    assert got["types"]["daemon.started"] == 3 and got["types"]["daemon.stopped"] == 1, got
