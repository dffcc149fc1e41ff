"""Only what pyproject.toml cannot say: the repository's shipped configs (daemon/ctl/shipped.py's
EXAMPLES), the hashed lock requirements/table-pc.txt, systemd/ and the committed
man pages (docs/man/, made by `make man`: daemon/ctl/manpages.py says why they are not made here)
go into the wheel as package data under daemon/data/ (daemon/ctl/shipped.py finds them there),
beside the daemon's packages, the bridge, the views (views/, with their pages) and tabled_client (client/, also its own
distribution, whose build_py, client/collect.py, adds each game's event types and the events' schema to it)."""

import ast
import sys
from pathlib import Path

from setuptools import find_packages, setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "client"))
from collect import BuildPy


def _examples() -> list[str]:
    """daemon/ctl/shipped.py's EXAMPLES, read without importing the package: the fixed list of
    example configs (an untracked config/*.toml in a working tree is not shipped)."""
    tree = ast.parse(Path(__file__).with_name("daemon").joinpath("ctl", "shipped.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "EXAMPLES":
            return [f"{name}.toml" for name in ast.literal_eval(node.value)]
    raise SystemExit("daemon/ctl/shipped.py has no EXAMPLES")


DATA = {
    "daemon.data.config": "config",
    "daemon.data.systemd": "systemd",
    "daemon.data.man": "docs/man",
    "daemon.data.requirements": "requirements",
}
CLIENT = find_packages(where="client", include=["tabled_client*"])

setup(
    cmdclass={"build_py": BuildPy},
    packages=find_packages(include=["daemon*", "drivers*", "bridge*", "views*"]) + CLIENT + list(DATA),
    package_dir={**DATA, **{p: "client/" + p.replace(".", "/") for p in CLIENT}},
    package_data={
        "daemon.data.config": _examples(),
        "daemon.data.requirements": ["table-pc.txt"],
        "daemon.data.systemd": ["*.service", "*.rules", "*.conf"],
        "daemon.data.man": ["*.1"],
        "views.display": ["static/*"],
    },
)
