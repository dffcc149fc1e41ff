"""Every alarm kind the daemon's code can raise, found from the code's syntax trees.

A kind reaches ``alarm.raised`` only through ``raise_alarm`` (``daemon/table/table.py``, the one
place that adds that event). Many callers hand it on through helpers of their own
(``raise_or_repeat``, ``device_fault``, the shoe's ``_pause`` and ``_set_aside``…), so a
search for literal ``raise_alarm(t, d, "kind"`` calls misses what the helpers raise (the
shoe's ``card-before-betting-closed`` was never checked). Here:

1. a *raiser* is ``raise_alarm`` (its kind: the third argument, or ``kind=``);
2. a function that hands one of its own parameters to a raiser as the kind is a raiser
   too, at that parameter's place (repeated until no new one is found);
3. at every call of a raiser the kind is read: a string literal, a module-level string
   constant, either branch of ``a if c else b``, a local variable (every value assigned
   to it in the function), or the caller's own parameter (then the caller is a raiser).

A call is matched to the function it calls as Python would find it: ``self.m``/``cls.m``
through the caller's class and its bases, ``super().m`` past the caller's class, a bare
name in its module or where it was imported from, ``module.f`` by the module imported;
only when that finds nothing, every function of that name whose signature fits the call,
the nearest first (same module, then same folder): two games' ``_pause`` are not confused.

Anything else (a kind computed at run time) is *unresolved*: the test that uses this fails
on it and names the line, so a new way of raising an alarm cannot hide its kind from the
doc check: give the kind as a literal or a constant.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: the function that adds ``alarm.raised``, and the kind's place among its arguments
ROOT_RAISER = ("raise_alarm", 2, "kind")

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Found:
    """Kind → the places (``file:line``) raising it; and the calls whose kind is unknown."""

    kinds: dict[str, set[str]] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)


@dataclass(eq=False)
class _Class:
    name: str
    module: _Module
    bases: list[ast.expr]
    methods: dict[str, _Func] = field(default_factory=dict)


@dataclass(eq=False)
class _Func:
    node: FuncNode
    module: _Module
    cls: _Class | None
    #: parameter name → its index among a call's positional arguments (None: keyword-only)
    params: dict[str, int | None]
    star_args: bool
    star_kwargs: bool


@dataclass(eq=False)
class _Module:
    rel: str
    dotted: str
    tree: ast.Module
    functions: dict[str, _Func] = field(default_factory=dict)
    classes: dict[str, _Class] = field(default_factory=dict)
    #: local name → (module dotted name, attribute or None for the module itself)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    constants: dict[str, set[str]] = field(default_factory=dict)


def _params(fn: FuncNode, in_class: bool) -> dict[str, int | None]:
    static = any(isinstance(x, ast.Name) and x.id == "staticmethod" for x in fn.decorator_list)
    positional = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    if in_class and not static and positional:  # self / cls: not among the call's arguments
        positional = positional[1:]
    out: dict[str, int | None] = {name: i for i, name in enumerate(positional)}
    out.update({a.arg: None for a in fn.args.kwonlyargs})
    return out


def _func(fn: FuncNode, m: _Module, cls: _Class | None) -> _Func:
    a = fn.args
    return _Func(
        fn, m, cls, _params(fn, cls is not None), a.vararg is not None, a.kwarg is not None
    )


class _Index:
    """The modules scanned, their functions, classes, imports and string constants."""

    def __init__(self, root: Path, packages: Iterable[str]) -> None:
        self.modules: dict[str, _Module] = {}
        self.funcs: list[_Func] = []
        for pkg in packages:
            for py in sorted((root / pkg).rglob("*.py")):
                rel = py.relative_to(root).as_posix()
                dotted = rel[:-3].replace("/", ".").removesuffix(".__init__")
                m = _Module(rel, dotted, ast.parse(py.read_text(encoding="utf-8"), rel))
                self.modules[dotted] = m
                self._read(m)
        self.by_name: dict[str, list[_Func]] = {}
        for f in self.funcs:
            self.by_name.setdefault(f.node.name, []).append(f)
        self.classes: dict[str, list[_Class]] = {}
        for m in self.modules.values():
            for c in m.classes.values():
                self.classes.setdefault(c.name, []).append(c)

    def _read(self, m: _Module) -> None:
        for node in m.tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    m.imports[a.asname or a.name.split(".")[0]] = (
                        (a.name, None) if a.asname else (a.name.split(".")[0], None)
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    m.imports[a.asname or a.name] = (node.module, a.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                value = node.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name):
                            m.constants.setdefault(t.id, set()).add(value.value)
        self._defs(m, m.tree, None)

    def _defs(self, m: _Module, node: ast.AST, cls: _Class | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FuncNode):
                f = _func(child, m, cls)
                self.funcs.append(f)
                if cls is not None and node is not m.tree:
                    cls.methods.setdefault(child.name, f)
                elif node is m.tree:
                    m.functions[child.name] = f
                self._defs(m, child, None)
            elif isinstance(child, ast.ClassDef):
                c = _Class(child.name, m, list(child.bases))
                if node is m.tree:
                    m.classes[child.name] = c
                self._defs(m, child, c)
            else:
                self._defs(m, child, cls)

    # -- what a name means ------------------------------------------------------------

    def module_named(self, m: _Module, name: str) -> _Module | None:
        """The module ``name`` stands for in ``m`` (``import x.y as z``, ``from x import y``)."""
        if name not in m.imports:
            return None
        mod, attr = m.imports[name]
        return self.modules.get(mod if attr is None else f"{mod}.{attr}")

    def function(self, m: _Module, name: str, seen: int = 0) -> _Func | None:
        """The top-level function ``name`` means in ``m``, through its imports."""
        if name in m.functions:
            return m.functions[name]
        if name in m.imports and seen < 5:
            mod, attr = m.imports[name]
            target = self.modules.get(mod)
            if attr is not None and target is not None:
                return self.function(target, attr, seen + 1)
        return None

    def class_named(self, m: _Module, name: str) -> _Class | None:
        if name in m.classes:
            return m.classes[name]
        if name in m.imports:
            mod, attr = m.imports[name]
            target = self.modules.get(mod)
            if attr is not None and target is not None:
                return self.class_named(target, attr) if target is not m else None
        same = self.classes.get(name, [])
        return same[0] if len(same) == 1 else None

    def mro(self, cls: _Class) -> Iterator[_Class]:
        seen: set[int] = set()
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if id(c) in seen:
                continue
            seen.add(id(c))
            yield c
            for b in c.bases:
                name = b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)
                base = self.class_named(c.module, name) if name else None
                if base is not None:
                    todo.append(base)

    def constant(self, m: _Module, name: str) -> set[str] | None:
        if name in m.constants:
            return m.constants[name]
        if name in m.imports:
            mod, attr = m.imports[name]
            target = self.modules.get(mod)
            if attr is not None and target is not None and target is not m:
                return self.constant(target, attr)
        return None

    # -- what a call calls ------------------------------------------------------------

    def targets(self, call: ast.Call, caller: _Func | None, m: _Module) -> list[_Func]:
        f = call.func
        if isinstance(f, ast.Name):
            found = self.function(m, f.id)
            return [found] if found else self._by_name(f.id, call, m)
        if not isinstance(f, ast.Attribute):
            return []
        v = f.value
        cls = caller.cls if caller is not None else None
        start: _Class | None = None
        skip_own = False
        if isinstance(v, ast.Name) and v.id in ("self", "cls"):
            start = cls
        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
            start, skip_own = cls, True
        elif isinstance(v, ast.Name):
            mod = self.module_named(m, v.id)
            if mod is not None:
                found = self.function(mod, f.attr)
                return [found] if found else []
            start = self.class_named(m, v.id)
        if start is not None:
            for c in self.mro(start):
                if skip_own and c is start:
                    continue
                if f.attr in c.methods:
                    return [c.methods[f.attr]]
        return self._by_name(f.attr, call, m)

    def _by_name(self, name: str, call: ast.Call, m: _Module) -> list[_Func]:
        """Every function of that name whose signature fits the call, the nearest first."""
        fits = [fn for fn in self.by_name.get(name, ()) if _fits(fn, call)]
        here = [fn for fn in fits if fn.module is m]
        if here:
            return here
        folder = m.rel.rsplit("/", 1)[0]
        near = [fn for fn in fits if fn.module.rel.rsplit("/", 1)[0] == folder]
        return near or fits


def _fits(fn: _Func, call: ast.Call) -> bool:
    positional = sum(1 for a in call.args if not isinstance(a, ast.Starred))
    n_pos = sum(1 for i in fn.params.values() if i is not None)
    if positional > n_pos and not fn.star_args:
        return False
    names = {kw.arg for kw in call.keywords if kw.arg is not None}
    return fn.star_kwargs or names <= set(fn.params)


def _kind_arg(call: ast.Call, position: int | None, param: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    if position is not None and position < len(call.args):
        arg = call.args[position]
        return None if isinstance(arg, ast.Starred) else arg
    return None


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``node``'s own body, not those of the functions and classes in it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, FuncNode | ast.Lambda | ast.ClassDef):
            continue
        yield child
        yield from _own_nodes(child)


def _assigned(fn: _Func, name: str) -> list[ast.expr] | None:
    """Every value ``name`` is given in ``fn`` (``x = …``, ``x, y = …, …``), or None when
    one cannot be read (an unpacked call, a loop variable, ``x += …``)."""
    out: list[ast.expr] = []
    for node in _own_nodes(fn.node):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    out.append(node.value)
                elif isinstance(t, ast.Tuple) and any(
                    isinstance(e, ast.Name) and e.id == name for e in t.elts
                ):
                    if not isinstance(node.value, ast.Tuple) or len(node.value.elts) != len(t.elts):
                        return None
                    i = next(
                        i for i, e in enumerate(t.elts) if isinstance(e, ast.Name) and e.id == name
                    )
                    out.append(node.value.elts[i])
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                out.append(node.value)
        elif isinstance(node, ast.AugAssign | ast.For | ast.With | ast.NamedExpr):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)) and not (
                isinstance(node, ast.For | ast.With) and name not in _bound(node)
            ):
                return None
    return out or None


def _bound(node: ast.For | ast.With) -> set[str]:
    targets = [node.target] if isinstance(node, ast.For) else [i.optional_vars for i in node.items]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


class _Reader:
    """The strings a kind argument can be."""

    def __init__(self, index: _Index) -> None:
        self.index = index

    def values(
        self, expr: ast.expr, fn: _Func | None, m: _Module, depth: int = 0
    ) -> set[str] | None:
        if depth > 10:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.IfExp):
            a = self.values(expr.body, fn, m, depth + 1)
            b = self.values(expr.orelse, fn, m, depth + 1)
            return None if a is None or b is None else a | b
        if isinstance(expr, ast.Name):
            if fn is not None and (given := _assigned(fn, expr.id)) is not None:
                out: set[str] = set()
                for v in given:
                    got = self.values(v, fn, m, depth + 1)
                    if got is None:
                        return None
                    out |= got
                return out
            return self.index.constant(m, expr.id)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            mod = self.index.module_named(m, expr.value.id)
            return None if mod is None else self.index.constant(mod, expr.attr)
        return None


def find(root: Path, packages: Iterable[str] = ("daemon",)) -> Found:
    """Every alarm kind raised by the modules of ``packages`` under ``root``."""
    index = _Index(root, packages)
    name, pos, param = ROOT_RAISER
    raisers: dict[int, set[tuple[int | None, str]]] = {
        id(f): {(pos, param)} for f in index.funcs if f.node.name == name and f.cls is None
    }
    bodies: list[tuple[_Func | None, _Module, ast.AST]] = [
        (None, m, m.tree) for m in index.modules.values()
    ]
    bodies += [(f, f.module, f.node) for f in index.funcs]
    bodies += [  # class bodies: calls outside any method
        (None, m, n)
        for m in index.modules.values()
        for n in ast.walk(m.tree)
        if isinstance(n, ast.ClassDef)
    ]
    calls = [
        (fn, m, node, index.targets(node, fn, m))
        for fn, m, body in bodies
        for node in _own_nodes(body)
        if isinstance(node, ast.Call)
    ]
    changed = True
    while changed:  # step 2: a function passing its own parameter on as a kind is a raiser
        changed = False
        for fn, _, call, targets in calls:
            if fn is None:
                continue
            for target in targets:
                for p, name_ in list(raisers.get(id(target), ())):
                    arg = _kind_arg(call, p, name_)
                    if isinstance(arg, ast.Name) and arg.id in fn.params:
                        how = (fn.params[arg.id], arg.id)
                        if how not in raisers.setdefault(id(fn), set()):
                            raisers[id(fn)].add(how)
                            changed = True
    out = Found()
    reader = _Reader(index)
    for fn, m, call, targets in calls:
        for target in targets:
            for p, name_ in raisers.get(id(target), ()):
                arg = _kind_arg(call, p, name_)
                if arg is None:  # left to its default: read where the default is
                    continue
                if fn is not None and isinstance(arg, ast.Name) and arg.id in fn.params:
                    continue  # the caller's parameter: the caller is a raiser (step 2)
                values = reader.values(arg, fn, m)
                place = f"{m.rel}:{call.lineno}"
                if values is None:
                    out.unresolved.append(f"{place}: {target.node.name}(…, {ast.unparse(arg)}, …)")
                for v in values or ():
                    out.kinds.setdefault(v, set()).add(place)
    return out
