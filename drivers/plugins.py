"""Entry points and a distribution's version, read without importing ``importlib.metadata``.

A daemon makes two such look-ups at start: the class its config's game or driver names
(``daemon/games/__init__.py``, ``drivers/base.py``) and tabled's version. Importing
``importlib.metadata`` for them brings email, zipfile, csv and the compression modules:
1.5 MiB of every daemon's RSS and ~30 ms of CPU (``docs/performance-history.md``, memory and
start-up). So the installed distributions' files are read here as
``importlib.metadata`` reads a plain directory on ``sys.path`` (the PyPA specs for
``entry_points.txt`` and the core metadata's ``Version``): ``sys.path`` in order, in
each directory its ``*.dist-info`` and ``*.egg-info`` folders grouped by name in the
order the directory lists them, the first distribution of a name winning.

Whatever this does not read the same way — a zip or an egg on ``sys.path``, another
finder of distributions on ``sys.meta_path`` — hands the question to
``importlib.metadata`` itself, so the answer is always its answer
(``tests/test_plugins.py`` compares the two on this installation and on shadowed,
added and broken distributions).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import Any


class PackageNotFoundError(ModuleNotFoundError):
    """No installed distribution of that name (``importlib.metadata``'s, when it answered)."""


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One ``name = module:attr`` line of a group, as ``importlib.metadata.EntryPoint``."""

    name: str
    value: str
    group: str

    _PATTERN = re.compile(
        r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
    )

    @property
    def module(self) -> str:
        m = self._PATTERN.match(self.value)
        assert m is not None, self.value
        return m.group("module")

    def load(self) -> Any:
        m = self._PATTERN.match(self.value)
        if m is None:
            raise ValueError(f"entry point {self.name!r}: {self.value!r} is not module:attr")
        obj: Any = import_module(m.group("module"))
        for attr in filter(None, (m.group("attr") or "").split(".")):
            obj = getattr(obj, attr)
        return obj


class _Unsure(Exception):
    """Something importlib.metadata reads in a way this module does not: ask it instead."""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _distributions() -> Iterator[str]:
    """Each installed distribution's metadata folder, the first of each name, in the order
    ``importlib.metadata.distributions()`` gives them."""
    if any(
        hasattr(f, "find_distributions") and getattr(f, "__name__", None) != "PathFinder"
        for f in sys.meta_path
    ):
        raise _Unsure("another finder of distributions")
    seen: set[str] = set()
    for entry in sys.path:
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            raise _Unsure(f"an egg on sys.path: {root}")
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.isfile(root):
                raise _Unsure(f"{root} is a file (a zip?)") from None
            continue  # not there: importlib.metadata finds nothing in it either
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = low.rpartition(".")[0].partition("-")[0]
                by_name.setdefault(_normalize(name), []).append(child)
        for folders in by_name.values():
            for child in folders:
                stem, ext = os.path.splitext(child)
                if ext not in (".dist-info", ".egg-info"):
                    raise _Unsure(f"{child}: named by its metadata, not its folder")
                key = _normalize(stem.partition("-")[0])
                if key not in seen:
                    seen.add(key)
                    yield os.path.join(entry, child) if entry else child


def _read(folder: str, name: str) -> str | None:
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None  # what importlib.metadata's read_text makes of these
    except (OSError, UnicodeDecodeError) as e:
        raise _Unsure(f"{folder}/{name}: {e}") from None


def _parse(text: str, group: str) -> Iterator[EntryPoint]:
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        if "=" not in line:
            raise _Unsure(f"entry point line {line!r}")  # importlib.metadata raises on it
        if section == group:
            name, value = (x.strip() for x in line.split("=", 1))
            yield EntryPoint(name, value, group)


def entry_points(*, group: str) -> list[EntryPoint]:
    """The group's entry points of every installed distribution, in ``importlib.metadata``'s
    order (a later one of the same name is the one a dict of them keeps)."""
    try:
        found: list[EntryPoint] = []
        for folder in _distributions():
            text = _read(folder, "entry_points.txt")
            if text is not None:
                found += _parse(text, group)
        return found
    except _Unsure:
        from importlib.metadata import entry_points as read

        return [EntryPoint(ep.name, ep.value, ep.group) for ep in read(group=group)]


def version(distribution: str) -> str:
    """The installed version of ``distribution`` (its metadata's ``Version``)."""
    try:
        want = _normalize(distribution)
        for folder in _distributions():
            stem = os.path.splitext(os.path.basename(folder))[0]
            if _normalize(stem.partition("-")[0]) != want:
                continue
            text = _read(folder, "METADATA") or _read(folder, "PKG-INFO")
            for line in (text or "").splitlines():
                if not line:
                    break  # the headers end at the first empty line
                key, _, value = line.partition(":")
                if key.strip().lower() == "version":
                    return value.strip()
            raise _Unsure(f"{folder}: no Version")
    except _Unsure:
        pass
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        raise PackageNotFoundError(distribution) from None
