"""The current (2.1) JSON Schema in schemas/ matches the models, and saved files validate against it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Final

import jsonschema

from handoff_files import HandoffStore
from handoff_files.format.schema import SCHEMA_DIR, SCHEMA_FILE, render_schema
from handoff_files.transfers.descriptor import DESCRIPTOR_SCHEMA_FILE, descriptor_schema

#: Released versions' schemas, written by hand when they were current and frozen since: their sha256.
FROZEN: Final = {
    "handoff-0.8.schema.json": "c5ad8977f6cf0b0bfa6f1dd1cdfe140b6ea4866e51877719b742724da2062708",
    "handoff-1.0.schema.json": "0936e4b8a407f104f3bb55be38797fe313446e2f0a775640993a0a34d4f340cc",
    # generated from the 2.0 models while 2.0 was current (up to 8452ed3), frozen when 2.1 added seal.signature
    "handoff-2.0.schema.json": "e4d09c16c66c6bc67e2c7a8899ea9365a27e53486f15df6a293939a74773bed1",
    # generated while descriptor 1.0 was current, frozen when 1.1 added the optional signature
    "descriptor-1.0.schema.json": "68da044657d268fd0485fe0a1f4cd02cd6724043a710aef2aad9e02fb22935e1",
}


def test_committed_schema_matches_the_models() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), (
        "schemas/ drifted from the models: run `python -m handoff_files.format.schema` and review the diff"
    )


def test_every_schema_file_is_generated_from_its_model_byte_for_byte_or_frozen() -> None:
    """One source each: the current versions' files are what the models render (``make schemas``), byte
    for byte (line endings included); the older versions' are frozen; there is no other file."""
    generated = {
        SCHEMA_FILE.name: render_schema(),
        DESCRIPTOR_SCHEMA_FILE.name: render_schema(descriptor_schema()),
    }
    assert {path.name for path in SCHEMA_DIR.glob("*.schema.json")} == set(generated) | set(FROZEN)
    for name, text in generated.items():
        assert (SCHEMA_DIR / name).read_bytes() == text.encode("utf-8"), f"{name} drifted: run `make schemas`"
    for name, digest in FROZEN.items():
        assert hashlib.sha256((SCHEMA_DIR / name).read_bytes()).hexdigest() == digest, f"{name} is frozen"


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
