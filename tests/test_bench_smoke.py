"""`make bench` must not rot: every benchmark runs end to end on a few hundred events.

The benchmarks import the daemon's internals, and once broke when a function
they used moved (`log_events`) with nothing running them. This runs
``python -m bench --smoke`` as `make bench` does and checks that each
benchmark finished and wrote the figures the summary and the goals read.
It asserts nothing about the figures themselves: timings are for
docs/performance.md, never for asserts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# the keys each benchmark's summary row and goal read (bench/__main__.py summary() and goals())
EXPECTED = {
    "latency": {"shoe": {"paced", "full"}, "wheel": {"paced", "full"}},
    "throughput": {
        "protocol_table_shoe": None,
        "protocol_table_wheel": None,
        "journal_publish": None,
        "pipeline_one_tx_per_reading": None,
        "pipeline_group_commit": None,
    },
    "startup": {"empty": None, "big": None, "replay": None, "imports_s": None},
    "memory": {"rss_start_kib": None, "rss_end_kib": None, "floor_rss_kib": None},
    "cost": {
        "shoe_paced": None,
        "shoe_full": None,
        "wheel_paced": None,
        "wheel_full": None,
        # the floors the CPU goals are read against (bench/cost.py floors())
        "durable_relay_paced": {"cpu_us_per_frame", "ms", "tabled_same_run"},
        "durable_relay_full": {"cpu_us_per_frame", "ms", "tabled_same_run"},
        "shoe_paced_one_cpu": {"cpu_us_per_event", "cpu"},
        "shoe_full_one_cpu": {"cpu_us_per_event", "cpu"},
    },
}


def test_every_benchmark_runs_to_the_end(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    p = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["errors"] == {}
    assert doc["size"] == "smoke"
    results = doc["results"]
    for name, keys in EXPECTED.items():
        assert name in results, f"benchmark {name} wrote nothing"
        for key, sub in keys.items():
            assert key in results[name], f"{name} lacks {key}"
            if sub:
                assert sub <= set(results[name][key]), f"{name}.{key} lacks {sub}"
    goals = {g["goal"] for g in doc["goals"]}
    # every goal of docs/performance.md is evaluated, met or missed, never silently dropped
    for part in (
        "wire -> subscriber p99 against the durable relay",
        "CPU per committed event against the durable relay",
        "one durable transaction per reading",
        "group commit",
        "CPU per committed event",
        "replay against the bare loop",
        "READY with a",
        "RSS at the end of the soak",
    ):
        assert any(part in g for g in goals), f"goal {part!r} not evaluated"
    assert all(g["met"] in (True, False, None) for g in doc["goals"])
    assert "goals (not asserts):" in p.stdout


def _variant_run(variant: str, where: Path) -> tuple[int, Path]:
    import os
    import signal

    from bench import proc
    from bench.session import shoe_session

    pty = proc.Pty()
    cfg, ep = proc.write_config(where, shoe_session(cards=1), port=pty.path)
    d = proc.DaemonProcess(cfg, log=where / "daemon.log", variant=variant)
    try:
        d.start()
        if variant in ("heap-stats", "tracemalloc"):  # one record, as the soak asks
            os.kill(d.pid, signal.SIGUSR1)
        return d.stop(), cfg.parent
    finally:
        d.close()
        pty.close()
        proc.cleanup(where / "state", ep)


#: every variant of bench/variant.py, each run by the test below
SMOKED = (
    "none",
    "timeline",
    "cpu-profile",
    "heap-stats",
    "tracemalloc",
)


@pytest.mark.parametrize("variant", SMOKED)
def test_every_experiment_variant_starts_commits_and_stops(tmp_path: Path, variant: str) -> None:
    """bench/variant.py (run only by ``python -m bench.experiments``): each variant's patch
    still fits the daemon it patches — READY, ``daemon.started`` committed and published
    through the patched path, a clean stop, and the timeline written where one is asked for."""
    from bench.variant import VARIANTS

    assert variant in VARIANTS
    code, where = _variant_run(variant, tmp_path)
    timeline, prof = where / "timeline.json", where / "loop.prof"
    assert code == 0, (tmp_path / "daemon.log").read_text()[-3000:]
    if variant == "cpu-profile":  # the loop's profile holds the commit of daemon.started
        import pstats

        funcs = {f"{file}:{name}" for file, _, name in pstats.Stats(str(prof)).stats}
        assert any(f.endswith("pipeline.py:_commit") for f in funcs), sorted(funcs)[:20]
    else:
        assert not prof.exists()
    if "timeline" in variant:
        rec = json.loads(timeline.read_text())
        assert set(rec) == {"process", "append", "publish", "listeners"}
        assert rec["append"] and rec["publish"]  # daemon.started went through both
    else:
        assert not timeline.exists()
    if variant in ("heap-stats", "tracemalloc"):  # the record SIGUSR1 asked for, before the stop
        rec = json.loads((where / "tracemalloc" / "snap-0000.json").read_text())
        assert rec["malloc"]["uordblks"] > 0 and rec["sqlite_used"] > 0 and rec["RssAnon"] > 0
        # tracemalloc's hooks wrap pymalloc: sys._debugmallocstats has nothing to say then
        assert ("arenas_allocated_current" in rec["pymalloc"]) == (variant == "heap-stats")
        assert ("traced" in rec) == (variant == "tracemalloc")
        assert (where / "tracemalloc" / "snap-0000.pickle").exists() == (variant == "tracemalloc")


def test_the_variant_list_is_what_the_smoke_runs() -> None:
    from bench.variant import VARIANTS

    assert set(VARIANTS) == set(SMOKED)  # a new variant is run by the smoke too


def test_the_durable_relay_commits_each_read_before_it_publishes(tmp_path: Path) -> None:
    """bench/relay.py with a journal (``bench.experiments durable-floor``, not in the smoke):
    every byte published was committed first, as one row per read."""
    import sqlite3

    import zmq

    from bench import proc

    pty = proc.Pty()
    endpoint = f"tcp://127.0.0.1:{proc.free_port()}"
    db = tmp_path / "relay.sqlite"
    relay = subprocess.Popen(
        [sys.executable, "-m", "bench.relay", pty.path, endpoint, str(db)],
        cwd=proc.ROOT,
        stdout=subprocess.PIPE,
    )
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    try:
        assert relay.stdout is not None and relay.stdout.readline().strip() == b"ready"
        sub.subscribe(b"")
        sub.connect(endpoint)
        got = b""
        lines = [b"SYNC\r\n", b"C AS\r\n", b"C KH\r\n"]
        # the subscription is live once a sync line comes back; the cards follow it
        while not got:
            pty.write(lines[0])
            if sub.poll(200):
                got = sub.recv_multipart()[0]
        for line in lines[1:]:
            pty.write(line)
            assert sub.poll(10_000), "the relay did not publish"
            got += sub.recv_multipart()[0]
        with sqlite3.connect(db) as c:
            stored = b"".join(r[0] for r in c.execute("SELECT body FROM readings ORDER BY seq"))
        assert got.endswith(b"C AS\r\nC KH\r\n")
        # every published byte is in a committed row, in order (sync lines sent before the
        # subscription was live were stored and not received)
        assert stored.endswith(got)
        assert set(stored[: len(stored) - len(got)].splitlines()) <= {b"SYNC"}
    finally:
        sub.close(0)
        ctx.term()
        relay.terminate()
        relay.wait(10)
        pty.close()


def test_a_floor_catch_up_that_times_out_says_what_the_bridge_knew(tmp_path: Path, capsys) -> None:
    """bench.floor's diagnosis, run only when a catch-up times out: it must not itself fail
    when the bridge does not answer, and it shows the bridge's last log lines."""
    import types

    from bench.floor.__main__ import _why_not_caught_up
    from bench.floor.natsd import free_port

    (tmp_path / "bridge.log").write_text("started\nlg-001: replay failed: no answer\n")
    floor: Any = types.SimpleNamespace(metrics_port=free_port(), folder=tmp_path)
    _why_not_caught_up(floor, "lg-001", 99)
    out = capsys.readouterr().out
    assert "lg-001 to seq 99 timed out" in out and "no status" in out
    assert "replay failed: no answer" in out


def test_the_profile_summary_names_frames_that_exist() -> None:
    """bench/profile.py tells a waiting thread from a busy one by the leaf frame's name and
    file; when the journal's writer moved to daemon/pipeline/writer.py its wait still named the old
    place, so every idle sample of that thread was counted as work. Each of our frames it
    names must be a function in that file."""
    import re

    from bench.profile import IDLE, LAYERS

    for leaf in IDLE:
        m = re.fullmatch(r"(?:\w+\.)?(\w+) \((daemon/[\w/]+\.py)", leaf)
        if m is None:  # the standard library's waits
            continue
        func, path = m.groups()
        assert re.search(rf"def {func}\b", (ROOT / path).read_text()), leaf
    for prefix, _ in LAYERS:  # ours: a file or folder of the tree, or a function in a file
        func, _, where = prefix.rpartition(" (")
        if not where.startswith(("daemon/", "drivers/")):
            continue
        assert (ROOT / where).exists(), prefix
        if func:
            assert re.search(rf"def {func}\b", (ROOT / where).read_text()), prefix


def test_on_cpu_time_is_read_per_thread_from_the_scheduler() -> None:
    """bench/proc.py reads each live thread's runtime (schedstat, ns) for the CPU per event:
    a thread's work shows in the process's total while the thread lives."""
    import os
    import threading

    from bench import proc

    pid = os.getpid()
    if proc.task_runtime(proc.Path(f"/proc/{pid}/task/{pid}")) is None:
        pytest.skip("this kernel keeps no schedstat: the bench falls back to ticks")
    burnt, leave = threading.Event(), threading.Event()

    def burn() -> None:
        me = proc.Path(f"/proc/{pid}/task/{threading.get_native_id()}")
        t0 = proc.task_runtime(me)
        assert t0 is not None
        while (proc.task_runtime(me) or 0.0) - t0 < 0.05:
            pass
        burnt.set()
        leave.wait()

    before = proc.oncpu_seconds(pid)
    t = threading.Thread(target=burn)
    t.start()
    try:
        assert burnt.wait(60)
        after = proc.oncpu_seconds(pid)  # the thread still lives: its runtime is counted
    finally:
        leave.set()
        t.join()
    assert after - before >= 0.05
