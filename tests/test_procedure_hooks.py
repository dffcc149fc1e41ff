"""A game builds on a procedure's public hooks only (issue 29, ``docs/architecture.md``).

A procedure's private names (``_x``: its methods, functions, attributes) are its own to
change. A game's folder that imports one, defines a method by one (an override) or
reaches one on an object (``self._place``) is bound to the procedure's insides, and a
procedure change breaks it unseen: every game folder of ours and every third-party
game in ``tests/third_party/`` is read with ``ast`` and must use none.

The round procedure's games (Pai Gow, Sic Bo) still override its ``_command``: the
round procedure's hooks are the next step of issue 29 (a game listed in
:data:`NOT_YET` fails its case as an expected failure, and passes once it is clean).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROCEDURES = ROOT / "daemon" / "procedures"
GAMES = sorted(p for p in (ROOT / "daemon" / "games").iterdir() if (p / "__init__.py").exists())
THIRD_PARTY = sorted(
    p for p in (Path(__file__).parent / "third_party").iterdir() if (p / "__init__.py").exists()
)

#: games still on a procedure's private names, and why (each an expected failure)
NOT_YET: dict[str, str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def private_names(root: Path = PROCEDURES) -> set[str]:
    """Every private name a procedure defines: functions, classes, methods, attributes."""
    names: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            else:
                continue
            if _private(name):
                names.add(name)
    return names


def defined(source: str) -> set[str]:
    """The names a module defines itself: its functions, classes, methods, attributes."""
    own: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
    return own


def uses(sources: dict[str, str], private: set[str]) -> list[str]:
    """Where a game's modules (``sources``: where → text) import a procedure's private name,
    override one in a class built on a procedure's (directly or through the game's own
    classes), or reach one the game does not define itself (its own ``_void`` is its own)."""
    found: list[str] = []
    trees = {w: ast.parse(text) for w, text in sources.items()}
    own = set().union(*map(defined, sources.values()))
    built_on: set[str] = set()  # a procedure's names, and the game's classes built on one
    classes: list[tuple[str, ast.ClassDef]] = []
    for where, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "daemon.procedures"
            ):
                built_on |= {a.asname or a.name for a in node.names}
                found += [
                    f"{where}:{node.lineno} imports {a.name}"
                    for a in node.names
                    if _private(a.name)
                ]
            elif isinstance(node, ast.ClassDef):
                classes.append((where, node))
    grew = True
    while grew:
        grew = False
        for _, c in classes:
            bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in c.bases}
            if c.name not in built_on and bases & built_on:
                built_on.add(c.name)
                grew = True
    for where, c in classes:
        if c.name in built_on:
            found += [
                f"{where}:{f.lineno} {c.name} overrides {f.name}"
                for f in c.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name in private
            ]
    for where, tree in trees.items():
        found += [
            f"{where}:{n.lineno} reaches .{n.attr}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in private - own
        ]
    return found


def folder_uses(folder: Path, private: set[str]) -> list[str]:
    paths = sorted(folder.rglob("*.py"))
    return uses({str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in paths}, private)


@pytest.mark.parametrize("folder", GAMES + THIRD_PARTY, ids=lambda p: p.name)
def test_a_game_uses_no_private_name_of_a_procedure(folder: Path):
    found = folder_uses(folder, private_names())
    if found and folder.name in NOT_YET:
        pytest.xfail(f"{NOT_YET[folder.name]}: {len(found)} uses")
    assert not found, "a game builds on public hooks only:\n" + "\n".join(found)


def test_blackjack_and_the_third_party_war_game_are_checked():
    """The cases issue 29 asked for are among those checked, and not excused."""
    names = {p.name for p in GAMES + THIRD_PARTY}
    assert {"blackjack", "casino_war"} <= names and not {"blackjack", "casino_war"} & set(NOT_YET)


def test_the_check_can_fail():
    """An import, an override and a reach of a private name are each found."""
    private = private_names()
    assert {"_resume", "_deal"} <= private
    game = (
        "from daemon.procedures.shoe.dealing import _R\n"
        "from daemon.procedures.shoe import ShoeGame\n"
        "class Base(ShoeGame):\n"
        "    pass\n"
        "class G(Base):\n"
        "    def _deal(self, s, d, at, *, hand, demo):\n"
        "        self._resume(1)\n"
        "    def place(self, t, s, d, h, at):\n"
        "        self.set_aside(t, d, at, {}, 'k', 'm')\n"
        "class Own:\n"
        "    def _void(self):\n"
        "        self._void()\n"
    )
    found = uses({"g.py": game}, private)
    assert [x.split(" ", 1)[1] for x in found] == [
        "imports _R",
        "G overrides _deal",
        "reaches ._resume",
    ], found
