"""Every atheris fuzz target runs a few thousand inputs in CI, and the runner reports them.

The targets are ``fuzz/fuzz_<protocol>.py`` (invariants in each file's docstring);
long runs are ``python fuzz/run.py --seconds N``. Here each target gets a fixed
number of inputs from a fixed seed, so CI runs the same inputs every time and a
broken invariant shows up as a crash with libFuzzer's report.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "fuzz"
RUNS = 2500
#: every protocol has its target; a new protocol without one fails here.
EXPECTED = {"cammegh_m360", "cammegh_ss2", "dice_ref", "hid_scanner", "shoe_line", "shuffler_ref"}

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None,
    reason="atheris is not installed (x86_64 Linux only: pip install -e '.[test]')",
)


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(FUZZ / "run.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_every_protocol_has_a_target():
    listed = run("--list")
    assert listed.returncode == 0, listed.stderr
    assert set(listed.stdout.split()) == EXPECTED


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_target_runs_a_few_thousand_inputs_without_breaking_an_invariant(target, tmp_path):
    p = run(target, "--runs", str(RUNS), "--seed", "1", "--json", "--artifacts", str(tmp_path))
    report = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert len(report) == 1, p.stdout + p.stderr
    r = report[0]
    assert r["ok"], f"{target} crashed:\n{r['tail']}\ninputs: {r['crashes']}"
    assert p.returncode == 0
    assert r["target"] == target and r["executions"] == RUNS


def test_runner_reports_a_broken_invariant_as_a_crash(tmp_path):
    """A target that fails is a crash with its input saved, and the runner exits 1."""
    bad = tmp_path / "fuzz_zz_selftest_broken.py"
    bad.write_text(
        "import sys\nimport atheris\n\n\n"
        "def TestOneInput(data):\n"
        "    if len(data) > 3:\n"
        "        raise AssertionError('invariant broken')\n\n\n"
        "atheris.Setup(sys.argv, TestOneInput)\natheris.Fuzz()\n"
    )
    crashes = tmp_path / "crashes"
    p = run(str(bad), "--runs", "100000", "--seed", "1", "--artifacts", str(crashes))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "CRASH" in p.stdout and "invariant broken" in p.stderr
    saved = list(crashes.glob("zz_selftest_broken-crash-*"))
    assert len(saved) == 1 and len(saved[0].read_bytes()) > 3


def test_runner_time_mode_reports_executions():
    p = run("shoe_line", "hid", "--seconds", "1", "--json", "--jobs", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    report = {r["target"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert set(report) == {"shoe_line", "hid_scanner"}
    assert all(r["ok"] and r["executions"] > 0 for r in report.values())
