"""One daemon per journal file, whatever name reaches it (issue 28, item 5).

The path lock (``<journal>.lock``) let two daemons write one file through a hard link:
both ran, both published, and the file kept one chain. The journal file itself is now
locked (``flock`` on its inode, ``daemon/journal/locks.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from daemon_harness import ROOT, Daemon, endpoints, tablectl, write_config

from daemon.bus.subscriber import Follower
from daemon.journal import Journal, JournalError


def test_a_hard_link_to_a_journal_open_in_another_process_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    Journal(tmp_path / "a" / "j.sqlite", "t1").close()
    os.link(tmp_path / "a" / "j.sqlite", tmp_path / "b" / "j.sqlite")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from daemon.journal import Journal; "
            f"j = Journal({str(tmp_path / 'a' / 'j.sqlite')!r}, 't1'); print('open', flush=True); "
            "sys.stdin.read(); j.close()",
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        with pytest.raises(
            JournalError, match=rf"in use by another tabled \(pid {holder.pid}\) through"
        ):
            Journal(tmp_path / "b" / "j.sqlite", "t1")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    Journal(tmp_path / "b" / "j.sqlite", "t1").close()  # free once the other one closed it


def test_two_daemons_on_one_journal_through_a_hard_link_one_runs(tmp_path):
    cfg = write_config(tmp_path)
    (tmp_path / "second").mkdir()
    cfg2 = write_config(tmp_path / "second")
    d = Daemon(cfg)
    try:
        d.start()
        (tmp_path / "second" / "state").mkdir(mode=0o700)
        os.link(
            tmp_path / "state" / "journal.sqlite", tmp_path / "second" / "state" / "journal.sqlite"
        )
        r = subprocess.run(
            [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg2)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        out = r.stdout + r.stderr
        assert r.returncode == 1, out[-2000:]
        assert f"in use by another tabled (pid {d.proc.pid}) through another name" in out, out
        assert "Traceback" not in out
        f = Follower(*endpoints(cfg), table="it")
        f.until(lambda e: e.type == "card.dealt", 20)  # the first one goes on
        f.close()
    finally:
        assert d.stop() == 0
        d.close()
    assert tablectl(cfg, "verify").returncode == 0
