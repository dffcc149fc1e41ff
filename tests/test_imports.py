"""The import rules of docs/architecture.md, checked by walking every module's imports with ast.

* ``drivers/`` imports nothing from ``daemon/`` (the ground floor);
* a game's folder imports no other game's folder;
* no import cycles between modules of ``daemon/`` and ``drivers/``, counting imports made
  inside functions too (a deferred import is still a dependency) but not those under
  ``if TYPE_CHECKING:`` (annotations only).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("daemon", "drivers")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of ours that ``path`` imports, resolved to module names."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()

    def add(target: str) -> None:
        # ``from a.b import c``: c may be a module (a.b.c) or a name in a.b
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            for sub in ast.walk(node) if not isinstance(node, ast.If) else [node]:
                if isinstance(sub, ast.If) and sub is node:
                    if not _type_checking(sub):
                        walk(sub.body)
                    walk(sub.orelse)
                elif isinstance(sub, ast.If) and _type_checking(sub):
                    continue
                elif isinstance(sub, ast.Import):
                    for a in sub.names:
                        add(a.name)
                elif isinstance(sub, ast.ImportFrom):
                    base = sub.module or ""
                    if sub.level:
                        pkg = name if is_pkg else name.rpartition(".")[0]
                        for _ in range(sub.level - 1):
                            pkg = pkg.rpartition(".")[0]
                        base = f"{pkg}.{base}" if base else pkg
                    for a in sub.names:
                        add(f"{base}.{a.name}")

    walk(ast.parse(path.read_text(encoding="utf-8")).body)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    g = {m: imports_of(p, m, known) for m, p in mods.items()}
    # a package's __init__ importing its own submodules is how a package presents itself;
    # a submodule importing a sibling through the package is the same edge, not a cycle
    for m, deps in g.items():
        g[m] = {x for x in deps if not m.startswith(x + ".")}
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_drivers_import_nothing_from_daemon():
    g = graph()
    upward = sorted(
        f"{m} imports {x}"
        for m, deps in g.items()
        if m.startswith("drivers")
        for x in deps
        if x.startswith("daemon")
    )
    assert not upward, "drivers/ is the ground floor:\n" + "\n".join(upward)


def test_no_game_imports_another_game():
    g = graph()

    def game_of(m: str) -> str | None:
        """A game is a folder of ``daemon/games/``; its modules beside (describe.py) are not."""
        parts = m.split(".")
        return (
            parts[2]
            if len(parts) > 2
            and parts[:2] == ["daemon", "games"]
            and (ROOT / "daemon" / "games" / parts[2]).is_dir()
            else None
        )

    crossing = sorted(
        f"{m} imports {x}"
        for m, deps in g.items()
        if game_of(m)
        for x in deps
        if game_of(x) not in (None, game_of(m))
    )
    assert not crossing, "\n".join(crossing)


def test_views_import_only_the_client_library():
    """views/ (tabled-display) is a backend of the bus: it imports tabled_client, never the
    daemon, the drivers or the bridge, so it can show only what the table published."""
    crossing = []
    for path in sorted((ROOT / "views").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            bad = {n.split(".")[0] for n in names} & {"daemon", "drivers", "bridge", "bench"}
            crossing += [f"{path.relative_to(ROOT)} imports {b}" for b in sorted(bad)]
    assert not crossing, "\n".join(crossing)


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in found)


def test_the_checks_can_fail():
    """The walker sees an import, an upward one and a cycle when there is one."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    known = set(modules())
    here = imports_of(ROOT / "daemon" / "table" / "table.py", "daemon.table.table", known)
    assert "daemon.journal.events" in here and "drivers.readings" in here


def test_the_daemon_loads_cryptography_only_for_a_checkpoint_key():
    """cryptography is ~8 MiB resident (docs/performance-history.md, Memory): the daemon imports it
    when a checkpoint key is loaded, not at start; a top-level import would bring it back."""
    import subprocess
    import sys

    code = (
        "import sys, daemon.runtime.app, daemon.bus.subscriber, daemon.security\n"
        "assert 'cryptography' not in sys.modules, sorted(sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_checkpoint_key_is_loaded_and_used_without_cryptographys_serialization(tmp_path):
    """A keyed start loads the key, checks the stored proofs and signs heads; cryptography's
    ``serialization`` (PEM, SSH and cipher modules: ~6 ms of the keyed crash start,
    docs/performance.md) is imported for none of it when the key is in the form
    ``tablectl keys --checkpoint`` writes."""
    import subprocess
    import sys

    from daemon.ctl.keys import create_checkpoint

    _, secret, kid = create_checkpoint(tmp_path, "cp")
    code = (
        "import sys, daemon.runtime.app\n"
        "from daemon.security import Checkpointer\n"
        f"c = Checkpointer.load({str(secret)!r})\n"
        "cp = c('t1', 'j-1', 7, 'ab' * 32)\n"
        "assert c.verify(cp) and not c.verify(dict(cp, seq=8))\n"
        "assert 'cryptography.hazmat.primitives.serialization' not in sys.modules\n"
        "print(c.key_id)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == kid


def tier_problems(root: Path) -> list[str]:
    """What breaks docs/architecture.md's tiers: a module at ``daemon/``'s top level, or a
    subpackage of ``daemon/`` without its row in the Folders table."""
    daemon = root / "daemon"
    folders = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    out = [
        f"daemon/{p.name}: a module at daemon/'s top level; it belongs in its tier's subpackage"
        for p in sorted(daemon.glob("*.py"))
        if p.name != "__init__.py"
    ]
    out += [
        f"daemon/{d.name}/: no row in docs/architecture.md's Folders table"
        for d in sorted(daemon.iterdir())
        if (d / "__init__.py").exists() and f"| `daemon/{d.name}/` |" not in folders
    ]
    return out


def test_daemon_keeps_its_modules_in_the_tiers():
    problems = tier_problems(ROOT)
    assert not problems, "\n".join(problems)


def test_the_tier_check_can_fail(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text("| `daemon/table/` | the table |\n")
    for d in ("table", "bus"):
        (tmp_path / "daemon" / d).mkdir(parents=True)
        (tmp_path / "daemon" / d / "__init__.py").write_text("")
    (tmp_path / "daemon" / "__init__.py").write_text("")
    (tmp_path / "daemon" / "wiring.py").write_text("")
    assert tier_problems(tmp_path) == [
        "daemon/wiring.py: a module at daemon/'s top level; it belongs in its tier's subpackage",
        "daemon/bus/: no row in docs/architecture.md's Folders table",
    ]
