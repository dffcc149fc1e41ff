"""tabled-client's event Structs and JSON Schema against what the daemon really publishes.

Every event in every capture's expected file (the daemon's own bytes) must validate against
the shipped schema, declare no field the schema lacks, decode into its typed Struct and
verify with the client's chain check. The schema shipped must be what the Structs generate.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import msgspec
import pytest
from tabled_client import GENESIS, Chain, ChainBroken, UnknownEventType, decode, events, schema

from daemon.journal.events import Draft, draft

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = sorted((ROOT / "tests" / "captures").rglob("*.expected.jsonl"))
#: the one committed copy; a built client carries it as package data (client/collect.py)
SHIPPED = ROOT / "docs" / "events.schema.json"


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    s = json.loads(SHIPPED.read_text())
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


@functools.cache
def _type_validator(type_: str) -> jsonschema.Draft202012Validator:
    """The branch of the union whose ``type`` is the event's (each branch names its one)."""
    s = _validator().schema
    (ref,) = [
        b["$ref"]
        for b in s["anyOf"]
        if s["$defs"][b["$ref"].rsplit("/", 1)[1]]["properties"]["type"]["enum"] == [type_]
    ]
    return jsonschema.Draft202012Validator({"$defs": s["$defs"], "$ref": ref})


def test_the_schema_uses_only_draft_2020_12_keywords():
    """A strict validator (ajv 8's strict mode) compiles it: no OpenAPI ``discriminator``, no
    keyword outside the draft's vocabularies (issue 33)."""
    s = json.loads(SHIPPED.read_text())
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema.keywords(s) <= schema.DRAFT_2020_12, schema.keywords(s) - schema.DRAFT_2020_12
    assert "discriminator" not in SHIPPED.read_text()
    assert schema.keywords({"anyOf": [{"discriminator": {}}]}) == {"anyOf", "discriminator"}


def test_the_one_committed_schema_is_what_the_structs_generate():
    """One copy in the repository, ``docs/``; the client package gets it when it is built,
    so a second copy in ``client/`` would be one kept by hand."""
    assert SHIPPED.read_text() == schema.text(), (
        "run `python -m tabled_client.schema --write docs/events.schema.json`"
    )
    assert not (ROOT / "client" / "tabled_client" / "events.schema.json").exists()
    assert schema.shipped() == schema.generate()  # a checkout: generated from the Structs


def test_there_are_captures_of_every_game():
    games = {p.parent.name for p in EXPECTED}
    assert {
        "shoe-line",
        "cammegh-ss2",
        "cammegh-m360",
        "dice-ref",
        "dragon-tiger",
        "blackjack",
        "tile-line",
    } <= games


@pytest.mark.parametrize("path", EXPECTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_captured_event_validates_against_the_schema_and_its_struct(path: Path):
    defs = _validator().schema["$defs"]
    seen: set[str] = set()
    lines = path.read_bytes().splitlines()
    assert lines, path
    chain = Chain(json.loads(lines[0])["table"])
    for raw in lines:
        ev = json.loads(raw)
        v = _validator() if ev["type"] not in seen else _type_validator(ev["type"])
        seen.add(ev["type"])  # the whole union for each type's first event, then its branch
        if not v.is_valid(ev):
            error = jsonschema.exceptions.best_match(v.iter_errors(ev))
            pytest.fail(f"{path.name} seq {ev['seq']}: {error}")
        # the schema is lenient about new fields (a compatible change), so check the daemon
        # publishes none the schema does not declare
        typed = decode(raw)
        name = type(typed.data).__name__
        undeclared = set(ev["data"]) - set(defs[name]["properties"])
        assert not undeclared, f"{ev['type']} seq {ev['seq']}: {undeclared} not in the schema"
        assert typed.type == ev["type"] and typed.seq == ev["seq"]
        assert msgspec.to_builtins(typed.data) == ev["data"]  # nothing lost in the Struct
        chain.check(raw)
    assert chain.head.seq == len(lines)


def test_the_schema_rejects_what_is_not_an_event():
    v = _validator()
    good = json.loads(EXPECTED[0].read_bytes().splitlines()[0])
    assert v.is_valid(good)
    for bad in (
        {**good, "type": "card.teleported"},
        {**good, "seq": 0},
        {**good, "hash": "xyz"},
        {k: x for k, x in good.items() if k != "prev"},
    ):
        assert not v.is_valid(bad), bad
    dealt = next(
        json.loads(r) for p in EXPECTED for r in p.read_bytes().splitlines() if b"card.dealt" in r
    )
    assert v.is_valid(dealt)
    assert not v.is_valid({**dealt, "data": {**dealt["data"], "hand": "two"}})
    assert not v.is_valid(
        {**dealt, "data": {k: x for k, x in dealt["data"].items() if k != "card"}}
    )


def test_every_event_type_has_a_struct_and_a_section_in_events_md():
    md = (ROOT / "docs" / "events.md").read_text()
    for t in events.DATA:
        assert f"### `{t}`" in md, f"{t} has a Struct but no section in docs/events.md"
    assert set(events.EVENTS) == set(events.DATA)
    assert events.EVENTS["card.dealt"] is events.CardDealt  # type: ignore[attr-defined]


def test_the_daemon_builds_only_what_the_structs_allow():
    ok = draft("alarm.cleared", {"id": "A1", "by": "pit-boss", "reason": "hand voided"})
    assert ok == Draft("alarm.cleared", {"id": "A1", "by": "pit-boss", "reason": "hand voided"})
    with pytest.raises(TypeError, match=r"alarm\.cleared: Unexpected keyword argument 'colour'"):
        draft("alarm.cleared", {"id": "A1", "by": "x", "reason": "y", "colour": "red"})
    with pytest.raises(TypeError, match="Missing required argument 'reason'"):
        draft("alarm.cleared", {"id": "A1", "by": "x"})
    with pytest.raises(msgspec.ValidationError, match=r"alarm.cleared: Expected `str`, got `int`"):
        draft("alarm.cleared", {"id": 1, "by": "x", "reason": "y"})
    with pytest.raises(UnknownEventType, match=r"card\.teleported"):
        draft("card.teleported", {})


def _outcome(f, *args):  # type: ignore[no-untyped-def]
    try:
        return ("ok", f(*args))
    except Exception as e:
        return (type(e).__name__, str(e))


def test_check_data_in_one_conversion_agrees_with_the_steps_on_every_captured_event():
    """``check_data``'s one conversion (a per-event cost) passes and fails exactly where the
    steps it stands in for do: every captured event, and each one spoiled four ways."""
    quick = 0
    for path in EXPECTED:
        for line in path.read_text().splitlines():
            ev = json.loads(line)
            cls = type(decode(line.encode()).data)  # a shared type: the game's own Struct
            data = ev["data"]
            first = next(iter(data), None)
            spoiled = [
                data,
                {**data, "colour": "red"},  # unknown
                {k: v for k, v in data.items() if k != first},  # one missing
                {**data, **({first: object()} if first else {})},  # what JSON cannot carry
                {**data, **({first: (b"x", 1.5)} if first else {})},  # a wrong type
            ]
            for d in spoiled:
                got = _outcome(events.check_data, ev["type"], d)
                steps = _outcome(events._in_steps, cls, ev["type"], d)
                if got[0] != "ok" and len(events.VARIANTS[ev["type"]]) > 1:
                    # a type several games share: refused by each game's Struct, reported as
                    # by the one the data is closest to, its own game's
                    got = (got[0], got[1].split(" (as ")[0])
                assert got == steps, (path.name, ev["type"], d)
            quick += bool(events._quick[cls][0])
    assert quick > 1000  # most events take the one conversion


def test_decode_names_an_event_type_this_client_does_not_know():
    raw = EXPECTED[0].read_bytes().splitlines()[0]
    ev = json.loads(raw)
    with pytest.raises(UnknownEventType, match=r"'hand\.teleported'"):
        decode(json.dumps({**ev, "type": "hand.teleported"}).encode())


def _events(n: int) -> list[bytes]:
    return EXPECTED[0].read_bytes().splitlines()[:n]


def test_the_chain_check_raises_on_a_gap_a_reorder_an_edit_and_another_table():
    evs = _events(4)
    table = json.loads(evs[0])["table"]
    c = Chain(table)
    c.check(evs[0])
    with pytest.raises(ChainBroken, match="seq 3 after 1"):
        c.check(evs[2])
    c = Chain(table)
    c.check(evs[0])
    edited = evs[1].replace(b'"data":{', b'"data":{"added":1,')
    assert edited != evs[1]
    with pytest.raises(ChainBroken, match="hash does not match"):
        c.check(edited)
    with pytest.raises(ChainBroken, match=f"event of table '{table}'"):
        Chain("other").check(evs[0])
    forged = json.loads(evs[1])
    forged["prev"] = GENESIS
    with pytest.raises(ChainBroken, match="is not the hash of seq 1"):
        Chain(table, seq=1, hash=json.loads(evs[0])["hash"]).check(json.dumps(forged).encode())


def test_the_chain_resumes_from_a_known_head_and_restarts_on_a_new_journal():
    evs = _events(3)
    head = json.loads(evs[1])
    c = Chain(head["table"], journal_id="j1", seq=2, hash=head["hash"])
    c.check(evs[2], journal_id="j1")
    assert c.head.seq == 3
    c.check(evs[0], journal_id="j2")  # a replaced journal starts again at seq 1
    assert (c.head.journal_id, c.head.seq) == ("j2", 1)
