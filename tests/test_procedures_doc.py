"""``docs/procedures.md`` keeps up with the procedures, both ways (issue 29).

Every procedure is documented there: each installed game is named, each of its commands
(the control command or its ``tablectl`` words), each of its house-rule keys (the game's
``Rules``, with the shoe's or the round's), every alarm kind a procedure or a game raises
(however it is raised: ``tests/alarm_finder.py``) and every module of
``daemon/procedures/``. And every procedure, hook or name it gives exists: a dotted name is
an event type, a command, a module's name (``rules.first_position``) or an event's field
(``data.device``: a word the code has); a class is a class of the code and ``Class.member`` one of its members,
found through its bases (a procedure's public hooks); a call ``f()`` names a function of
the code; any other name in a code span is a word the code has (an identifier or a string:
a phase, a rule's value, a reason). File paths in code spans are checked by
``tests/test_docs.py`` and ``tablectl`` commands by ``tests/test_doc_drift.py``. Each check
is shown able to fail.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

import alarm_finder
import msgspec
from test_docs import emitted_types, found_alarms

ROOT = Path(__file__).resolve().parent.parent
PROCEDURES_MD = ROOT / "docs" / "procedures.md"
#: the folders whose code the doc's names must be found in
CODE = ("daemon", "drivers", "client/tabled_client")
SPAN = re.compile(r"`([^`]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
#: a name a span may be: ``card.dealt``, ``first-card``, ``ShoeGame.place``, ``f()``
TOKEN = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*(?:\([\w, ]*\))?")


def spans(text: str) -> set[str]:
    """The code spans of a Markdown text (a span may run over a line break; fenced blocks
    are not spans)."""
    text = FENCE.sub("", text)
    return {" ".join(s.split()) for s in SPAN.findall(text)}


def _text() -> str:
    return PROCEDURES_MD.read_text(encoding="utf-8")


# -- what the code has -------------------------------------------------------------------


@functools.cache
def _trees() -> dict[str, ast.Module]:
    out = {}
    for pkg in CODE:
        for py in sorted((ROOT / pkg).rglob("*.py")):
            out[py.relative_to(ROOT).as_posix()] = ast.parse(py.read_text(encoding="utf-8"))
    return out


@functools.cache
def vocabulary() -> frozenset[str]:
    """Every identifier and string the code has, and its modules' file names."""
    words: set[str] = {"None", "True", "False"}
    for rel, tree in _trees().items():
        words.add(rel.rsplit("/", 1)[-1])
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                words.add(n.value)
            elif isinstance(n, ast.Name):
                words.add(n.id)
            elif isinstance(n, ast.Attribute):
                words.add(n.attr)
            elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                words.add(n.name)
            elif isinstance(n, ast.arg):
                words.add(n.arg)
            elif isinstance(n, ast.keyword) and n.arg:
                words.add(n.arg)
    return frozenset(words)


@functools.cache
def functions() -> dict[str, set[str]]:
    """Function name → the modules (``rules``, ``round``) defining it, at any depth."""
    out: dict[str, set[str]] = {}
    for rel, tree in _trees().items():
        module = rel.rsplit("/", 1)[-1].removesuffix(".py")
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                out.setdefault(n.name, set()).add(module)
    return out


@functools.cache
def module_names() -> dict[str, set[str]]:
    """A module's short name → the names it defines at its top level."""
    out: dict[str, set[str]] = {}
    for rel, tree in _trees().items():
        names = out.setdefault(rel.rsplit("/", 1)[-1].removesuffix(".py"), set())
        for n in tree.body:
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(n.name)
            elif isinstance(n, ast.Assign):
                names.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                names.add(n.target.id)
    return out


@functools.cache
def classes() -> dict[str, list[tuple[set[str], list[str]]]]:
    """Class name → (its own members, its bases' names) for each class of that name."""
    out: dict[str, list[tuple[set[str], list[str]]]] = {}
    for tree in _trees().values():
        for n in ast.walk(tree):
            if not isinstance(n, ast.ClassDef):
                continue
            members: set[str] = set()
            for b in n.body:
                if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    members.add(b.name)
                elif isinstance(b, ast.Assign):
                    members.update(t.id for t in b.targets if isinstance(t, ast.Name))
                elif isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name):
                    members.add(b.target.id)
            bases = [
                x.id if isinstance(x, ast.Name) else x.attr
                for x in n.bases
                if isinstance(x, ast.Name | ast.Attribute)
            ]
            out.setdefault(n.name, []).append((members, bases))
    return out


def has_member(cls: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
    """``cls`` (any class of that name) has ``member``, itself or through its bases."""
    if cls in seen:
        return False
    for members, bases in classes().get(cls, []):
        if member in members or any(has_member(b, member, seen | {cls}) for b in bases):
            return True
    return False


def commands() -> dict[str, tuple[str, ...]]:
    """Every command of every installed game and of the table → its ``tablectl`` words."""
    from daemon import games
    from daemon.table import Table

    out = {name: s.cli_words(name) for name, s in Table.commands.items()}
    for game in games.games().values():
        out.update({name: s.cli_words(name) for name, s in game.commands.items()})
    return out


@functools.cache
def _types() -> frozenset[str]:
    return frozenset(emitted_types())


def _capture_files() -> set[str]:
    return {p.name for p in (ROOT / "tests" / "captures").rglob("*") if p.is_file()}


# -- every name the doc gives exists -----------------------------------------------------


def unknown_names(text: str) -> list[str]:
    """The names in ``text``'s code spans that the code does not have (see the docstring)."""
    types, cmds = _types(), commands()
    mods, funcs = module_names(), functions()
    out = []
    for span in sorted(spans(text)):
        if not TOKEN.fullmatch(span) or re.fullmatch(r"[A-Z0-9_]+|None|True|False", span):
            continue  # a sentence, a path, a frame, a metavariable (SEQ, REF), a constant
        call = span.endswith(")")
        name = span[: span.index("(")] if call else span
        parts = name.split(".")
        if call:  # ``f()``, ``sicbo.result(faces)`` (a module, maybe by its import's name)
            ok = parts[-1] in funcs
        elif name[0].isupper():  # a class, a game's member (``Rules``), or a hook of a class
            if len(parts) == 1:
                ok = name in classes() or any(has_member(c, name) for c in classes())
            else:
                ok = len(parts) == 2 and has_member(parts[0], parts[1])
        elif name.endswith((".log", ".jsonl")):  # a capture, named by its file
            ok = name in _capture_files()
        elif len(parts) > 1 and not name.endswith(".py"):
            ok = (
                name in types
                or name in cmds
                or (len(parts) == 2 and parts[1] in mods.get(parts[0], ()))
                or (parts[0] == "data" and parts[-1] in vocabulary())
            )
        else:
            ok = name in vocabulary()
        if not ok:
            out.append(span)
    return out


def test_every_name_procedures_md_gives_exists():
    bad = unknown_names(_text())
    assert not bad, (
        "docs/procedures.md names what the code does not have (renamed or removed? a class, "
        "a hook, an event type, a command, a function, a word): " + ", ".join(bad)
    )


def test_the_name_check_can_fail():
    ok = (
        "`card.dealt` `shoe.new` `rules.first_position` `data.device` `ShoeGame` "
        "`ShoeGame.commands` `first-card` `start_burn` `SEQ` `tablectl void hand`"
    )
    assert unknown_names(ok) == []
    bad = "`card.vanished` `ShoeGame.no_such_hook` `NoSuchGame` `no_such_key` `gone_away()` `x.y.z`"
    assert unknown_names(bad) == [
        "NoSuchGame",
        "ShoeGame.no_such_hook",
        "card.vanished",
        "gone_away()",
        "no_such_key",
        "x.y.z",
    ]


# -- every procedure is documented -------------------------------------------------------


def command_named(name: str, words: tuple[str, ...], found: set[str]) -> bool:
    """``name`` is named by its control command or by its ``tablectl`` words."""
    said = " ".join(words)
    return any(
        s == name
        or s.startswith(f"{name} ")
        or s == said
        or s.startswith(f"{said} ")
        or re.search(rf"tablectl (?:-\S+ )*{re.escape(said)}\b", s)
        for s in found
    )


def undocumented(text: str) -> dict[str, list[str]]:
    """What of the procedures ``text`` does not name, by what it is."""
    from daemon import games

    found = spans(text)
    installed = games.games()
    out: dict[str, list[str]] = {}
    out["games"] = [n for n in installed if n not in found]
    out["commands"] = sorted(
        f"{n}: {c}"
        for n, g in installed.items()
        for c, s in g.commands.items()
        if not command_named(c, s.cli_words(c), found)
    )
    keys: dict[str, set[str]] = {}
    for n, g in installed.items():
        for f in msgspec.structs.fields(g.Rules):
            keys.setdefault(f.encode_name, set()).add(n)
    out["house-rule keys"] = sorted(
        f"{k} ({', '.join(sorted(keys[k]))})"
        for k in keys
        if k not in found and not any(s.startswith((f"{k} =", f"{k}=")) for s in found)
    )
    out["alarm kinds"] = sorted(k for k in procedure_alarm_kinds() if k not in found)
    out["procedure modules"] = [
        m for m in procedure_modules() if m not in found and not _folder_named(m, found)
    ]
    return {k: v for k, v in out.items() if v}


def procedure_alarm_kinds(found: alarm_finder.Found | None = None) -> set[str]:
    """The alarm kinds raised in ``daemon/procedures/`` or a game's folder."""
    found = found or found_alarms()
    where = ("daemon/procedures/", "daemon/games/")
    return {k for k, places in found.kinds.items() if any(p.startswith(where) for p in places)}


def procedure_modules(root: Path = ROOT) -> list[str]:
    base = root / "daemon" / "procedures"
    return [
        p.relative_to(root).as_posix()
        for p in sorted(base.rglob("*.py"))
        if p.name != "__init__.py"
    ]


def _folder_named(module: str, found: Iterable[str]) -> bool:
    folder = module.rsplit("/", 1)[0] + "/"
    return folder != "daemon/procedures/" and folder in found


def test_every_procedure_is_documented():
    missing = undocumented(_text())
    assert not missing, "docs/procedures.md does not name: " + "; ".join(
        f"{what}: {', '.join(names)}" for what, names in missing.items()
    )


def test_the_procedure_check_can_fail():
    """Each kind of name, taken out of the doc, is reported (beside whatever is already)."""
    text = _text()
    before = undocumented(text)

    def added(changed: str) -> dict[str, list[str]]:
        after = undocumented(changed)
        return {k: sorted(set(v) - set(before.get(k, []))) for k, v in after.items()}

    gone = added(text.replace("`card-before-betting-closed`", "a card too early"))
    assert gone["alarm kinds"] == ["card-before-betting-closed"]
    gone = added(text.replace("`betting.open`", "").replace("betting open", ""))
    assert "baccarat: betting.open" in gone["commands"]
    gone = added(text.replace("`burn_between_hands`", "the burn"))
    assert gone["house-rule keys"] == ["burn_between_hands (baccarat, blackjack, dragon-tiger)"]
    gone = added(text.replace("`daemon/procedures/round.py`", ""))
    assert gone["procedure modules"] == ["daemon/procedures/round.py"]
