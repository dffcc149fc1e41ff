"""The JSON Schema of every event type, generated from the Structs in ``events``.

``python -m tabled_client.schema`` prints it; ``--write`` updates the shipped
``events.schema.json`` (and the project keeps a copy in ``docs/``). A test
checks that the shipped file equals what the Structs generate.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from tabled_client.events import SCHEMA_VERSION, AnyEvent

SCHEMA_FILE = "events.schema.json"


def generate() -> dict[str, Any]:
    schema = msgspec.json.schema(AnyEvent)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"tabled events, schema version {SCHEMA_VERSION}",
        "description": "One tabled event (the envelope with its type's data). "
        "Generated from tabled_client.events; do not edit.",
        **schema,
    }


def text() -> str:
    return json.dumps(generate(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def shipped() -> dict[str, Any]:
    """The schema shipped with this client."""
    raw = resources.files("tabled_client").joinpath(SCHEMA_FILE).read_text("utf-8")
    return json.loads(raw)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--write"]:
        targets = [Path(__file__).with_name(SCHEMA_FILE), *map(Path, args[1:])]
        for p in targets:
            p.write_text(text(), "utf-8")
        return 0
    sys.stdout.write(text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
