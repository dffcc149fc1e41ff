"""The canonical number form, specified exactly so any language reproduces it (issue 33):
docs/events.md, Canonical JSON, states the rule this test holds msgspec's encoder to, on
the boundaries and on a quarter of a million random doubles; and the method that needs
no encoder at all (cut the ``"hash"`` member out of the received bytes) verifies every
captured event, the 448 with an integral float (``"mono":10.0``) among them."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from decimal import Decimal
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
ENC = msgspec.json.Encoder()


def number(x: float) -> str:
    """docs/events.md's rule for a float: the shortest digits that read back as the same
    double; a decimal with a digit after the point for 1e-5 <= |x| < 1e16, else
    ``d[.ddd]eN`` with no ``+`` and no leading zeros."""
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    t = Decimal(repr(x)).normalize().as_tuple()  # repr: the shortest round-trip digits
    digits = "".join(map(str, t.digits))
    point = len(digits) + int(t.exponent)  # x = ±0.DIGITS × 10**point
    sign = "-" if t.sign else ""
    if 1e-5 <= abs(x) < 1e16:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    rest = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{rest}e{point - 1}"


def test_the_rule_is_msgspecs_on_the_boundaries_and_random_doubles():
    edges = [1e-5, 9.999999999999999e-6, 1e16, 9999999999999998.0, 0.0, -0.0, 5e-324]
    edges += [1.7976931348623157e308, 4.0, 10.0, -0.5, 0.1, 2.0**53, 1398.926016149]
    rnd = random.Random(33)
    rand = [rnd.uniform(-1e6, 1e6) for _ in range(50_000)]
    rand += [rnd.choice((1, -1)) * 10 ** rnd.uniform(-30, 30) for _ in range(200_000)]
    rand += [float(rnd.randint(-(10**9), 10**9)) for _ in range(10_000)]
    bad = [(x, ENC.encode(x).decode(), number(x)) for x in edges + rand]
    bad = [b for b in bad if b[1] != b[2]]
    assert not bad, bad[:5]


def test_integers_and_floats_are_different_bytes():
    assert ENC.encode([0, 0.0, -1, 4.0, 10**20]) == b"[0,0.0,-1,4.0,100000000000000000000]"


def cut(raw: bytes) -> bytes:
    """The canonical body: the received bytes without the top-level ``"hash":"…",`` member
    (the last one: ``data`` sorts before it and no later member can hold the text)."""
    i = raw.rindex(b'"hash":"')
    return raw[:i] + raw[i + len(b'"hash":"') + 64 + 2 :]


def test_cutting_the_hash_out_verifies_every_captured_event():
    checked = integral = 0
    for exp in sorted((ROOT / "tests" / "captures").rglob("*.expected.jsonl")):
        prev = "0" * 64
        for raw in exp.read_bytes().splitlines():
            h = json.loads(raw)["hash"]
            assert hashlib.sha256(bytes.fromhex(prev) + cut(raw)).hexdigest() == h, exp
            integral += re.search(rb":-?\d+\.0[,}]", raw) is not None
            prev, checked = h, checked + 1
    assert checked > 7000 and integral > 400, (checked, integral)


def test_the_worked_example_in_the_docs_is_right():
    text = (ROOT / "docs" / "events.md").read_text()
    block = text.split("Worked example", 1)[1]
    raw, body, digest = re.findall(r"^(?:raw|body|hash) +(.+)$", block, re.M)[:3]
    prev = json.loads(raw)["prev"]
    assert cut(raw.encode()).decode() == body
    assert hashlib.sha256(bytes.fromhex(prev) + body.encode()).hexdigest() == digest
    assert json.loads(raw)["hash"] == digest
