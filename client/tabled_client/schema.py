"""The JSON Schema of every event type, generated from the Structs in ``events``.

``python -m tabled_client.schema`` prints it; ``--write PATH`` writes it (the repository
keeps one copy, ``docs/events.schema.json``, which ``tests/test_client_events.py`` checks is
what the Structs generate). A built client carries that file as package data (the build
copies it: ``client/collect.py``); :func:`shipped` reads it, or generates it in a checkout.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from tabled_client.events import SCHEMA_VERSION, VARIANTS, any_event
from tabled_client.registry import class_name

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


def _shared(schema: dict[str, Any]) -> dict[str, Any]:
    """Each type several games share (``hand.result``) with its data one of their Structs
    (``anyOf``), where msgspec, which decodes it raw, says nothing."""
    defs = schema["$defs"]
    for type_, variants in VARIANTS.items():
        if len(variants) == 1:
            continue
        _, more = msgspec.json.schema_components(variants, ref_template="#/$defs/{name}")
        for name, d in more.items():
            assert defs.setdefault(name, d) == d, f"two Structs named {name}"
        refs = [{"$ref": f"#/$defs/{v.__name__}"} for v in variants]
        defs[class_name(type_)]["properties"]["data"] = {"anyOf": refs}
    return schema


def generate() -> dict[str, Any]:
    schema = _strict(_shared(msgspec.json.schema(any_event())))
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
    """The schema shipped with this client: its package data in a built client, what the
    Structs generate in a checkout (which keeps its one copy in ``docs/``)."""
    f = resources.files("tabled_client").joinpath(SCHEMA_FILE)
    if not f.is_file():
        return generate()
    return json.loads(f.read_text("utf-8"))  # type: ignore[no-any-return]


def write_or_print(argv: list[str] | None, text: str, module: str) -> int:
    """``python -m <module> [--write PATH]``: a generated schema to stdout, or to ``PATH``."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--write"]:
        if len(args) != 2:
            sys.stderr.write(f"usage: python -m {module} [--write PATH]\n")
            return 2
        Path(args[1]).write_text(text, "utf-8")
        return 0
    sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_or_print(argv, text(), "tabled_client.schema")


if __name__ == "__main__":
    raise SystemExit(main())
