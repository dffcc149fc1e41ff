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


def test_the_example_is_under_40_lines_and_uses_only_the_client():
    code = example()
    assert len(code.strip().splitlines()) < 40
    imports = re.findall(r"^(?:from|import) (\w+)", code, re.M)
    assert set(imports) <= {"asyncio", "json", "os", "sys", "tabled_client"}, imports


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


def _run_until(py: Path, script: Path, args: list[str], cwd: Path, enough) -> tuple[dict, str]:
    """Run the example until ``enough(floor_seen)``, then kill it (SIGKILL: a crash); its
    floor lines per table, and its stderr."""
    p = subprocess.Popen(
        [str(py), str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    seen: dict[str, list[int]] = {}
    timer = threading.Timer(120, p.kill)  # a watchdog, not a wait
    timer.start()
    try:
        assert p.stdout is not None
        for line in p.stdout:
            kind, table, seq, _type = line.split()
            if kind == "floor":
                seen.setdefault(table, []).append(int(seq))
                if enough(seen):
                    break
    finally:
        timer.cancel()
        p.kill()
        _, err = p.communicate(timeout=30)
    return seen, err


def test_the_backend_example_runs_twice_in_a_row(tmp_path, client_venv):
    """A backend killed and started again goes on where it stood: its chain check resumes
    from the heads it kept (from genesis it raised ChainBroken at once), and what the killed
    run was given but never acked (redelivered by the durable only after its ack wait,
    behind newer events) is read from the stream in order, not taken for a gap."""
    f = Floor(tmp_path / "floor", real=1, fake=3, pace=0.05, interval=0.1)
    try:
        f.start()
        assert f.nats is not None
        f.start_bridge()
        script = tmp_path / "backend.py"
        script.write_text(example())
        t = f.tables[0]
        args = [f.nats.url, t.publish, t.replay, t.id]
        fakes = set(f.fake_endpoints)

        def enough(seen: dict[str, list[int]]) -> bool:
            return fakes <= set(seen) and all(len(seen[k]) >= 5 for k in fakes)

        first, err1 = _run_until(client_venv, script, args, tmp_path, enough)
        assert enough(first), err1[-3000:]
        second, err2 = _run_until(client_venv, script, args, tmp_path, enough)
        assert enough(second) and "ChainBroken" not in err2, err2[-3000:]
        for k in fakes:  # the fake tables deal cards only: every seq, across both runs
            a, b = first[k], second[k]
            assert a == list(range(1, len(a) + 1)), a
            assert b[0] in (a[-1], a[-1] + 1), (a, b)  # the last one again, if not yet kept
            assert b == list(range(b[0], b[0] + len(b))), b
    finally:
        f.close()
