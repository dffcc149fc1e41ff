"""tabled's top-level import packages are its own (``docs/decisions.md``, "The import
packages stay top-level"): here they resolve to this checkout, and another distribution
installing one of them (python-daemon installs ``daemon``) is named, with the fix, by
``tablectl config check`` and refused by the daemon at start (``daemon/runtime/packages.py``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from daemon_harness import ROOT, write_config

from daemon.runtime import packages


def test_our_import_packages_resolve_to_this_checkout():
    """Fails when ``daemon`` (or another of ours) resolves to another distribution's."""
    for name in packages.OURS:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        where = Path(spec.origin).resolve()
        assert where == ROOT / name / "__init__.py", f"`{name}` resolves to {where}"
    assert packages.clashes() == []


def _site(tmp_path: Path) -> Path:
    """A directory of installed metadata: python-daemon's, one naming ``bridge`` only in
    its RECORD, tabled's own and an unrelated one."""
    site = tmp_path / "site"
    (site / "python_daemon-3.0.1.dist-info").mkdir(parents=True)
    (site / "python_daemon-3.0.1.dist-info" / "top_level.txt").write_text("daemon\n")
    (site / "netbridge-1.2.dist-info").mkdir()
    (site / "netbridge-1.2.dist-info" / "RECORD").write_text(
        "bridge/__init__.py,sha256=x,10\nbridge/net.py,sha256=y,20\n"
        "netbridge-1.2.dist-info/RECORD,,\n"
    )
    (site / "tabled-0.1.0.dist-info").mkdir()
    (site / "tabled-0.1.0.dist-info" / "top_level.txt").write_text("bridge\ndaemon\ndrivers\n")
    (site / "msgspec-0.19.0.dist-info").mkdir()
    (site / "msgspec-0.19.0.dist-info" / "top_level.txt").write_text("msgspec\n")
    return site


def test_another_distribution_of_our_names_is_named(tmp_path: Path):
    found = packages.clashes([str(_site(tmp_path)), str(tmp_path / "missing")])
    assert len(found) == 2, found
    assert found[0].startswith(
        "the import package `bridge` of tabled is also installed by netbridge 1.2"
    )
    assert "python_daemon 3.0.1" in found[1] and "`daemon`" in found[1]
    assert all("virtual environment of its own" in x for x in found)


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_config_check_and_the_daemon_refuse_a_shared_environment(tmp_path: Path):
    cfg = write_config(tmp_path)
    site = _site(tmp_path)
    check = _run(site, "daemon.ctl.cli", "config", "check", str(cfg))
    assert check.returncode == 2, check.stdout + check.stderr
    assert "python_daemon 3.0.1" in check.stderr and "netbridge 1.2" in check.stderr
    start = _run(site, "daemon.runtime.app", "--config", str(cfg))
    assert start.returncode == 2, start.stdout + start.stderr
    assert "python_daemon 3.0.1" in start.stdout + start.stderr
    assert not (tmp_path / "state").exists()
