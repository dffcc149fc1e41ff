"""The bus's frames that are not events have a schema too (issue 33): the heartbeat, the
journal state, the replay's request, end marker and error (``tabled_client/frames.py``,
``docs/bus.schema.json``). A live table's frames validate against it, and decode into
the Structs; the examples in docs/events.md do too."""

from __future__ import annotations

import json
import re

import jsonschema
import msgspec
import pytest
import zmq
from daemon_harness import ROOT, Daemon, endpoints, write_config
from tabled_client import frames, schema

#: the one committed copy; a built client carries it as package data (client/collect.py)
SHIPPED = ROOT / "docs" / "bus.schema.json"
STRUCT = {
    "heartbeat": frames.Heartbeat,
    "journal.state": frames.JournalState,
}


def validator() -> jsonschema.Draft202012Validator:
    s = json.loads(SHIPPED.read_text())
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def test_the_shipped_schema_is_what_the_structs_generate_and_strict():
    assert SHIPPED.read_text() == frames.text(), (
        "run `python -m tabled_client.frames --write docs/bus.schema.json`"
    )
    assert not (ROOT / "client" / "tabled_client" / "bus.schema.json").exists()  # no 2nd copy
    s = json.loads(SHIPPED.read_text())
    assert schema.keywords(s) <= schema.DRAFT_2020_12


def check(frame: dict, struct: type) -> None:
    v = validator()
    assert v.is_valid(frame), jsonschema.exceptions.best_match(v.iter_errors(frame))
    msgspec.convert(frame, struct)


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> list[tuple[dict, type]]:
    """A live table's heartbeats and replay answers, each with its Struct."""
    cfg = write_config(tmp_path_factory.mktemp("bus"))
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    got: list[tuple[dict, type]] = []
    ctx = zmq.Context()
    try:
        d.start()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"it.heartbeat")
        sub.setsockopt(zmq.RCVTIMEO, 5000)
        sub.connect(pub)
        for _ in range(2):
            _, body = sub.recv_multipart()
            got.append((json.loads(body), frames.Heartbeat))
        dealer = ctx.socket(zmq.DEALER)
        dealer.setsockopt(zmq.RCVTIMEO, 5000)
        dealer.connect(rep)
        for ask, struct in (
            ({"from": 1, "to": 2}, frames.ReplayEnd),
            ({"from": 99999}, frames.ReplayEnd),
            ({"from": 0}, frames.ReplayError),
        ):
            if ask["from"] >= 1:  # a well-formed request (the last is refused, on purpose)
                check(ask, frames.ReplayRequest)
            dealer.send(json.dumps(ask).encode())
            while True:
                frame = json.loads(dealer.recv())
                if "seq" not in frame:
                    got.append((frame, struct))
                    break
        sub.close()
        dealer.close()
    finally:
        ctx.term()
        d.stop()
        d.close()
    return got


def test_a_live_tables_frames_validate_and_decode(live):
    kinds = [s.__name__ for _, s in live]
    assert kinds == ["Heartbeat", "Heartbeat", "ReplayEnd", "ReplayEnd", "ReplayError"]
    for frame, struct in live:
        check(frame, struct)


def test_the_docs_examples_validate():
    text = (ROOT / "docs" / "events.md").read_text()
    examples = [
        json.loads(x)
        for x in re.findall(r"^(\{.*\"type\":\"(?:heartbeat|journal\.state)\".*\})$", text, re.M)
    ]
    assert {e["type"] for e in examples} == {"heartbeat", "journal.state"}
    for e in examples:
        check(e, STRUCT[e["type"]])


def test_the_schema_refuses_a_frame_that_is_not_one():
    v = validator()
    assert not v.is_valid({"type": "heartbeat", "v": 1, "table": "t"})  # no data
    assert not v.is_valid({"from": 0})
