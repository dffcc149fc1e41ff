"""The backend example of docs/floor.md, run as a backend would: a fresh venv with only
the tabled-client distribution installed, against a live floor (nats-server, the bridge,
a real tabled daemon and fake tables)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.floor.harness import Floor
from bench.floor.natsd import available

ROOT = Path(__file__).resolve().parents[1]
NO_NATS = pytest.mark.skipif(available() is not None, reason=str(available()))


def example() -> str:
    text = (ROOT / "docs" / "floor.md").read_text()
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", text, re.S) if "FloorFollower" in c]
    return code


def test_the_example_is_under_40_lines_and_uses_only_the_client():
    code = example()
    assert len(code.strip().splitlines()) < 40
    imports = re.findall(r"^(?:from|import) (\w+)", code, re.M)
    assert set(imports) <= {"asyncio", "json", "os", "sys", "tabled_client"}, imports


def test_the_client_has_a_readme_naming_what_exists():
    """client/README.md (issue 33: there was none): each module and name it gives exists."""
    import importlib

    text = (ROOT / "client" / "README.md").read_text()
    modules = set(re.findall(r"`(tabled_client\.\w+)`", text))
    assert len(modules) >= 5, modules
    for m in modules:
        importlib.import_module(m)
    import tabled_client.floor
    import tabled_client.table

    for name in ("TableFollower", "FloorFollower", "ChainBroken", "Chain", "decode"):
        assert name in text
        assert any(
            hasattr(mod, name) for mod in (tabled_client.table, tabled_client.floor, tabled_client)
        ), name


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


@NO_NATS
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
            "import tabled_client.schema as s; assert s.shipped() == s.generate()\n"
            # every game of ours comes with it, collected by its build (test_client_games.py)
            "from tabled_client import events as e\n"
            "assert {'spin.result', 'round.result', 'box.decision'} <= set(e.DATA), e.DATA\n"
            "assert len(e.VARIANTS['hand.result']) == 3",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr


def _run_example(
    py: Path, script: Path, f: Floor, cwd: Path
) -> tuple[dict[str, list[int]], list[int], str]:
    """Run the example until it has shown enough of the floor and the table, then Ctrl-C it."""
    t = f.tables[0]
    assert f.nats is not None
    p = subprocess.Popen(
        [str(py), str(script), f.nats.url, t.publish, t.replay, t.id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
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
        p.send_signal(signal.SIGINT)  # as a person stops it: the follower gives back its fetch
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate(timeout=30)
    return floor_seen, table_seqs, err


@NO_NATS
def test_the_backend_example_follows_the_floor_and_one_table_run_after_run(tmp_path, client_venv):
    """Twice with the same durable (issue 33: the second run raised ChainBroken): the second
    goes on where the first acked, each table's events in order and each once."""
    f = Floor(tmp_path / "floor", real=1, fake=3, pace=0.05, interval=0.1)
    try:
        f.start()
        f.start_bridge()
        script = tmp_path / "backend.py"
        script.write_text(example())
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for run in (1, 2):
            floor_seen, table_seqs, err = _run_example(client_venv, script, f, tmp_path)
            assert "ChainBroken" not in err, err[-3000:]
            assert len(floor_seen) == 4 and len(table_seqs) >= 30, (run, err[-3000:])
            assert table_seqs == list(range(1, len(table_seqs) + 1))  # from seq 1, no gap
            for table, seqs in floor_seen.items():
                assert seqs == sorted(set(seqs))  # in order, each once (only card.dealt shown)
                if run == 2:  # on from where the first run acked (a batch may come again)
                    assert first[table] < seqs[0] and seqs[0] > last[table] - 64, seqs[:3]
                first.setdefault(table, seqs[0])
                last[table] = seqs[-1]
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
