"""The event types of this repository's games, carried by the client for every backend.

Each game keeps its Structs in its own folder (``daemon/games/<game>/events.py``, the module
its class's ``events`` comes from). A built client holds a copy of each as a module of this
package (the build collects them: ``client/collect.py``, run by the client's and the daemon's
``setup.py``); in a checkout, where none was collected, they are read from the game folders
beside the client. No list of games is kept: every module found is loaded, and
``tabled_client.registry`` registers its ``EVENTS`` (``docs/decisions.md``, "Each game's event
types live in its folder").
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

#: a checkout's game folders (this file is ``client/tabled_client/games/__init__.py``)
CHECKOUT = Path(__file__).resolve().parents[3] / "daemon" / "games"


def modules() -> list[ModuleType]:
    """Every in-repository game's events module: the collected copies, else the checkout's."""
    bundled = sorted(m.name for m in pkgutil.iter_modules(__path__))
    if bundled:
        return [importlib.import_module(f"{__name__}.{name}") for name in bundled]
    return [_load(path) for path in sorted(CHECKOUT.glob("*/events.py"))]


def _load(path: Path) -> ModuleType:
    """A game folder's ``events.py`` as ``tabled_client.games.<game>``, as a built client has it."""
    name = f"{__name__}.{path.parent.name}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
