"""Every shell session shown in README.md and docs/ is run here, its output compared, or
is marked as an illustration saying why (issue 33: docs that cannot drift).

A session is a fenced block with ``$ command`` lines. The line before its fence says
which it is::

    <!-- session: runs in tests/test_doc_sessions.py -->
    <!-- session: illustration (a live table's seqs and times) -->

A session that runs is run here command by command in bash, from the repository, with
``tablectl`` and ``.venv/bin/tablectl`` this tablectl, and each command's output (stdout
and stderr) must be the lines the doc shows: ``…`` inside a line stands for any text, a
line that is only ``…`` for any lines, ``[exit N]`` for the exit status (0 when not
shown). Sessions that need a running table get one (``daemon_harness``), named by
``$TABLED_CONFIG``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, write_config

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"^<!-- session: (runs in tests/test_doc_sessions\.py|illustration \(.+\)) -->$")


class Session:
    def __init__(self, doc: Path, line: int, mark: str | None, body: str) -> None:
        self.doc, self.line, self.mark, self.body = doc, line, mark, body

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return bool(self.mark and self.mark.startswith("runs in"))

    def steps(self) -> Iterator[tuple[str, list[str], int]]:
        """(command, the output lines shown, the exit status shown) for each ``$`` line."""
        cmd: str | None = None
        out: list[str] = []
        code = 0
        for line in self.body.splitlines():
            if line.startswith("$ "):
                if cmd is not None:
                    yield cmd, out, code
                cmd, out, code = line[2:], [], 0
            elif m := re.fullmatch(r"\[exit (\d+)\]", line):
                code = int(m[1])
            else:
                out.append(line)
        if cmd is not None:
            yield cmd, out, code


def sessions() -> list[Session]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if not re.search(r"^\$ ", m.group(1), re.M):
                continue
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            mark = MARK.match(before)
            line = text[: m.start()].count("\n") + 1
            found.append(Session(doc, line, mark.group(1) if mark else None, m.group(1)))
    return found


def test_every_session_is_run_or_marked_as_an_illustration():
    found = sessions()
    assert len(found) > 20
    unmarked = [s.where for s in found if s.mark is None]
    assert not unmarked, (
        "shell sessions neither run nor marked (<!-- session: runs in "
        f"tests/test_doc_sessions.py --> or <!-- session: illustration (why) -->): {unmarked}"
    )
    assert sum(s.runs for s in found) >= 4


def matches(shown: list[str], got: list[str]) -> bool:
    """The output ``got`` is what the doc shows, ``…`` standing for what varies."""
    pattern = ""
    for line in shown:
        if line.strip() == "…":
            pattern += r"(?:.*\n)*?"
        else:
            pattern += ".*?".join(map(re.escape, line.split("…"))) + r"\n"
    return re.fullmatch(pattern, "".join(x + "\n" for x in got)) is not None


def test_the_comparison_can_fail():
    assert matches(["a …", "…", "z"], ["a b", "x", "y", "z"])
    assert not matches(["a …", "z"], ["a b", "x", "z"])
    assert not matches(["ok"], ["ok", "more"])


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Iterator[dict[str, str]]:
    """tablectl on the PATH, and a running demo table for the sessions that need one."""
    tmp = tmp_path_factory.mktemp("sessions")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "tablectl"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m daemon.ctl.cli "$@"\n')
    wrapper.chmod(0o755)
    cfg = write_config(tmp)
    d = Daemon(cfg)
    d.start()
    yield {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TABLED_CONFIG": str(cfg)}
    d.stop()
    d.close()


RUN = [s for s in sessions() if s.runs]


@pytest.mark.parametrize("session", RUN, ids=[s.where for s in RUN])
def test_the_session_runs_as_shown(session, env):
    for cmd, shown, code in session.steps():
        cmd = cmd.replace(".venv/bin/tablectl", "tablectl")
        r = subprocess.run(
            ["bash", "-c", f"exec 2>&1; {cmd}"],  # stderr too, the command's own redirections after
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        got = r.stdout.splitlines()
        assert matches(shown, got), f"{session.where}: $ {cmd}\n" + "\n".join(got[-30:])
        assert r.returncode == code, f"{session.where}: $ {cmd}: exit {r.returncode}"
