"""The files the package carries besides code: example configs, systemd units, udev rules.

In a wheel they are package data (``daemon/data/config``, ``daemon/data/systemd``:
``setup.py`` maps the repository's ``config/`` and ``systemd/`` there), so an
installed tabled finds them without the repository. From a clone or an editable
install they are read where they live, in the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Kind = Literal["config", "systemd"]

_REPO = Path(__file__).resolve().parents[1]


def folder(kind: Kind) -> Path:
    """The directory holding the shipped ``kind`` files."""
    for candidate in (Path(__file__).resolve().parent / "data" / kind, _REPO / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"the package's {kind} files are missing: reinstall tabled "
        f"(neither daemon/data/{kind} nor {_REPO / kind} exists)"
    )


def path(kind: Kind, name: str) -> Path:
    p = folder(kind) / name
    if not p.is_file():
        raise FileNotFoundError(f"{name} is not among the package's {kind} files ({p.parent})")
    return p
