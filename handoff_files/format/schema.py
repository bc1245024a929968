"""JSON Schemas generated from the models: one file per format version in ``schemas/``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from handoff_files.format.model import SCHEMA_VERSION, Handoff

__all__ = ["SCHEMA_DIR", "SCHEMA_FILE", "json_schema", "model_schema", "render_schema"]

#: Where the schema files live in a source checkout.
SCHEMA_DIR: Final = Path(__file__).resolve().parents[2] / "schemas"
#: Where the current version's schema lives in a source checkout.
SCHEMA_FILE: Final = SCHEMA_DIR / f"handoff-{SCHEMA_VERSION}.schema.json"


def model_schema(model: type[BaseModel], kind: str, version: str) -> dict[str, Any]:
    """The JSON Schema of *model*, as the file ``schemas/<kind>-<version>.schema.json`` holds it."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://handoff-files.invalid/schemas/{kind}-{version}.schema.json",
        **model.model_json_schema(mode="validation"),
        "title": f"handoff-files {kind}, {'schema ' if kind == 'handoff' else ''}version {version}",
    }


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a sealed handoff of the current version."""
    return model_schema(Handoff, "handoff", SCHEMA_VERSION)


def render_schema(schema: dict[str, Any] | None = None) -> str:
    """A schema file's text (default: the handoff's): indented, keys in a stable order, final newline."""
    return json.dumps(json_schema() if schema is None else schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(render_schema(), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_FILE}\n")
