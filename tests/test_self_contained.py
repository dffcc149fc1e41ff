"""The repository stands alone: nothing in it points at files a user does not have.

Two kinds of path are refused in every tracked file: the reference folder the
project was built beside (a ``shared`` directory: the seeds, the protocol notes)
and an absolute path of one machine (a home or work directory, a pytest temp
directory). What the project relies on from elsewhere is in ``docs/`` in its
own words (``docs/rules.md``, ``docs/protocols/``, ``docs/testing.md``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# built from pieces so that this file does not match itself
OUTSIDE = re.compile(r"\b" + "shared" + r"/")
MACHINE = re.compile(r"(?<![\w.-])/(?:" + "work|home|Users|mnt|srv|root" + r")/[\w.-]+")
MACHINE_TMP = re.compile(r"/tmp/" + "pytest-of-")
SKIP_SUFFIXES = {".sqlite", ".png", ".gz", ".whl"}


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [
            str(p.relative_to(ROOT))
            for top in ("daemon", "drivers", "docs", "tests", "config", "systemd", "bench")
            for p in (ROOT / top).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ] + ["README.md", "Makefile", "pyproject.toml"]
    return [ROOT / n for n in names if Path(n).suffix not in SKIP_SUFFIXES]


def problems_in(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):
        return []
    found = []
    for no, line in enumerate(text.splitlines(), 1):
        for rx in (OUTSIDE, MACHINE, MACHINE_TMP):
            m = rx.search(line)
            if m:
                found.append(f"{path.relative_to(ROOT)}:{no}: {m.group(0)!r}")
    return found


def test_the_scan_finds_what_it_is_meant_to(tmp_path):
    bad = tmp_path / "x.md"
    bad.write_text(
        "see ../" + "sha" + "red/RULES.md\n"
        "/" + "work/main/state/demo/journal.sqlite\n"
        "fine: /etc/tabled/bac-07.toml /run/tabled/x /dev/ttyUSB0 ipc:///run/tabled/t/c.sock\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert len(problems_in(bad)) == 2
    finally:
        ROOT = saved


def test_no_file_points_outside_the_repository_or_at_one_machine():
    files = tracked_files()
    assert len(files) > 50, "the scan found too few files to be scanning the repository"
    found = [p for f in files for p in problems_in(f)]
    if found:
        pytest.fail("paths a user of this repository does not have:\n" + "\n".join(found))
