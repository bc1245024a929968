"""JSON Schemas of the current handoff and descriptor formats, generated from the models."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

from handoff_files.descriptor import DESCRIPTOR_VERSION, Descriptor
from handoff_files.model import SCHEMA_VERSION, Handoff

__all__ = ["DESCRIPTOR_SCHEMA_FILE", "SCHEMA_FILE", "descriptor_schema", "json_schema", "render_schema"]

_SCHEMAS: Final = Path(__file__).resolve().parent.parent / "schemas"
#: Where the current version's schema lives in a source checkout.
SCHEMA_FILE: Final = _SCHEMAS / f"handoff-{SCHEMA_VERSION}.schema.json"
#: Where the descriptor's schema lives in a source checkout.
DESCRIPTOR_SCHEMA_FILE: Final = _SCHEMAS / f"descriptor-{DESCRIPTOR_VERSION}.schema.json"


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a sealed handoff of the current version."""
    schema = Handoff.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://handoff-files.invalid/schemas/handoff-{SCHEMA_VERSION}.schema.json",
        **schema,
        "title": f"handoff-files handoff, schema version {SCHEMA_VERSION}",
    }


def descriptor_schema() -> dict[str, Any]:
    """Return the JSON Schema of a handoff descriptor of the current version."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://handoff-files.invalid/schemas/descriptor-{DESCRIPTOR_VERSION}.schema.json",
        **Descriptor.model_json_schema(mode="validation"),
        "title": f"handoff-files descriptor, version {DESCRIPTOR_VERSION}",
    }


def render_schema(schema: dict[str, Any] | None = None) -> str:
    """A schema file's text (default: the handoff's): indented, keys in a stable order, final newline."""
    return json.dumps(json_schema() if schema is None else schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(render_schema(), encoding="utf-8")
    DESCRIPTOR_SCHEMA_FILE.write_text(render_schema(descriptor_schema()), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_FILE} and {DESCRIPTOR_SCHEMA_FILE}\n")
