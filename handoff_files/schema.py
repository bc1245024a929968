"""JSON Schema for the current format, generated from the models (``python -m handoff_files.schema`` writes it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

from handoff_files.model import SCHEMA_VERSION, Handoff

__all__ = ["SCHEMA_FILE", "json_schema", "render_schema"]

#: Where the current version's schema lives in a source checkout.
SCHEMA_FILE: Final = Path(__file__).resolve().parent.parent / "schemas" / f"handoff-{SCHEMA_VERSION}.schema.json"


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a sealed handoff of the current version."""
    schema = Handoff.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://handoff-files.invalid/schemas/handoff-{SCHEMA_VERSION}.schema.json",
        **schema,
        "title": f"handoff-files handoff, schema version {SCHEMA_VERSION}",
    }


def render_schema() -> str:
    """The schema file's text: indented, keys in a stable order, final newline."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(render_schema(), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_FILE}\n")
