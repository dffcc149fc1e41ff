"""Game and vendor knowledge stays home (issue 29, ``docs/architecture.md``): the plumbing of
``daemon/`` and ``drivers/`` names no game and no vendor, and probes no game or driver for
an optional capability.

* The words: every installed game's name and folder (``tabled.games``, ``daemon/games/*/``),
  every vendor's package among the drivers (a ``tabled.drivers`` entry point naming a
  package, ``drivers/cammegh/``) and its models (the modules its drivers are defined in).
  None may appear in the code (identifiers, imports, strings that are not docstrings;
  comments and docstrings may cite them) outside its own folder.
* The probes: ``getattr(x, "NAME", …)`` or ``hasattr(x, "NAME")`` where NAME is an optional
  member the game's base (:class:`daemon.table.game.GameDefaults`), the driver's
  (:class:`drivers.base.Driver`) or the simulator's (:class:`drivers.sim.base.Simulator`)
  declares with its default: read it, do not probe it. Nor does
  the daemon probe itself (``getattr(self, …)``): its optional parts start as None.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: where a word may appear although it is not the folder it belongs to, and why
ALLOWED: dict[tuple[str, str], str] = {
    # a journaled rule text cites its source document by name: changing it changes events
    ("daemon/procedures/shoe/shuffler.py", "baccarat"): "the rule text cites 'mini-baccarat rule 12.4'",
    # the example configs shipped in the wheel are named after their game (config/<game>.toml)
    ("daemon/ctl/shipped.py", "*"): "the list of the example configs' file names",
    # tablectl's help shows a table id in its examples
    ("daemon/tools/shell.py", "roulette"): "an example's table id, roulette-1",
    # the vendor's own name of one of its wheel's game modes
    ("drivers/cammegh/facts.py", "roulette"): "the vendor's mode name 'Dragon Roulette'",
}
#: simulators are one device's each (``drivers/sim/<module>.py``), found by the driver's name
DEVICE_FOLDERS = ("drivers/sim/",)
#: being split by other work in flight (``daemon/pipeline/pipeline.py``: engineer ``core``)
IN_FLIGHT: frozenset[str] = frozenset()


def game_words() -> dict[str, str]:
    """word → the folder it belongs to, for every installed game."""
    from daemon import games

    out: dict[str, str] = {}
    for name, cls in games.games().items():
        folder = "/".join(cls.__module__.split(".")[:3]) + "/"
        for w in {name, name.replace("-", "_"), name.replace("-", ""), folder.split("/")[2]}:
            out[w] = folder
    return out


def vendor_words() -> dict[str, str]:
    """word → the folder it belongs to, for every vendor package of ``drivers/`` and its models."""
    from drivers.base import load_drivers

    out: dict[str, str] = {}
    for cls in load_drivers().values():
        parts = cls.__module__.split(".")
        if len(parts) > 2 and (ROOT / parts[0] / parts[1] / "__init__.py").is_file():
            folder = f"{parts[0]}/{parts[1]}/"
            out[parts[1]] = folder
            out[parts[2]] = folder
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def code_words(tree: ast.AST) -> list[tuple[int, str]]:
    """The names and strings of the code (not its docstrings), with their lines."""
    skip = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            out += [(node.lineno, n) for n in names]
    return out


def plumbing(root: Path = ROOT) -> list[Path]:
    out = []
    for pkg in ("daemon", "drivers"):
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("daemon/games/") and rel.count("/") > 2:
                continue  # a game's own folder
            out.append(path)
    return out


def named(paths: list[Path], words: dict[str, str], root: Path = ROOT) -> list[str]:
    """``path:line: word`` wherever a word appears outside its folder."""
    pattern = re.compile(
        r"(?<![a-z0-9])(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + ")(?![a-z0-9])",
        re.I,
    )
    found = []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if rel in IN_FLIGHT or rel.startswith(DEVICE_FOLDERS):
            continue
        for line, text in code_words(ast.parse(path.read_text(encoding="utf-8"))):
            for m in pattern.finditer(text):
                w = m.group(1).lower()
                if rel.startswith(words[w]) or (rel, w) in ALLOWED or (rel, "*") in ALLOWED:
                    continue
                found.append(f"{rel}:{line}: {w} ({text!r})")
    return found


def optional_members() -> set[str]:
    from daemon.table.game import GameDefaults
    from drivers.base import Driver
    from drivers.sim.base import Simulator

    own = {n for n in vars(GameDefaults) if not n.startswith("__")}
    own |= {n for n in vars(Simulator) if not n.startswith("_")}  # a simulator's ``resume``…
    return own | {n for n in vars(Driver) if not n.startswith("_")}


def probes(paths: list[Path], members: set[str], root: Path = ROOT) -> list[str]:
    """``getattr``/``hasattr`` of a declared optional member, or of the daemon itself."""
    found = []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if rel in IN_FLIGHT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
            ):
                continue
            obj, attr = node.args[0], node.args[1]
            name = attr.value if isinstance(attr, ast.Constant) else None
            own = isinstance(obj, ast.Name) and obj.id == "self" and rel.startswith("daemon/")
            if name in members or (own and name is not None):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_game_or_vendor_is_named_in_the_plumbing():
    found = named(plumbing(), {**game_words(), **vendor_words()})
    assert not found, "a game's or a vendor's name outside its folder:\n" + "\n".join(found)


def test_no_optional_capability_is_probed():
    found = probes(plumbing(), optional_members())
    assert not found, (
        "declared with a default in daemon/table/game.py (GameDefaults), drivers/base.py (Driver) "
        "or drivers/sim/base.py (Simulator): "
        "read it, do not probe it:\n" + "\n".join(found)
    )


def test_the_checks_can_fail(tmp_path: Path):
    mod = tmp_path / "daemon" / "x.py"
    mod.parent.mkdir()
    mod.write_text(
        '"""Docstrings may say roulette."""\n'
        "# so may comments: roulette\n"
        'GAME = "roulette"\n'
        "def f(game, self):\n"
        '    return getattr(game, "held_alarm", None), getattr(self, "hooks", None)\n'
    )
    home = tmp_path / "daemon" / "games" / "roulette"
    home.mkdir(parents=True)
    (home / "table.py").write_text('NAME = "roulette"\n')
    paths = plumbing(tmp_path)
    assert [p.name for p in paths] == ["x.py"]
    assert named(paths, {"roulette": "daemon/games/roulette/"}, tmp_path) == [
        "daemon/x.py:3: roulette ('roulette')"
    ]
    assert probes(paths, {"held_alarm"}, tmp_path) == [
        "daemon/x.py:5: getattr(game, 'held_alarm', None)",
        "daemon/x.py:5: getattr(self, 'hooks', None)",
    ]
