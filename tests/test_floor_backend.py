"""The backend example of docs/floor.md, run as a backend would: a fresh venv with only
the tabled-client distribution installed, against a live floor (nats-server, the bridge,
a real tabled daemon and fake tables)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.floor.harness import Floor
from bench.floor.natsd import available

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def example() -> str:
    text = (ROOT / "docs" / "floor.md").read_text()
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", text, re.S) if "FloorFollower" in c]
    return code


def test_the_example_is_under_30_lines_and_uses_only_the_client():
    code = example()
    assert len(code.strip().splitlines()) < 30
    imports = re.findall(r"^(?:from|import) (\w+)", code, re.M)
    assert set(imports) <= {"asyncio", "sys", "tabled_client"}, imports


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("client-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    r = subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{ROOT / 'client'}[nats]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return py


def test_the_client_installs_alone(client_venv, tmp_path):
    r = subprocess.run(
        [str(client_venv), "-c", "import daemon"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode != 0 and "No module named 'daemon'" in r.stderr
    r = subprocess.run(
        [
            str(client_venv),
            "-c",
            "import tabled_client.schema as s; assert s.shipped() == s.generate()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr


def test_the_backend_example_follows_the_floor_and_one_table(tmp_path, client_venv):
    f = Floor(tmp_path / "floor", real=1, fake=3, pace=0.05, interval=0.1)
    try:
        f.start()
        assert f.nats is not None
        f.start_bridge()
        script = tmp_path / "backend.py"
        script.write_text(example())
        t = f.tables[0]
        p = subprocess.Popen(
            [str(client_venv), str(script), f.nats.url, t.publish, t.replay, t.id],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        floor_seen: dict[str, list[int]] = {}
        table_seqs: list[int] = []
        # a watchdog, not a wait: the example runs until it is stopped
        timer = threading.Timer(120, p.kill)
        timer.start()
        try:
            assert p.stdout is not None
            for line in p.stdout:
                kind, table, seq, type_ = line.split()
                if kind == "floor":
                    assert type_ == "card.dealt"
                    floor_seen.setdefault(table, []).append(int(seq))
                else:
                    assert table == t.id
                    table_seqs.append(int(seq))
                if (
                    len(table_seqs) >= 30
                    and len(floor_seen) == 4
                    and all(len(v) >= 5 for v in floor_seen.values())
                ):
                    break
        finally:
            timer.cancel()
            p.kill()
            _, err = p.communicate(timeout=30)
        assert len(floor_seen) == 4 and len(table_seqs) >= 30, err[-3000:]
        assert table_seqs == list(range(1, len(table_seqs) + 1))  # from seq 1, no gap
        for seqs in floor_seen.values():
            assert seqs == sorted(set(seqs))  # in order, each once (only card.dealt shown)
    finally:
        f.close()
