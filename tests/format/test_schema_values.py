"""Times are RFC 3339 text, never numbers; an integer written ``2.0`` is the integer 2, and seals as 2.

Where the library and the published schema disagreed (issue 19, item 11); the agreement itself is
tested on generated documents in ``test_schema_agreement.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from handoff_files.format import model
from handoff_files.format import seal as sealing
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import ChecksumMismatchError, DescriptorError, HandoffValidationError
from handoff_files.transfers.descriptor import parse_descriptor
from tests.cli.shell import handoff
from tests.format.test_schema_agreement import DESCRIPTOR, ENVELOPE, HANDOFF_SCHEMA


def _text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False)


# -- timestamps are RFC 3339 strings, never numbers ---------------------------------------------

NOT_A_TIME: Final = [pytest.param(0, id="zero"), pytest.param(1.5, id="float"), pytest.param(True, id="true")]


@pytest.mark.parametrize("value", NOT_A_TIME)
@pytest.mark.parametrize(
    ("where", "place"),
    [
        pytest.param("created_at", lambda doc, v: doc.update(created_at=v), id="created_at"),
        pytest.param("state.timestamp", lambda doc, v: doc.update(state={"timestamp": v}), id="state.timestamp"),
        pytest.param(
            "context.conversation_history.0.timestamp",
            lambda doc, v: doc.update(
                context={"conversation_history": [{"role": "user", "content": "", "timestamp": v}]}
            ),
            id="message.timestamp",
        ),
    ],
)
def test_a_number_for_a_timestamp_is_refused_naming_the_file_and_the_field(
    value: object, where: str, place: Callable[[dict[str, Any], object], None]
) -> None:
    document: dict[str, Any] = {**ENVELOPE, "narrative": "hi"}
    place(document, value)
    with pytest.raises(HandoffValidationError) as caught:
        decode(_text(document).encode("utf-8"), "handoff.json")
    assert str(caught.value).startswith("handoff.json: ")
    assert f"{where}: expected" in caught.value.reason


@pytest.mark.parametrize("value", NOT_A_TIME)
def test_a_number_for_a_descriptors_created_at_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(DescriptorError, match=r"^<descriptor>: .*created_at: expected"):
        parse_descriptor(_text({**DESCRIPTOR, "created_at": value}))


def test_validate_refuses_a_numeric_created_at_in_one_line(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    path = tmp_path / "handoff.json"
    path.write_text(_text({**ENVELOPE, "narrative": "hi", "created_at": 0}), encoding="utf-8")
    done = handoff("validate", path, env=subprocess_env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"handoff: {path}: "), line
    assert "created_at: expected" in line, line


# -- an integer written 2.0 is the integer 2, and seals as 2 -------------------------------------


def _sealed(document: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    digest = sealing.digest(sealing.canonical(over), "sha256")
    return {**document, "seal": {"algorithm": "sha256", "digest": digest}}


INTEGRAL: Final[dict[str, Any]] = {
    **ENVELOPE,
    "narrative": "hi",
    "generation": 3.0,
    "state": {"error_count": 1e3, "session_id": 7.0},
    "lineage": {
        "adopted_from": {
            "agent_id": "a",
            "thread_id": "t",
            "generation": 2.0,
            "blob_id": "b",
            "blob_sha256": "c" * 64,
        }
    },
}


def test_integers_written_with_a_fraction_or_exponent_read_as_integers() -> None:
    handoff_ = Handoff.model_validate(INTEGRAL)
    assert (handoff_.generation, handoff_.state.error_count, handoff_.state.session_id) == (3, 1000, 7)
    assert handoff_.lineage.adopted_from is not None
    assert type(handoff_.lineage.adopted_from.generation) is int


def test_a_sealed_file_with_an_integer_written_2_0_verifies_as_the_integer_and_reseals_the_same() -> None:
    """The seal covers the values as read (3, not 3.0): the handoff handed out re-seals to its own seal."""
    written = Handoff.model_validate(INTEGRAL).model_dump(mode="json")  # every field, as a store writes
    written["generation"], written["lineage"]["adopted_from"]["generation"] = 3.0, 2.0
    written["state"].update(error_count=1e3, session_id=7.0)
    document = _sealed(written, model.integral(written))
    loaded = decode(_text(document).encode("utf-8"), "handoff.json")
    assert loaded.generation == 3
    resealed = sealing.digest(sealing.canonical(loaded.model_dump(mode="json")), "sha256")
    assert resealed == document["seal"]["digest"]


def test_a_seal_computed_over_the_float_spelling_does_not_verify() -> None:
    """Sealed over ``3.0`` as text, the file's values (3) are not what was sealed: never handed out."""
    document = _sealed(INTEGRAL, INTEGRAL)
    with pytest.raises(ChecksumMismatchError):
        decode(_text(document).encode("utf-8"), "handoff.json")


def test_integral_changes_only_integer_fields_and_not_its_input() -> None:
    document = {**INTEGRAL, "state": {**INTEGRAL["state"], "energy_level": 1.0, "data": {"n": 2.0}}}
    before = json.dumps(document)
    result = model.integral(document)
    assert json.dumps(document) == before
    assert result["generation"] == 3
    assert type(result["generation"]) is int
    assert type(result["state"]["energy_level"]) is float
    assert type(result["state"]["data"]["n"]) is float


def test_every_integer_in_the_schema_is_one_integral_converts() -> None:
    """The paths :func:`integral` converts are exactly the schema's integer fields (one source, no drift)."""

    def integers(node: Any, path: tuple[str, ...]) -> set[tuple[str, ...]]:
        if isinstance(node, dict):
            if "$ref" in node:
                return integers(HANDOFF_SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]], path)
            found = {path} if node.get("type") == "integer" else set()
            for branch in node.get("anyOf", []):
                found |= integers(branch, path)
            for key, sub in node.get("properties", {}).items():
                found |= integers(sub, (*path, key))
            return found
        return set()

    assert integers(HANDOFF_SCHEMA, ()) == set(model.INTEGER_PATHS)


@pytest.mark.parametrize("value", [pytest.param(1e300, id="1e300"), pytest.param(-1e19, id="-1e19")])
def test_a_sealed_file_with_an_integer_past_64_bits_written_as_a_float_is_refused_as_invalid(value: float) -> None:
    """The float stays a float for the seal (no 64-bit canonical form), and the model refuses it: no ValueError."""
    document = {**ENVELOPE, "narrative": "hi", "generation": value, "seal": {"algorithm": "sha256", "digest": "a" * 64}}
    with pytest.raises(ChecksumMismatchError, match="generation: expected a number of at"):
        decode(_text(document).encode("utf-8"), "handoff.json")
