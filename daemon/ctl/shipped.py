"""The files the package carries besides code: example configs, systemd units, udev rules,
man pages, the hashed dependency lock.

In a wheel they are package data (``daemon/data/config``, ``daemon/data/systemd``,
``daemon/data/man``, ``daemon/data/requirements``: ``setup.py`` maps the repository's
``config/``, ``systemd/``, ``docs/man/`` and the hashed lock ``requirements/table-pc.txt``
there), so an
installed tabled finds them without the repository. From a clone or an editable
install they are read where they live, in the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Kind = Literal["config", "systemd", "man", "requirements"]

_REPO = Path(__file__).resolve().parents[2]
#: where each kind lives in the repository (setup.py maps the same folders)
IN_REPO: dict[Kind, str] = {
    "config": "config",
    "systemd": "systemd",
    "man": "docs/man",
    "requirements": "requirements",
}

#: the example configs the package ships, by name: a fixed list, so that a config lying
#: untracked in a working tree goes neither into the wheel (setup.py reads this list) nor
#: into ``tabled-setup example`` (issue 33); a test holds it to git's ``config/*.toml``
EXAMPLES: tuple[str, ...] = (
    "baccarat-studio",
    "blackjack",
    "demo",
    "dragon-tiger",
    "paigow",
    "roulette",
    "roulette-m360",
    "sicbo",
)


def folder(kind: Kind) -> Path:
    """The directory holding the shipped ``kind`` files."""
    for candidate in (Path(__file__).resolve().parents[1] / "data" / kind, _REPO / IN_REPO[kind]):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"the package's {kind} files are missing: reinstall tabled "
        f"(neither daemon/data/{kind} nor {_REPO / IN_REPO[kind]} exists)"
    )


def path(kind: Kind, name: str) -> Path:
    p = folder(kind) / name
    if not p.is_file():
        raise FileNotFoundError(f"{name} is not among the package's {kind} files ({p.parent})")
    return p
