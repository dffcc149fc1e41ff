"""The fault campaign's journal-identity parts (issue 28, items 4-6), called by ``fault_campaign``.

* hard link: a second daemon on the first one's journal through a hard link, started while the
  first deals: refused with one line, the first goes on, the chain verifies;
* restored backup: the state directory (or the journal alone) put back from a copy taken
  earlier, after the daemon went on (stopped or SIGKILLed): never READY, one line saying the
  journal went backwards, the file untouched, ``tablectl verify`` exit 1; the way out it names
  (moving the journal aside) starts a new journal id;
* relabelled rows: each stored column changed on a copy of a played journal: ``tablectl
  verify`` exit 1 naming the seq; those a start reads refused by the start with one line.

Each part counts into the campaign's ``COUNTS`` (given), under its own keys too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon_harness import ROOT, Daemon, endpoints, tablectl, write_config

from daemon.bus.subscriber import Follower

Log = Callable[[str], None]


def _one_error(out: str) -> str:
    assert "Traceback" not in out, out[-2000:]
    errs = []
    for line in out.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            if line.strip():
                errs.append(line)
            continue
        if isinstance(d, dict) and d.get("level") == "error":
            errs.append(" ".join(str(v) for v in (d.get("event"), d.get("error"))))
    assert len(errs) == 1, out[-2000:]
    return errs[0]


def _refused(cfg: Path, timeout: float = 30.0) -> str:
    """A start that must not get READY: its one error line."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode != 0, "a daemon started where it must not"
    return _one_error(r.stdout + r.stderr)


def _play(cfg: Path, until: Callable[[Any], bool], *, kill: bool = False) -> int:
    """Run the daemon until a follower sees ``until``; stop it (or SIGKILL); its last seq."""
    d = Daemon(cfg)
    try:
        d.start()
        f = Follower(*endpoints(cfg), table="it")
        ev = f.until(until, 30)[-1]
        f.close()
    finally:
        if kill:
            d.kill()
        else:
            assert d.stop() == 0
        d.close()
    return int(ev.seq)


def hard_link(work: Path, rounds: int, counts: dict[str, int], log: Log) -> None:
    (work / "a").mkdir()
    (work / "b").mkdir()
    cfg = write_config(work / "a")
    cfg_b = write_config(work / "b")
    for _ in range(rounds):
        d = Daemon(cfg)
        try:
            d.start()
            linked = work / "b" / "state" / "journal.sqlite"
            linked.parent.mkdir(mode=0o700, exist_ok=True)
            linked.unlink(missing_ok=True)
            os.link(work / "a" / "state" / "journal.sqlite", linked)
            line = _refused(cfg_b)
            assert "through another name" in line, line
            f = Follower(*endpoints(cfg), table="it")
            f.until(lambda e: e.type == "card.dealt", 20)  # the first one goes on
            f.close()
            assert d.stop() == 0
        finally:
            d.close()
        v = tablectl(cfg, "verify")
        assert v.returncode == 0, v.stdout
        counts["hard_links"] = counts.get("hard_links", 0) + 1
        counts["refusals"] += 1
        counts["faults"] += 1
    log(f"  hard link: {rounds} second daemons through a hard link refused, the first went on")


def restored_backup(work: Path, rounds: int, counts: dict[str, int], log: Log) -> None:
    mark = work / "marks" / "journal.head"
    cfg = write_config(work)
    text = cfg.read_text()
    cfg.write_text(
        text.replace("snapshot_every = 50\n", f'snapshot_every = 50\nhead_mark = "{mark}"\n')
    )
    state = work / "state"
    path = state / "journal.sqlite"
    for i in range(rounds):
        whole = i % 2 == 0  # the whole state directory, or the journal file alone
        seq = _play(cfg, lambda e: e.type == "card.dealt")
        shutil.rmtree(work / "backup", ignore_errors=True)
        shutil.copytree(state, work / "backup")
        ahead = _play(
            cfg, lambda e, s=seq: e.type == "card.dealt" and e.seq > s + 20, kill=i % 3 == 1
        )
        if whole:
            shutil.rmtree(state)
            shutil.copytree(work / "backup", state)
        else:
            for extra in ("-wal", "-shm", ".seal"):
                Path(f"{path}{extra}").unlink(missing_ok=True)
            shutil.copy(work / "backup" / "journal.sqlite", path)
        before = path.read_bytes()
        line = _refused(cfg)
        assert "went backwards" in line, line
        marked = int(re.search(r"up to seq (\d+)", line)[1])  # type: ignore[index]
        assert marked >= ahead, f"the mark ({marked}) is behind what was published ({ahead})"
        assert path.read_bytes() == before, "the restored journal was changed"
        v = tablectl(cfg, "verify")
        assert v.returncode == 1 and "went backwards" in v.stdout, v.stdout + v.stderr
        counts["restores"] = counts.get("restores", 0) + 1
        counts["refusals"] += 1
        counts["faults"] += 1
        # the way out the line names: the journal moved aside, a new journal id from seq 1
        path.rename(f"{path}.rolled-back-{i}")
        for extra in ("-wal", "-shm", ".seal"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
        _play(cfg, lambda e: e.type == "daemon.started" and e.seq == 1)
    log(
        f"  restored backup: {rounds} restores (state directory and journal alone, after a stop"
        " or a SIGKILL) refused, each then started anew as a new journal"
    )


#: (column, SQL changing it on a played journal, whether a start reads it and must refuse)
RELABELS: list[tuple[str, str, bool]] = [
    (
        "events.type",
        "UPDATE events SET type = 'hand.result' WHERE seq = "
        "(SELECT MIN(seq) FROM events WHERE type = 'card.dealt')",
        True,
    ),
    ("events.seq", "UPDATE events SET seq = 100000 WHERE seq = 5", True),
    ("events.hash", "UPDATE events SET hash = '" + "ab" * 32 + "' WHERE seq = 7", True),
    (
        "events.body",
        'UPDATE events SET body = replace(body, \'"card":"\', \'"card":"X\') WHERE seq = '
        "(SELECT MIN(seq) FROM events WHERE type = 'card.dealt')",
        True,
    ),
    ("meta.journal_id", "UPDATE meta SET value = 'f00d' WHERE key = 'journal_id'", True),
    ("meta.table", "UPDATE meta SET value = 'other' WHERE key = 'table'", True),
    (
        "meta.head",
        "UPDATE meta SET value = (SELECT (MAX(seq) - 1) || ':' || "
        "(SELECT hash FROM events WHERE seq = (SELECT MAX(seq) - 1 FROM events)) FROM events) "
        "WHERE key = 'head'",
        True,
    ),
    (
        "snapshots.seq",
        "UPDATE snapshots SET seq = seq - 1, hash = (SELECT hash FROM events e WHERE "
        "e.seq = snapshots.seq - 1) WHERE seq = (SELECT MAX(seq) FROM snapshots)",
        True,
    ),
    (
        "snapshots.version",
        "UPDATE snapshots SET version = 'v0' WHERE seq = (SELECT MAX(seq) FROM snapshots)",
        True,
    ),
    (
        "snapshots.hash",
        "UPDATE snapshots SET hash = '"
        + "cd" * 32
        + "' WHERE seq = (SELECT MIN(seq) FROM snapshots)",
        False,
    ),
]


def relabelled(work: Path, counts: dict[str, int], log: Log) -> None:
    cfg = write_config(work, sim="seed = 34\npace = 0.003\n")
    cfg.write_text(cfg.read_text().replace("snapshot_every = 50", "snapshot_every = 20"))
    _play(cfg, lambda e: e.type == "hand.result" and e.seq > 70)
    state = work / "state"
    path = state / "journal.sqlite"
    shutil.copytree(state, work / "good")
    assert tablectl(cfg, "verify").returncode == 0
    for column, sql, read_at_start in RELABELS:
        shutil.rmtree(state)
        shutil.copytree(work / "good", state)
        db = sqlite3.connect(path)
        db.execute(sql)
        db.commit()
        db.close()
        v = tablectl(cfg, "verify")
        assert v.returncode == 1, f"{column}: verify passed: {v.stdout}"
        assert "Traceback" not in v.stdout + v.stderr
        assert "seq " in v.stdout, f"{column}: {v.stdout}"
        if read_at_start:
            line = _refused(cfg)
            assert str(path) in line or "journal" in line, f"{column}: {line}"
            counts["refusals"] += 1
        counts["relabels"] = counts.get("relabels", 0) + 1
        counts["faults"] += 1
    log(
        f"  relabelled rows: {len(RELABELS)} columns changed, each named by verify, "
        f"{sum(r[2] for r in RELABELS)} refused by the start"
    )
