"""What the client's build collects from the repository around it: each in-repository game's
event types (``daemon/games/<game>/events.py``, to ``tabled_client/games/<game>.py``) and the
JSON Schemas, each committed once in ``docs/`` (``events.schema.json``, ``bus.schema.json``).

Used by ``client/setup.py`` and the daemon's ``setup.py`` (which installs ``tabled_client``
too), as their ``build_py``. An editable install collects nothing: there, the client reads
the game folders of the checkout (``tabled_client/games/__init__.py``) and generates the
schema (``tabled_client.schema.shipped``). Not a module of the package: it is not installed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

#: the repository this client is built from (``client/`` is in it)
ROOT = Path(__file__).resolve().parent.parent


def collected(root: Path = ROOT) -> dict[str, Path]:
    """Each file the built package gets, by its path in the package tree, from its source."""
    games = sorted((root / "daemon" / "games").glob("*/events.py"))
    schemas = [root / "docs" / name for name in ("events.schema.json", "bus.schema.json")]
    if not games or not all(p.is_file() for p in schemas):
        raise SystemExit(
            f"tabled-client is built from a checkout of tabled ({root} has no daemon/games/*/"
            "events.py or docs/*.schema.json): build it with `pip wheel ./client` or "
            "`python -m build --wheel client`, not from an sdist"
        )
    out = {f"tabled_client/games/{p.parent.name}.py": p for p in games}
    out.update({f"tabled_client/{p.name}": p for p in schemas})
    return out


def lay_out(target: Path, root: Path = ROOT) -> list[Path]:
    """Copy what :func:`collected` names under ``target`` (a build's package tree)."""
    done = []
    for rel, src in collected(root).items():
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        done.append(dst)
    return done


class BuildPy(build_py):
    """``build_py`` and then the collected files, beside the package's own."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            lay_out(Path(self.build_lib))
