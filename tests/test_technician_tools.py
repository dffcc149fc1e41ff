"""The technician's tools that need more than a running demo (issue 33): ``status``'s recent
warnings after an unclean restart, and shell completion of table and device names in a
real bash, from the script ``tablectl completion bash`` prints."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from daemon_harness import ROOT, Daemon, tablectl, write_config


def test_status_shows_the_recent_warnings(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        d.kill()  # a crash: the next start is unclean, a warning
        d.start()
        r = tablectl(cfg, "status")
        assert "recent warnings:" in r.stdout, r.stdout
        lines = r.stdout.split("recent warnings:", 1)[1].splitlines()
        assert any("daemon.started" in x and "clean=False" in x for x in lines), r.stdout
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert [w["type"] for w in st["recent_warnings"]][-1:] == ["daemon.started"]
        assert d.stop() == 0
    finally:
        d.close()


def test_a_journal_not_readable_here_is_said_not_fatal():
    from daemon.ctl.status import recent_warnings

    said = recent_warnings("/nonexistent/journal.sqlite", 10)
    assert isinstance(said, str) and "journalctl -p warning" in said


@pytest.fixture
def bash_completion(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tablectl").write_text(
        f'#!/bin/sh\ncd {ROOT} && exec {sys.executable} -m daemon.ctl.cli "$@"\n'
    )
    (bin_dir / "tablectl").chmod(0o755)
    script = tmp_path / "tablectl.bash"
    script.write_text(
        subprocess.run(
            [sys.executable, "-m", "daemon.ctl.cli", "completion", "bash"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    etc = tmp_path / "etc"
    etc.mkdir()
    for name in ("bac-07", "rou-02"):
        (etc / f"{name}.toml").write_text((ROOT / "config" / "roulette.toml").read_text())

    def complete(*words: str, env: dict[str, str] | None = None) -> list[str]:
        line = " ".join(f"'{w}'" for w in words)
        code = (
            f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
            'COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}; _shtab_tablectl; '
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        r = subprocess.run(
            ["bash", "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": f"{bin_dir}:/usr/bin:/bin",
                "TABLED_ETC": str(etc),
                "TABLED_RUN_ROOT": str(tmp_path / "run"),
                **(env or {}),
            },
        )
        return sorted(x.strip() for x in r.stdout.splitlines() if x.strip())

    return complete


def test_shell_completion_of_table_and_device_names(bash_completion):
    assert bash_completion("tablectl", "-t", "") == ["bac-07", "rou-02"]
    assert bash_completion("tablectl", "--table", "r") == ["rou-02"]
    roulette = {"TABLED_CONFIG": str(ROOT / "config" / "roulette.toml")}
    assert bash_completion("tablectl", "trace", "", env=roulette) == ["wheel"]
    assert bash_completion("tablectl", "device", "", env=roulette) == ["wheel"]
    studio = {"TABLED_CONFIG": str(ROOT / "config" / "baccarat-studio.toml")}
    assert bash_completion("tablectl", "trace", "", env=studio) == ["panel", "scanner", "shuffler"]


def test_events_on_a_file_that_is_not_a_journal_says_so(tmp_path):
    cfg = write_config(tmp_path)
    bad = tmp_path / "not-a-journal.sqlite"
    bad.write_bytes(b"this is not SQLite" * 100)
    r = tablectl(cfg, "events", str(bad))
    assert r.returncode == 2 and "cannot read the journal" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_recall_on_a_file_that_is_not_a_journal_is_one_line_not_a_bug(tmp_path):
    cfg = write_config(tmp_path)
    bad = tmp_path / "not-a-journal.sqlite"
    bad.write_bytes(b"this is not SQLite" * 100)
    r = tablectl(cfg, "recall", str(bad))
    assert r.returncode == 2 and "not a database" in r.stderr, r.stderr
    assert "internal error" not in r.stderr
