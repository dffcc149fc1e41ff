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


#: every keyword of JSON Schema Draft 2020-12's vocabularies (core, applicator, unevaluated,
#: validation, meta-data, format-annotation, content): the schema uses no other, so a strict
#: validator (ajv's strict mode) compiles it
DRAFT_2020_12 = frozenset(
    "$schema $id $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $comment $defs "
    "allOf anyOf oneOf not if then else dependentSchemas prefixItems items contains "
    "properties patternProperties additionalProperties propertyNames "
    "unevaluatedItems unevaluatedProperties "
    "type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength "
    "minLength pattern maxItems minItems uniqueItems maxContains minContains maxProperties "
    "minProperties required dependentRequired "
    "title description default deprecated readOnly writeOnly examples format "
    "contentEncoding contentMediaType contentSchema".split()
)


def _strict(node: Any) -> Any:
    """The schema without OpenAPI's ``discriminator``, which msgspec adds to a tagged union
    and a strict Draft 2020-12 validator refuses (issue 33: ajv's ``unknown keyword``); each
    branch still names its one ``type``, so nothing is lost to a validator."""
    if isinstance(node, dict):
        return {
            k: (
                {n: _strict(s) for n, s in v.items()}
                if k in ("properties", "$defs", "patternProperties", "dependentSchemas")
                else _strict(v)
            )
            for k, v in node.items()
            if k != "discriminator"
        }
    if isinstance(node, list):
        return [_strict(x) for x in node]
    return node


def keywords(node: Any, inside: str = "") -> set[str]:
    """Every keyword the schema uses (names under ``properties`` and ``$defs`` are not)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if inside in ("properties", "$defs", "patternProperties", "dependentSchemas"):
                out |= keywords(v)
            else:
                out.add(k)
                out |= keywords(v, k)
    elif isinstance(node, list):
        for x in node:
            out |= keywords(x)
    return out


def generate() -> dict[str, Any]:
    schema = _strict(msgspec.json.schema(AnyEvent))
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
