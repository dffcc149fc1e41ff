"""Another distribution installing one of tabled's top-level import packages.

The wheel installs the top-level packages ``daemon``, ``drivers``, ``bridge`` and
``views`` (``docs/decisions.md``, "The import packages stay top-level"). Other
distributions claim some of those names (python-daemon installs ``daemon``); installed
into the same environment, one overwrites the other's files, and what breaks, and when,
depends on the order of the installs. tabled is installed in a virtual environment of
its own (``docs/operations.md``), so this should never be found; when it is, the start,
``tablectl config check`` and ``tablectl doctor`` name the other distribution and the fix
(``daemon/runtime/host.py``) instead of failing later on a module that is not ours.

Read from the installed metadata's files (``top_level.txt``, else ``RECORD``) with
``os.scandir``, not ``importlib.metadata``: it runs at every start, and importing that
and walking every distribution cost ~0.3 s on a loaded two-core table PC.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

#: the top-level import packages the tabled wheel installs (setup.py); tabled_client is also
#: its own distribution, tabled-client, with the same code
OURS = ("daemon", "drivers", "bridge", "views")
#: this distribution's name, normalized (PEP 503)
DISTRIBUTION = "tabled"
_META = re.compile(r"^(?P<name>[^-]+)(?:-(?P<version>[^-]+))?.*\.(?:dist|egg)-info$")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level(meta: Path) -> set[str]:
    """The top-level names a distribution's metadata says it installs."""
    try:
        return {x.strip() for x in (meta / "top_level.txt").read_text().splitlines() if x.strip()}
    except OSError:
        pass
    try:
        record = (meta / "RECORD").read_text()
    except OSError:
        return set()
    out = set()
    for line in record.splitlines():
        first = line.split(",", 1)[0].split("/", 1)[0]
        if first and not first.startswith("..") and not first.endswith((".dist-info", ".data")):
            out.add(first.removesuffix(".py"))
    return out


def clashes(paths: Iterable[str] | None = None) -> list[str]:
    """One line per other distribution installing one of :data:`OURS` where Python looks
    for packages (``sys.path``), naming it, the packages and the fix."""
    out = []
    for entry in sys.path if paths is None else paths:
        where = Path(entry or ".")
        try:
            found = sorted(os.scandir(where), key=lambda e: e.name)
        except OSError:
            continue
        for e in found:
            m = _META.match(e.name)
            if m is None or not e.is_dir() or _normalized(m["name"]) == DISTRIBUTION:
                continue
            mine = sorted(set(OURS) & _top_level(Path(e.path)))
            if not mine:
                continue
            who = m["name"] + (f" {m['version']}" if m["version"] else "")
            names = ", ".join(f"`{n}`" for n in mine)
            out.append(
                f"the import package{'s' if len(mine) > 1 else ''} {names} of tabled "
                f"{'are' if len(mine) > 1 else 'is'} also installed by {who} ({where}): the two "
                "cannot share an environment (one overwrites the other's files); install "
                f"tabled in a virtual environment of its own or uninstall {m['name']} "
                '(docs/decisions.md, "The import packages stay top-level")'
            )
    return out
