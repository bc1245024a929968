"""The 2.0 JSON Schema in schemas/ matches the models, and saved files validate against it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from handoff_files import HandoffStore
from handoff_files.format.schema import SCHEMA_FILE, render_schema


def test_committed_schema_matches_the_models() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), (
        "schemas/ drifted from the models: run `python -m handoff_files.format.schema` and review the diff"
    )


def test_a_saved_handoff_validates_against_the_schema(thread_dir: Path) -> None:
    receipt = HandoffStore(thread_dir).save(
        {
            "narrative": "Half the importer is ported.",
            "state": {"active_tasks": ["port the importer"], "data": {"files": 3}},
            "priorities": [{"task": "finish the port", "urgency": "first"}],
            "warnings": [{"text": "dates are local time", "severity": "high"}],
            "decisions": [{"decision": "keep the old API", "reason": "callers", "status": "deferred"}],
            "context": {"conversation_history": [{"role": "user", "content": "go on"}]},
        }
    )
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(receipt.path.read_text(encoding="utf-8")), schema)


def test_the_schemas_stated_defaults_are_the_models_own() -> None:
    """state and lineage default through a factory (built on first use); the schema states what it makes."""
    from handoff_files.format import model

    assert model.State().model_dump(mode="json") == model._STATE_DEFAULT
    assert model.Lineage().model_dump(mode="json") == model._LINEAGE_DEFAULT
