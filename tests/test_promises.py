"""docs/reliability.md's promise → test table names only tests that exist.

The table is the contract (issue 18, acceptance 3): a promise whose test was renamed
or removed would read as held while nothing holds it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REF = re.compile(r"`([^`]+)`")


def _refs() -> list[tuple[str, str, str | None]]:
    """(promise, test file, test function or None) for every test the table names."""
    out = []
    for line in (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ["):
            continue
        _, promise, proof, *_ = line.split("|")
        current = None
        for ref in REF.findall(proof):
            name = ref.split()[0]
            if name.startswith("tests/"):
                current, _, fn = name.partition("::")
                out.append((promise.strip(), current, fn or None))
            elif name.startswith("::") and current is not None:
                out.append((promise.strip(), current, name[2:]))
    return out


def test_the_promise_table_names_tests_that_exist():
    refs = _refs()
    assert len(refs) > 30, "the table was not found"
    wrong = []
    for promise, path, fn in refs:
        f = ROOT / path
        if not f.is_file():
            wrong.append(f"{path} (for {promise[:60]})")
        elif fn is not None and not re.search(rf"^(async )?def {fn}\(", f.read_text(), re.M):
            wrong.append(f"{path}::{fn} (for {promise[:60]})")
    assert not wrong, "docs/reliability.md names tests that do not exist:\n" + "\n".join(wrong)
