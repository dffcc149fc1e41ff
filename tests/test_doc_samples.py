"""Every Python sample in README.md and docs/ runs (or, for an interface sketch, parses).

Each sample is found by its text and run here against the real thing (a capture's events,
a live daemon); the floor's backend sample is run by ``tests/test_floor_backend.py`` in a
fresh venv. A new sample fails ``test_every_sample_is_run`` until it is given a way to run.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, endpoints, write_config

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def samples() -> list[tuple[str, str]]:
    return [(p.relative_to(ROOT).as_posix(), c) for p in DOCS for c in BLOCK.findall(p.read_text())]


#: how each sample is run: (file, a line it holds) → the test that runs it
RUN = {
    ("docs/events.md", "def verify(raw: bytes, prev_hash: str) -> bool:"): "verify",
    ("docs/events.md", "from daemon.subscriber import Follower"): "follower",
    ("README.md", "from daemon.subscriber import Follower"): "follower",
    ("docs/floor.md", "from tabled_client.floor import FloorFollower"): "test_floor_backend.py",
    ("docs/architecture.md", "class MyGame:"): "sketch",
}


def how(path: str, code: str) -> str | None:
    return next((v for (p, line), v in RUN.items() if p == path and line in code), None)


def test_every_sample_is_run():
    found = samples()
    assert len(found) >= 5
    for path, code in found:
        assert how(path, code) is not None, f"a Python sample in {path} is not run:\n{code[:200]}"


def test_the_interface_sketch_parses():
    for path, code in samples():
        if how(path, code) == "sketch":
            ast.parse(code)


def test_the_hash_check_verifies_every_captured_event():
    [code] = [c for p, c in samples() if how(p, c) == "verify"]
    ns: dict = {}
    exec(compile(code, "docs/events.md", "exec"), ns)
    checked = 0
    for exp in sorted((ROOT / "tests" / "captures").rglob("*.expected.jsonl")):
        prev = "0" * 64
        for raw in exp.read_bytes().splitlines():
            assert ns["verify"](raw, prev), exp.name
            prev = json.loads(raw)["hash"]
            checked += 1
        # and it can fail: a changed byte is caught
        assert not ns["verify"](raw.replace(b'"v":1}', b'"v":2}'), prev_of(exp))
    assert checked > 1000


def prev_of(exp: Path) -> str:
    lines = exp.read_bytes().splitlines()
    return "0" * 64 if len(lines) < 2 else json.loads(lines[-2])["hash"]


class Enough(Exception):
    pass


@pytest.mark.parametrize("path", ["README.md", "docs/events.md"])
def test_the_subscriber_sample_follows_a_live_table(tmp_path, path):
    """Run as printed, endpoints and table swapped for a test daemon's; it prints events in
    seq order from 1 (stopped after 20: on a live table it would follow for good)."""
    [code] = [c for p, c in samples() if p == path and how(p, c) == "follower"]
    cfg = write_config(tmp_path, sim="seed = 5\npace = 0.01\n")
    pub, rep = endpoints(cfg)
    code = code.replace('"tcp://127.0.0.1:7700"', repr(pub)).replace(
        '"tcp://127.0.0.1:7701"', repr(rep)
    )
    code = code.replace('table="demo"', 'table="it"')
    seen: list[int] = []

    def shown(seq, type_, data) -> None:
        seen.append(seq)
        if len(seen) >= 20:
            raise Enough

    d = Daemon(cfg)
    try:
        d.start()
        with pytest.raises(Enough):
            exec(compile(code, path, "exec"), {"print": shown})
    finally:
        d.stop()
        d.close()
    assert seen == list(range(1, 21))
