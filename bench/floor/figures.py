"""Figures the floor's tests measure, handed on to ``python -m bench.floor``, so that
``make floor`` prints every goal of issue 31 from one run (the stream leader's loss in
``tests/test_floor_cluster.py``, the 3-site group in ``tests/test_floor_site_link.py``).

``make floor`` names a file in ``$TABLED_FLOOR_FIGURES`` for both its steps; a test
records its figure there (nothing when the variable is unset: the normal suite), and
bench.floor reads them all after its own stages.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ENV = "TABLED_FLOOR_FIGURES"


def _path() -> Path | None:
    where = os.environ.get(ENV)
    return Path(where) if where else None


def record(key: str, figure: dict[str, Any]) -> None:
    """Add ``figure`` under ``key`` to this run's file, if ``make floor`` named one."""
    path = _path()
    if path is None:
        return
    have = read()
    have[key] = figure
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(have, indent=1, sort_keys=True) + "\n")


def read() -> dict[str, Any]:
    """What this run's tests recorded ({} without the variable or the file)."""
    path = _path()
    if path is None or not path.exists():
        return {}
    return json.loads(path.read_text())  # type: ignore[no-any-return]
