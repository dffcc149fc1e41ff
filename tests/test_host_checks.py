"""The checks a technician runs are the checks the daemon makes at start (issue 33).

``config/baccarat-studio.toml`` names four unix groups in ``control.roles``; on a PC
without them the daemon refuses to start, so ``tablectl config check`` must fail too and
``tablectl doctor`` must say so, each naming every missing group at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from daemon_harness import ROOT, write_config

MISSING = ("tabled-nosuch-viewer", "tabled-nosuch-dealer")
ROLES = f'\n[control]\nroles = {{ viewer = "{MISSING[0]}", dealer = "{MISSING[1]}" }}\n'


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_config_check_fails_naming_every_missing_group(tmp_path):
    cfg = write_config(tmp_path, extra=ROLES)
    r = _run("daemon.ctl.cli", "config", "check", str(cfg))
    assert r.returncode == 2, r.stdout
    assert all(g in r.stderr for g in MISSING), r.stderr
    assert "groupadd" in r.stderr


def test_doctor_names_every_missing_group(tmp_path):
    cfg = write_config(tmp_path, extra=ROLES)
    r = _run("daemon.ctl.cli", "--config", str(cfg), "doctor")
    assert r.returncode == 1, r.stdout
    line = next(x for x in r.stdout.splitlines() if "control.roles" in x)
    assert line.startswith("PROBLEM") and all(g in line for g in MISSING), r.stdout
    as_json = _run("daemon.ctl.cli", "--config", str(cfg), "--json", "doctor")  # --json is kept
    found = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and found["ok"] is False
    assert any(all(g in p for g in MISSING) for p in found["problems"]), found


def test_the_daemon_refuses_the_same_and_leaves_no_state_directory(tmp_path):
    cfg = write_config(tmp_path, extra=ROLES)
    r = _run("daemon.runtime.app", "--config", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    assert all(g in r.stdout for g in MISSING), r.stdout
    assert not (tmp_path / "state").exists()


def test_a_start_refused_at_its_socket_leaves_no_new_state_directory(tmp_path):
    import socket
    import tomllib

    cfg = write_config(tmp_path)
    port = int(tomllib.loads(cfg.read_text())["bus"]["publish"].rsplit(":", 1)[1])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        r = _run("daemon.runtime.app", "--config", str(cfg))
    assert r.returncode == 1 and "address in use" in r.stdout, r.stdout
    assert not (tmp_path / "state").exists()


def test_a_journal_with_events_is_kept_when_a_later_start_fails(tmp_path):
    import socket
    import tomllib

    from daemon_harness import Daemon

    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        assert d.stop() == 0
    finally:
        d.close()
    journal = tmp_path / "state" / "journal.sqlite"
    before = journal.stat().st_size
    port = int(tomllib.loads(cfg.read_text())["bus"]["publish"].rsplit(":", 1)[1])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert _run("daemon.runtime.app", "--config", str(cfg)).returncode == 1
    assert journal.stat().st_size >= before


def test_a_missing_key_file_fails_config_check_and_doctor_as_it_stops_the_daemon(tmp_path):
    cfg = write_config(tmp_path, extra='\n[security]\ncheckpoint_key = "nokey.ed25519"\n')
    r = _run("daemon.ctl.cli", "config", "check", str(cfg))
    assert r.returncode == 2 and "nokey.ed25519 does not exist" in r.stderr, r.stderr
    doc = _run("daemon.ctl.cli", "--config", str(cfg), "doctor")
    assert doc.returncode == 1 and "PROBLEM  security: " in doc.stdout, doc.stdout
    # its keys refused as it starts: exit 1
    daemon = _run("daemon.runtime.app", "--config", str(cfg))
    assert daemon.returncode == 1 and "nokey.ed25519 does not exist" in daemon.stdout
    assert not (tmp_path / "state").exists()


def test_a_failed_start_never_removes_a_state_directory_another_daemon_holds(tmp_path):
    """Two daemons started at once on one new state directory: the one refused at the
    journal's lock saw the directory as new, and its undo removed the winner's journal
    (the fault campaign's two daemons: neither ran). The lock decides whose it is."""
    from daemon.runtime import host
    from daemon.runtime.config import load

    settings = load(write_config(tmp_path))
    fresh = host.fresh_dirs(settings)  # before anything exists, as the loser saw it
    assert tmp_path / "state" in fresh
    holder = subprocess.Popen(  # the winner: makes the directory and holds the journal's lock
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from daemon.journal import locks;"
            "p = Path(sys.argv[1]); p.parent.mkdir(parents=True); locks.lock_path(p);"
            "print('held', flush=True); sys.stdin.read()",
            str(settings.journal_path),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        host.undo_failed_start(settings, fresh)
        assert Path(f"{settings.journal_path}.lock").exists(), "the winner's directory was removed"
    finally:
        holder.communicate("", timeout=30)
    host.undo_failed_start(settings, fresh)  # once nobody holds it, an empty one is removed
    assert not (tmp_path / "state").exists()
