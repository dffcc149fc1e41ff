"""The contract read in another language (issue 33): Node's ajv in strict mode compiles the
shipped event schema (Draft 2020-12, no OpenAPI ``discriminator``) and validates every
captured event with it.

ajv comes from the npm registry (``tests/node/package.json``) into a scratch directory;
without node, npm or the registry the test skips, saying which.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "tests" / "node"
SCHEMA = ROOT / "docs" / "events.schema.json"


@pytest.fixture(scope="module")
def ajv(tmp_path_factory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed here")
    d = tmp_path_factory.mktemp("node")
    for f in NODE.iterdir():
        shutil.copy(f, d / f.name)
    r = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent"],
        cwd=d,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode != 0:
        pytest.skip(f"npm could not install ajv: {r.stderr.strip()[-300:]}")
    return d


def test_a_strict_validator_compiles_the_schema_and_every_captured_event_passes(ajv):
    captures = sorted(str(p) for p in (ROOT / "tests" / "captures").rglob("*.expected.jsonl"))
    r = subprocess.run(
        ["node", "validate_events.js", str(SCHEMA), *captures],
        cwd=ajv,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().endswith(" events, 0 failed"), r.stdout
    assert int(r.stdout.split()[-4]) > 7000  # every capture's events


def test_the_strict_validator_refuses_an_unknown_keyword(ajv, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(SCHEMA.read_text().replace('"$defs"', '"discriminator": {}, "$defs"', 1))
    r = subprocess.run(
        ["node", "validate_events.js", str(bad)], cwd=ajv, capture_output=True, text=True
    )
    assert r.returncode == 2 and 'unknown keyword: "discriminator"' in r.stdout, r.stdout
