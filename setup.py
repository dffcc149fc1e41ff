"""Only what pyproject.toml cannot say: the repository's config/, systemd/ and the committed
man pages (docs/man/, made by `make man`: daemon/manpages.py says why they are not made here)
go into the wheel as package data under daemon/data/ (daemon/shipped.py finds them there),
beside the daemon's packages, the bridge, the views (views/, with their pages) and tabled_client (client/, also its own
distribution)."""

from setuptools import find_packages, setup

DATA = {
    "daemon.data.config": "config",
    "daemon.data.systemd": "systemd",
    "daemon.data.man": "docs/man",
}
CLIENT = find_packages(where="client", include=["tabled_client*"])

setup(
    packages=find_packages(include=["daemon*", "drivers*", "bridge*", "views*"]) + CLIENT + list(DATA),
    package_dir={**DATA, **{p: "client/" + p.replace(".", "/") for p in CLIENT}},
    package_data={
        "": ["*.toml"],
        "daemon.data.systemd": ["*.service", "*.rules", "*.conf"],
        "daemon.data.man": ["*.1"],
        "tabled_client": ["events.schema.json"],
        "views.display": ["static/*"],
    },
)
