"""The published JSON Schemas and the library agree, both ways, on generated documents.

Documents are generated near the schema (valid ones, then one mutation each: a wrong type, a
number written ``2.0`` / ``1e3`` / huge, a string for a number, a number for a string, a key
missing or added) and judged twice: by the library's reader and by ``jsonschema`` against the
committed file in ``schemas/``. Every document one accepts, the other accepts, except for the rules
listed in :data:`GAPS` (docs/format.md, "What the JSON Schema cannot say", lists the same ones).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any, Final

import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from handoff_files.format.loader import decode
from handoff_files.format.model import MAX_INT
from handoff_files.format.schema import SCHEMA_FILE
from handoff_files.foundation.errors import (
    DescriptorError,
    HandoffError,
    SignatureError,
    UnsealedEditError,
)
from handoff_files.transfers.descriptor import DESCRIPTOR_SCHEMA_FILE, parse_descriptor
from tests.strategies import contents

HANDOFF_SCHEMA: Final = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
DESCRIPTOR_SCHEMA: Final = json.loads(DESCRIPTOR_SCHEMA_FILE.read_text(encoding="utf-8"))

ENVELOPE: Final[dict[str, Any]] = {
    "schema_version": "2.0",
    "agent_id": "agent",
    "thread_id": "thread",
    "generation": 3,
    "created_at": "2026-01-01T00:00:00Z",
}
DESCRIPTOR: Final[dict[str, Any]] = {
    "descriptor_version": "1.0",
    "source": "thread:3",
    "agent_id": "agent",
    "thread_id": "thread",
    "generation": 3,
    "checkpoint_id": "blake3:" + "a" * 64,
    "blob_id": "b" * 64,
    "blob_sha256": "c" * 64,
    "to_agent": None,
    "summary": None,
    "created_at": "2026-01-01T00:00:00Z",
}


# -- the judges ---------------------------------------------------------------------------------


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """``pattern`` as JSON Schema defines it (ECMA-262: ``$`` is the end of the text).

    python-jsonschema runs ``re.search``, whose ``$`` also matches before a final newline, so it
    would take ``"agent\\n"`` for an id; any validator that follows the specification does not.
    """
    if isinstance(instance, str) and not re.search(pattern.replace("$", r"\Z"), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator: Final = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})


_VALIDATORS: Final[dict[str, Any]] = {}


def schema_accepts(schema: dict[str, Any], text: str) -> bool:
    validator = _VALIDATORS.setdefault(schema["$id"], _Validator(schema))
    return bool(validator.is_valid(json.loads(text)))


def library_accepts_handoff(text: str) -> bool:
    """The reader's verdict on an unsealed file: a valid one is handed out as a person's own (UnsealedEditError).

    The same document with a seal that does not match is read too: whatever it holds, only a
    ``HandoffError`` comes out (a value with no canonical form once read must not escape as ValueError).
    """
    document = json.loads(text)
    if isinstance(document, dict) and "seal" not in document:
        wrong = {**document, "seal": {"algorithm": "sha256", "digest": "0" * 64}}
        with pytest.raises(HandoffError):
            decode(json.dumps(wrong).encode("utf-8"), "doc.json")
    try:
        decode(text.encode("utf-8"), "doc.json")
    except UnsealedEditError:
        return True
    except HandoffError:
        return False
    return True


def library_accepts_descriptor(text: str) -> bool:
    try:
        parse_descriptor(text)
    except (DescriptorError, SignatureError):
        return False
    return True


# -- the rules the schema cannot say (each shown true by a test below) --------------------------

_DAY: Final = re.compile(r"^(\d{4})-02-29T")


def _impossible_leap_day(document: Any) -> bool:
    """A 29 February in a year that has none: the schema's pattern allows day 29 of every February."""

    def bad(value: Any) -> bool:
        found = _DAY.match(value) if isinstance(value, str) else None
        if found is None:
            return False
        year = int(found.group(1))
        return not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0))

    return any(bad(value) for value in _leaves(document))


def _source_disagrees(document: Any) -> bool:
    """A descriptor whose ``source`` is not ``thread_id:generation``: a rule across two fields."""
    if not isinstance(document, dict):
        return False
    thread, generation = document.get("thread_id"), document.get("generation")
    if isinstance(generation, float) and generation.is_integer():
        generation = int(generation)
    return document.get("source") != f"{thread}:{generation}"


def _signed(document: Any) -> bool:
    """A descriptor with a signature: the library verifies it (and refuses one in a 1.0 descriptor); a schema cannot."""
    return isinstance(document, dict) and document.get("signature") is not None


#: Each rule the library keeps and the JSON Schema cannot express, with how to recognise it.
HANDOFF_GAPS: Final[dict[str, Callable[[Any], bool]]] = {
    "a date-time naming 29 February of a year that is not a leap year": _impossible_leap_day,
}
DESCRIPTOR_GAPS: Final[dict[str, Callable[[Any], bool]]] = {
    **HANDOFF_GAPS,
    "a descriptor's source that is not its thread_id:generation": _source_disagrees,
    "a descriptor's signature, which must verify over it (and only a 1.1 descriptor holds one)": _signed,
}


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


# -- the generators ----------------------------------------------------------------------------

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", fullmatch=True)
offsets = st.sampled_from(["Z", "z", "+00:00", "-00:00", "+05:30", "-23:59", "+23:59"])
fractions = st.sampled_from(["", ".5", ".123456", ".000001"])
rfc3339 = st.builds(
    lambda moment, fraction, offset: moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + offset,
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)),
    fractions,
    offsets,
)
digests = st.builds(
    lambda a, d: f"{a}:{d}", st.sampled_from(["blake3", "sha256"]), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
)
adopted = st.fixed_dictionaries(
    {
        "agent_id": ids,
        "thread_id": ids,
        "generation": st.integers(1, MAX_INT),
        "blob_id": st.text(max_size=20),
        "blob_sha256": st.from_regex(r"[0-9a-f]{64}", fullmatch=True),
    }
)
lineages = st.fixed_dictionaries({}, optional={"adopted_from": st.none() | adopted})
envelopes = st.fixed_dictionaries(
    {
        "schema_version": st.just("2.0"),
        "agent_id": ids,
        "thread_id": ids,
        "generation": st.integers(1, MAX_INT),
        "created_at": rfc3339,
    },
    optional={"parent": st.none() | digests, "lineage": lineages},
)
handoffs = st.builds(lambda layers, envelope: {**layers, **envelope}, contents, envelopes)
descriptors = st.builds(
    lambda base, thread, generation, to_agent, summary, created: {
        **base,
        "thread_id": thread,
        "generation": generation,
        "source": f"{thread}:{generation}",
        "to_agent": to_agent,
        "summary": summary,
        "created_at": created,
    },
    st.just(DESCRIPTOR),
    ids,
    st.integers(1, MAX_INT),
    st.none() | ids,
    st.none() | st.text(max_size=30),
    rfc3339,
)

#: What a mutation puts in place of a value: numbers in every spelling, strings for numbers, numbers for strings.
REPLACEMENTS: Final[list[Any]] = [
    *(2.0, 1e3, 1.5, 0, 0.0, -1, 1, True, False, None, 2**63 - 1, 2**63, 2**64 - 1, 1e300, -1e300),
    *(9.3e18, 9.2e18, 0.9999, 1.0000001, "1", "2.0", "", "x", "x\n", [], {}, [1], {"k": 1}),
    *("2024-01-01T00:00:00Z", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2024-01-01 00:00:00Z"),
    *("2024-01-01T00:00Z", "2024-01-01T00:00:00+0000", "2024-01-01T00:00:00.1234567Z", "1704067200"),
    *("2024-04-31T00:00:00Z", "2024-01-01T00:00:60Z", "0000-01-01T00:00:00Z", "2024-01-01T00:00:00"),
    *("first", "deferred", "blake3", "a" * 64, "blake3:" + "a" * 64),
]
replacements = (
    st.sampled_from(REPLACEMENTS) | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
)

#: Free-form trees take any JSON: a mutation inside one tests the parser, not the schema.
FREE_FORM: Final = ("data", "tool_state", "metadata")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if prefix and prefix[-1] in FREE_FORM:
        return found
    if isinstance(value, dict):
        found += [p for key, item in value.items() for p in _paths(item, (*prefix, key))]
    elif isinstance(value, list):
        found += [p for index, item in enumerate(value) for p in _paths(item, (*prefix, index))]
    return found


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A document from *base*, changed once: a value replaced, a key removed, or a key added."""
    document: dict[str, Any] = json.loads(json.dumps(draw(base)))
    paths = _paths(document)
    path = draw(st.sampled_from(paths))
    *head, last = path
    parent: Any = document
    for step in head:
        parent = parent[step]
    how = draw(st.sampled_from(["replace", "replace", "replace", "remove", "add"]))
    if how == "remove" and isinstance(parent, dict):
        del parent[last]
    elif how == "add" and isinstance(parent, dict):
        parent[draw(st.sampled_from(["extra", "seal_", "Generation"]))] = draw(replacements)
    else:
        parent[last] = draw(replacements)
    return document


def _text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False)


def _agree(
    schema: dict[str, Any], library: Callable[[str], bool], gaps: dict[str, Callable[[Any], bool]], document: Any
) -> None:
    text = _text(document)
    by_schema, by_library = schema_accepts(schema, text), library(text)
    if by_library:
        assert by_schema, f"the library accepts what the schema refuses: {text}"
    elif by_schema:
        assert any(applies(document) for applies in gaps.values()), (
            f"the schema accepts what the library refuses, and no listed rule explains it: {text}"
        )


@given(st.one_of(handoffs, mutated(handoffs)))
@example({**ENVELOPE, "narrative": "", "generation": 2.0})
@example({**ENVELOPE, "narrative": "", "generation": 1e3})
@example({**ENVELOPE, "narrative": "", "created_at": 0})
@example({**ENVELOPE, "narrative": "", "created_at": 1.5})
@example({**ENVELOPE, "narrative": "", "state": {"session_id": 2**64 - 1}})
@example({**ENVELOPE, "narrative": "", "state": {"timestamp": "1704067200"}})
def test_the_handoff_schema_and_the_library_agree_on_generated_documents(document: dict[str, Any]) -> None:
    _agree(HANDOFF_SCHEMA, library_accepts_handoff, HANDOFF_GAPS, document)


@given(st.one_of(descriptors, mutated(descriptors)))
@example({**DESCRIPTOR, "generation": 3.0})
@example({**DESCRIPTOR, "created_at": 0})
def test_the_descriptor_schema_and_the_library_agree_on_generated_documents(document: dict[str, Any]) -> None:
    _agree(DESCRIPTOR_SCHEMA, library_accepts_descriptor, DESCRIPTOR_GAPS, document)


#: A handoff with every field filled, and a descriptor: each of their fields takes each replacement below.
FULL_HANDOFF: Final[dict[str, Any]] = {
    **ENVELOPE,
    "parent": "blake3:" + "d" * 64,
    "narrative": "Half the importer is ported.",
    "state": {
        "session_id": 4,
        "timestamp": "2026-01-01T00:00:00.5+01:00",
        "active_tasks": ["port"],
        "completed_tasks": ["read"],
        "blocked_tasks": ["ship"],
        "environment": {"CI": "1"},
        "error_count": 2,
        "energy_level": 0.5,
        "data": {"n": 1},
    },
    "decisions": [{"decision": "keep", "reason": "callers", "alternatives_considered": ["drop"], "reversible": True}],
    "priorities": [{"task": "finish", "urgency": "first"}],
    "warnings": [{"text": "dates", "severity": "high"}],
    "context": {
        "conversation_history": [
            {"role": "user", "content": "go", "timestamp": "2026-01-01T00:00:00Z", "tool_call_id": "c", "name": "n"}
        ],
        "tool_state": {},
        "metadata": {},
    },
    "lineage": {
        "adopted_from": {"agent_id": "a", "thread_id": "t", "generation": 2, "blob_id": "b", "blob_sha256": "c" * 64},
        "migrated_from": {"schema_version": "1.0", "checksum": None, "notes": ["n"]},
    },
}


def _every_single_change(document: dict[str, Any]) -> list[Any]:
    """*document* changed once in every way: each field replaced by each replacement, removed, or joined by an extra."""
    changed = []
    for path in _paths(document):
        *head, last = path
        for value in [*REPLACEMENTS, "remove", "add"]:
            copy = json.loads(json.dumps(document))
            parent = copy
            for step in head:
                parent = parent[step]
            if value == "remove" and isinstance(parent, dict):
                del parent[last]
            elif value == "add" and isinstance(parent, dict):
                parent["extra"] = 1
            else:
                parent[last] = value
            changed.append(copy)
    return changed


@pytest.mark.slow  # ~3,000 documents through jsonschema, ~15 ms each on this machine: make slow runs it
@pytest.mark.parametrize(
    ("schema", "library", "gaps", "document"),
    [
        pytest.param(HANDOFF_SCHEMA, library_accepts_handoff, HANDOFF_GAPS, FULL_HANDOFF, id="handoff"),
        pytest.param(DESCRIPTOR_SCHEMA, library_accepts_descriptor, DESCRIPTOR_GAPS, DESCRIPTOR, id="descriptor"),
    ],
)
def test_the_schema_and_the_library_agree_on_every_single_change_of_a_full_document(
    schema: dict[str, Any],
    library: Callable[[str], bool],
    gaps: dict[str, Callable[[Any], bool]],
    document: dict[str, Any],
) -> None:
    """Not left to chance: every field of a complete document, given every replacement in turn."""
    assert library(_text(document))
    assert schema_accepts(schema, _text(document))
    for changed in _every_single_change(document):
        _agree(schema, library, gaps, changed)


@pytest.mark.parametrize(
    ("schema", "library", "gaps", "document", "rule"),
    [
        pytest.param(
            HANDOFF_SCHEMA,
            library_accepts_handoff,
            HANDOFF_GAPS,
            {**ENVELOPE, "narrative": "", "created_at": "2023-02-29T00:00:00Z"},
            "a date-time naming 29 February of a year that is not a leap year",
            id="leap-day",
        ),
        pytest.param(
            DESCRIPTOR_SCHEMA,
            library_accepts_descriptor,
            DESCRIPTOR_GAPS,
            {**DESCRIPTOR, "source": "thread:4"},
            "a descriptor's source that is not its thread_id:generation",
            id="descriptor-source",
        ),
        pytest.param(
            DESCRIPTOR_SCHEMA,
            library_accepts_descriptor,
            DESCRIPTOR_GAPS,
            {**DESCRIPTOR, "descriptor_version": "1.1", "signature": "-----BEGIN SSH SIGNATURE-----\nAAAA\n"},
            "a descriptor's signature, which must verify over it (and only a 1.1 descriptor holds one)",
            id="descriptor-signature",
        ),
    ],
)
def test_each_listed_gap_is_real(
    schema: dict[str, Any],
    library: Callable[[str], bool],
    gaps: dict[str, Callable[[Any], bool]],
    document: dict[str, Any],
    rule: str,
) -> None:
    """The schema accepts it, the library refuses it, and exactly that rule says why (the list does not rot)."""
    text = _text(document)
    assert schema_accepts(schema, text)
    assert not library(text)
    assert [name for name, applies in gaps.items() if applies(document)] == [rule]
