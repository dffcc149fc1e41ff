"""The man pages the package ships: made from the parsers, committed, carried in the wheel.

``make man`` writes ``docs/man/NAME.1`` from each command's own argparse parser
(argparse-manpage); the pages are committed and go into the wheel as package data
(``daemon/data/man``, see ``setup.py``); ``tabled-setup install`` copies them to
``/usr/local/share/man/man1`` and ``tablectl man`` prints the shipped one.

Why committed and not generated while the wheel is built: making a page imports the
parser, and the parser imports the daemon (msgspec, structlog, …). An isolated
build environment holds only setuptools, so generating there would put every
runtime dependency into ``[build-system] requires``; committed pages keep the build
plain and let the sdist, the wheel and a packager see the same text. What keeps
them true is ``tests/test_man_pages.py``: it makes each page again and fails, naming
``make man``, when the committed one differs (the ``.TH`` line's date aside).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

#: the page's ``.TH`` manual title (man(7): the fifth field)
MANUAL = "tabled manual"


def _tabled() -> argparse.ArgumentParser:
    from daemon.runtime.app import build_parser

    return build_parser()


def _bridge() -> argparse.ArgumentParser:
    from bridge.app import build_parser

    return build_parser()


def _tablectl() -> argparse.ArgumentParser:
    from daemon.ctl.cli import parser

    return parser()


def _setup() -> argparse.ArgumentParser:
    from daemon.ctl.install import build_parser

    return build_parser()


#: page name → its command's parser and the NAME line's few words (whatis(1), apropos(1))
PAGES: dict[str, tuple[Callable[[], argparse.ArgumentParser], str]] = {
    "tabled": (_tabled, "the table controller daemon: devices, game rules, journal, event bus"),
    "tablectl": (_tablectl, "talk to a table's tabled, check its journal, config and devices"),
    "tabled-setup": (_setup, "install a table on this PC from the installed tabled, or remove it"),
    "tabled-bridge": (_bridge, "carry a floor of tables' events into NATS JetStream"),
}


def generate(name: str) -> str:
    """The page of command ``name``, made from its parser now (needs argparse-manpage)."""
    from argparse_manpage.manpage import Manpage

    from daemon.runtime.app import package_version

    # argparse wraps help to the terminal's width: a fixed width, so a page is the same
    # text whoever makes it
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        make, what = PAGES[name]
        page = Manpage(make())
        page.description = what
        page.source = f"tabled {package_version()}"
        page.manual = MANUAL
        return str(page)
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def body(page: str) -> str:
    """A page without its ``.TH`` line, whose date is the day it was made."""
    return page.split("\n", 1)[1] if page.startswith(".TH") else page


def write(folder: Path) -> list[Path]:
    """``make man``: (re)write every page whose text changed; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in PAGES:
        dest = folder / f"{name}.1"
        page = generate(name)
        if dest.exists() and body(dest.read_text(encoding="utf-8")) == body(page):
            continue  # the same page: keep its date
        dest.write_text(page, encoding="utf-8")
        written.append(dest)
    return written


if __name__ == "__main__":
    for p in write(Path(__file__).resolve().parents[2] / "docs" / "man"):
        print(f"wrote {p}")
