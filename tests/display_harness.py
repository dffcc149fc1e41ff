"""Run ``tabled-display`` as a process and read its page in real headless Chromium.

Chromium is Debian's (``apt-get install chromium``, what ``.ci/run`` installs), driven by
Playwright for Python with ``executable_path``: Playwright never downloads a browser here.
``$TABLED_CHROMIUM`` names another binary. Screenshots are taken only when
``$VIEWS_SCREENSHOTS`` names where (``VIEWS_SCREENSHOTS=docs/views`` refreshes the ones
docs/views.md shows): nothing reads them otherwise, and a full-HD shot of a page that redraws
many times a second outlasted Playwright's 30 s on a loaded machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import zmq
from daemon_harness import ROOT, _die_with_parent, free_port


def chromium() -> str:
    """The browser binary, or the test skips saying what is missing."""
    path = os.environ.get("TABLED_CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.skip("no chromium (apt-get install chromium; or set $TABLED_CHROMIUM)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip("no playwright (pip install -e '.[test]')")
    return path


def screenshot(page: Any, name: str) -> None:
    """``name`` into ``$VIEWS_SCREENSHOTS`` when it is set (the docs' pictures); else nothing."""
    where = os.environ.get("VIEWS_SCREENSHOTS")
    if not where:
        return
    out = Path(where) if Path(where).is_absolute() else ROOT / where
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=out / name, timeout=120_000)


class DisplayProc:
    """One ``tabled-display`` for a table config, on a port that stays the same across restarts."""

    def __init__(self, config: Path, *args: str, port: int | None = None) -> None:
        self.config = config
        self.port = port or free_port()
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = config.parent / "display.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 15.0) -> None:
        self._out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "views.display.app",
                "--from-table",
                str(self.config),
                "--listen",
                f"127.0.0.1:{self.port}",
                "--stale-after",
                "1.5",
                *self.args,
            ],
            cwd=ROOT,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + "state", timeout=1) as r:
                    json.load(r)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"tabled-display did not answer:\n{self.log.read_text()}"
                    ) from None
                time.sleep(0.1)

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "state", timeout=5) as r:
            return json.load(r)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)


def replay(endpoint: str, upto: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Events 1..upto from the table's replay socket: what the bus says, to check the page by."""
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    try:
        s.send(json.dumps({"from": 1, "to": upto}).encode())
        out: list[dict[str, Any]] = []
        while True:
            assert s.poll(int(timeout * 1000)), "no replay answer"
            frame = json.loads(s.recv())
            if "seq" not in frame:
                assert frame.get("end") is True, frame
                return out
            out.append(frame)
    finally:
        s.close()


def since_last(events: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    """The events after the last one of ``type_`` (all of them when there is none)."""
    at = max((i for i, e in enumerate(events) if e["type"] == type_), default=-1)
    return events[at + 1 :]


#: the page's roads, read in one go so they belong to one snapshot (its seq)
READ_ROADS = """() => {
  const cells = (id, ...keys) => [...document.querySelectorAll('#' + id + ' .cell')].map(
    (e) => [+e.dataset.c, +e.dataset.r, ...keys.map((k) => k === 'ties' ? +e.dataset[k] : e.dataset[k])]);
  const next = {};
  for (const tr of document.querySelectorAll('#next tr')) {
    next[tr.dataset.side] = {};
    for (const td of tr.querySelectorAll('td[data-road]')) next[tr.dataset.side][td.dataset.road] = td.dataset.colour || null;
  }
  return {
    seq: +document.body.dataset.seq,
    bead_plate: cells('bead_plate', 'winner'),
    big_road: cells('big_road', 'side', 'ties'),
    big_eye_boy: cells('big_eye_boy', 'colour'),
    small_road: cells('small_road', 'colour'),
    cockroach_pig: cells('cockroach_pig', 'colour'),
    next,
  };
}"""


def expected_roads(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The roads as the shoe's ``hand.result``s state them, set square by square."""
    board: dict[str, dict[tuple[int, int], list[Any]]] = {}
    nxt: dict[str, Any] = {}
    for e in since_last(events, "shoe.started"):
        if e["type"] != "hand.result":
            continue
        roads = e["data"]["roads"]
        if roads["hands"] == 1:
            board = {}
        nxt = roads["next"]
        for name in ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig"):
            sq = roads[name]
            if sq is not None:
                board.setdefault(name, {})[(sq[0], sq[1])] = ["" if v is None else v for v in sq]
    out: dict[str, Any] = {
        name: sorted(board.get(name, {}).values())
        for name in ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")
    }
    out["next"] = nxt
    return out
