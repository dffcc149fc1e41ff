"""The shipped man pages (``docs/man``, package data) are the parsers' own pages, made again.

The pages are committed, not made while the wheel is built (``daemon/ctl/manpages.py`` says
why), so this test is what keeps them true: a parser that changed without ``make man``
fails here. The wheel carrying them is checked in ``tests/test_install.py``.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from daemon.ctl import install, manpages

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(manpages.PAGES))
def test_the_committed_page_is_the_parsers_page(name):
    committed = (ROOT / "docs/man" / f"{name}.1").read_text(encoding="utf-8")
    made = manpages.generate(name)
    if manpages.body(committed) != manpages.body(made):
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(True), made.splitlines(True), "docs/man", "parser", n=1
            )
        )
        pytest.fail(f"docs/man/{name}.1 is stale: run `make man` and commit it\n{diff[:3000]}")
    from daemon.runtime.app import package_version

    assert made.startswith(".TH") and f'"tabled {package_version()}" "tabled manual"' in made


def test_every_page_the_package_ships_is_made_and_installed():
    assert set(install.MAN_PAGES) == set(manpages.PAGES)
    assert {p.stem for p in (ROOT / "docs/man").glob("*.1")} == set(manpages.PAGES)


def test_make_man_rewrites_only_a_changed_page_and_keeps_the_date(tmp_path):
    first = manpages.write(tmp_path)
    assert sorted(p.name for p in first) == sorted(f"{n}.1" for n in manpages.PAGES)
    page = tmp_path / "tablectl.1"
    text = page.read_text()
    page.write_text(text.replace(text.split('"')[3], "2020\\-01\\-01", 1))
    assert manpages.write(tmp_path) == []  # same body: kept, with its old date
    assert '"2020\\-01\\-01"' in page.read_text()
    page.write_text(page.read_text() + ".SH STALE\n")
    assert manpages.write(tmp_path) == [page]
    assert ".SH STALE" not in page.read_text()
