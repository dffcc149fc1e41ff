"""``drivers/plugins.py`` answers as ``importlib.metadata`` does, without importing it.

The daemon finds its game and drivers and its own version through it; every answer is
compared with ``importlib.metadata``'s, on this installation and on distributions laid
out here: shadowed by an earlier ``sys.path`` entry, spelt differently, broken, zipped.
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys
import zipfile
from pathlib import Path

import pytest

from drivers import plugins


def _same(group: str) -> list[tuple[str, str, str]]:
    ours = [(e.name, e.value, e.group) for e in plugins.entry_points(group=group)]
    theirs = [(e.name, e.value, e.group) for e in metadata.entry_points(group=group)]
    assert ours == theirs
    return ours


def test_every_group_and_version_of_this_installation() -> None:
    groups = {ep.group for d in metadata.distributions() for ep in d.entry_points}
    assert {"tabled.games", "tabled.drivers", "console_scripts"} <= groups
    for group in sorted(groups):
        _same(group)
    for d in metadata.distributions():
        assert plugins.version(d.metadata["Name"]) == d.version


def _dist(site: Path, folder: str, version: str, entry_points: str) -> None:
    info = site / folder
    info.mkdir(parents=True)
    name = folder.partition("-")[0]
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_shadowed_respelt_and_commented_distributions(tmp_path, monkeypatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "Acme_Games-2.0.dist-info", "2.0", "# ours\n[tabled.games]\ndice = acme.x:Dice\n")
    _dist(second, "acme.games-1.0.dist-info", "1.0", "[tabled.games]\nold = acme.y:Old\n")
    _dist(second, "zeta-1.0.egg-info", "1.0", "[tabled.games]\n zeta =  z.m:Z.Inner [extra]\n")
    _dist(second, "alpha-3.dist-info", "3", "[other]\nx = a:b\n[tabled.games]\nalpha = a:A\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second), str(tmp_path / "missing")])
    found = _same("tabled.games")
    assert ("dice", "acme.x:Dice", "tabled.games") in found
    assert not any(name == "old" for name, _, _ in found)  # the first acme-games wins
    for name in ("acme-games", "ACME_GAMES", "zeta", "alpha"):
        assert plugins.version(name) == metadata.version(name)
    with pytest.raises(plugins.PackageNotFoundError):
        plugins.version("no-such-distribution")
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("no-such-distribution")
    ep = next(e for e in plugins.entry_points(group="tabled.games") if e.name == "zeta")
    assert ep.module == "z.m"


def test_a_broken_file_and_a_zip_get_importlib_metadata_s_own_answer(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _dist(site, "broken-1.0.dist-info", "1.0", "[tabled.games]\nno equals sign here\n")
    monkeypatch.setattr(sys, "path", [str(site)])
    with pytest.raises(Exception) as theirs:
        metadata.entry_points(group="tabled.games")
    with pytest.raises(type(theirs.value)):
        plugins.entry_points(group="tabled.games")

    z = tmp_path / "plugins.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\nVersion: 1.0\n")
        f.writestr("zipped-1.0.dist-info/entry_points.txt", "[tabled.games]\nzip = zp:Z\n")
    monkeypatch.setattr(sys, "path", [str(z)])
    assert _same("tabled.games") == [("zip", "zp:Z", "tabled.games")]
    assert plugins.version("zipped") == "1.0"


def test_an_entry_point_loads_what_it_names() -> None:
    ep = plugins.EntryPoint("baccarat", "daemon.games.baccarat.table:BaccaratTable", "g")
    from daemon.games.baccarat.table import BaccaratTable

    assert ep.load() is BaccaratTable
    assert plugins.EntryPoint("p", "os.path:join", "g").load() is __import__("os").path.join
