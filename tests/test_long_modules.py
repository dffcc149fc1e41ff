"""Small modules, one job each: a module of ``daemon/`` or ``drivers/`` longer than
:data:`LIMIT` lines says why in its docstring, in a paragraph that starts ``Why long:``
or a line saying it is long(er) because … (``docs/architecture.md``, "Long modules")."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 400
MARK = re.compile(r"^(Why long: \S|.*\blong(er)?\b.*\bbecause\b)", re.M | re.I)

#: being split by other work in flight: reported, not failed, until it lands
SPLITTING: frozenset[str] = frozenset()
#: no module of these folders is longer than this, whatever its docstring says (issue 29)
HARD_LIMIT = 500
HARD_LIMITED = ("drivers",)


def unexplained(root: Path = ROOT) -> list[str]:
    """The long modules whose docstring does not say why they are long, with their length."""
    out = []
    for pkg in ("daemon", "drivers"):
        for path in sorted((root / pkg).rglob("*.py")):
            text = path.read_text()
            n = len(text.splitlines())
            if n > LIMIT and not MARK.search(ast.get_docstring(ast.parse(text)) or ""):
                out.append(f"{path.relative_to(root).as_posix()} ({n} lines)")
    return out


def over_hard_limit(root: Path = ROOT) -> list[str]:
    """The modules of :data:`HARD_LIMITED` folders longer than :data:`HARD_LIMIT` lines."""
    out = []
    for pkg in HARD_LIMITED:
        for path in sorted((root / pkg).rglob("*.py")):
            n = len(path.read_text().splitlines())
            if n > HARD_LIMIT:
                out.append(f"{path.relative_to(root).as_posix()} ({n} lines)")
    return out


def test_no_driver_module_is_over_the_hard_limit():
    late = over_hard_limit()
    assert not late, (
        f"longer than {HARD_LIMIT} lines, which no reason excuses: split it by job\n"
        + "\n".join(late)
    )


def test_the_hard_limit_can_fail(tmp_path: Path):
    pkg = tmp_path / "drivers" / "sim"
    pkg.mkdir(parents=True)
    (pkg / "big.py").write_text('"""Why long: it says so."""\n' + "x = 1\n" * HARD_LIMIT)
    (pkg / "fits.py").write_text("x = 1\n" * HARD_LIMIT)
    assert over_hard_limit(tmp_path) == [f"drivers/sim/big.py ({HARD_LIMIT + 1} lines)"]


def test_every_long_module_says_why_it_is_long():
    missing = unexplained()
    pending = [m for m in missing if m.split(" ")[0] in SPLITTING]
    if pending:
        warnings.warn(
            "long, without a 'Why long:' line, being split: " + ", ".join(pending), stacklevel=1
        )
    late = [m for m in missing if m.split(" ")[0] not in SPLITTING]
    assert not late, (
        f"longer than {LIMIT} lines with no 'Why long:' paragraph in the module docstring "
        "(split it by job, or say why it stays long):\n" + "\n".join(late)
    )


def test_the_check_can_fail(tmp_path: Path):
    pkg = tmp_path / "drivers"
    pkg.mkdir()
    body = "x = 1\n" * (LIMIT + 1)
    (pkg / "long.py").write_text('"""A driver."""\n' + body)
    (pkg / "said.py").write_text('"""A driver.\n\nWhy long: one grammar, read whole."""\n' + body)
    (pkg / "too.py").write_text(
        '"""A driver.\n\nLonger than most because it is one grammar."""\n' + body
    )
    (pkg / "vague.py").write_text('"""A driver, a long one."""\n' + body)
    (pkg / "short.py").write_text('"""A driver."""\nx = 1\n')
    assert unexplained(tmp_path) == [
        f"drivers/long.py ({LIMIT + 2} lines)",
        f"drivers/vague.py ({LIMIT + 2} lines)",
    ]
