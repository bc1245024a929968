"""SW4RM compatibility: its handoff types, its context wire format, and import/export of a thread's context."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_files import Context, HandoffContent, HandoffStore, Message
from handoff_files.compat.sw4rm import (
    EXTRA_KEY,
    HandoffContext,
    HandoffRequest,
    HandoffResponse,
    HandoffStatus,
    deserialize_context,
    export_context,
    from_model,
    import_context,
    serialize_context,
    to_model,
)
from handoff_files.foundation.errors import (
    HandoffLockedError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffValidationError,
    NoHandoffError,
)
from handoff_files.foundation.lock import writer_lock
from handoff_files.thread.settings import Durability
from tests.strategies import json_values

EMPTY = b'{"conversation_history":[],"metadata":{},"tool_state":{}}'

SAMPLE = HandoffContext(
    conversation_history=[
        {"role": "user", "content": "Analyze the sales data for Q3", "timestamp": "2025-01-15T10:30:00Z"},
        {"role": "assistant", "content": "I'll analyze the Q3 sales data.", "timestamp": "2025-01-15T10:30:01Z"},
        {
            "role": "tool",
            "name": "query_database",
            "tool_call_id": "call_abc123",
            "content": '{"total_sales": 1500000, "growth": 0.12}',
            "timestamp": "2025-01-15T10:30:05Z",
            "metadata": {"rows": 3},
        },
    ],
    tool_state={"active_calls": [{"call_id": "call_xyz789", "tool": "long_running_query"}], "cache": {"k": [1, 2]}},
    metadata={"agent_id": "agent-1", "session_id": "sess-456"},
)


def sw4rm_read(data: bytes) -> dict[str, Any]:
    """What SW4RM's documented deserialize_context does: UTF-8, JSON, the three fields (defaults if absent)."""
    document = json.loads(data.decode("utf-8"))
    return {
        "conversation_history": document.get("conversation_history", []),
        "tool_state": document.get("tool_state", {}),
        "metadata": document.get("metadata", {}),
    }


def sw4rm_write(context: HandoffContext) -> bytes:
    """What SW4RM's documented serialize_context writes: compact JSON, insertion order, ASCII escapes."""
    return json.dumps(dataclasses.asdict(context), separators=(",", ":")).encode("utf-8")


# -- SW4RM's types, as its own tests expect them ---------------------------------------------


def test_a_request_has_sw4rms_fields_and_defaults() -> None:
    request = HandoffRequest(from_agent="agent-1", to_agent="agent-2", reason="Need specialist knowledge")
    assert request.context_snapshot is None
    assert request.preserve_history is True
    assert request.capabilities_required == []
    assert request.metadata == {}
    assert request.timeout is None
    assert [f.name for f in dataclasses.fields(HandoffRequest)] == [
        "from_agent",
        "to_agent",
        "reason",
        "context_snapshot",
        "preserve_history",
        "capabilities_required",
        "metadata",
        "timeout",
    ]


def test_request_defaults_are_not_shared_between_instances() -> None:
    first = HandoffRequest("a", "b", "r")
    first.capabilities_required.append("database")
    first.metadata["k"] = 1
    second = HandoffRequest("a", "b", "r")
    assert second.capabilities_required == []
    assert second.metadata == {}


def test_a_response_defaults_to_pending_with_no_rejection_reason() -> None:
    response = HandoffResponse(accepted=True, handoff_id="handoff-123")
    assert response.status is HandoffStatus.PENDING
    assert response.rejection_reason is None
    assert response.metadata == {}
    rejected = HandoffResponse(False, "handoff-456", "Agent is at capacity", HandoffStatus.REJECTED)
    assert (rejected.accepted, rejected.rejection_reason, rejected.status) == (
        False,
        "Agent is at capacity",
        HandoffStatus.REJECTED,
    )


def test_status_values_are_sw4rms_names() -> None:
    assert [(s.name, s.value) for s in HandoffStatus] == [
        ("PENDING", "PENDING"),
        ("ACCEPTED", "ACCEPTED"),
        ("REJECTED", "REJECTED"),
        ("COMPLETED", "COMPLETED"),
        ("EXPIRED", "EXPIRED"),
    ]
    assert HandoffStatus("EXPIRED") is HandoffStatus.EXPIRED


def test_an_empty_context_has_empty_fields() -> None:
    context = HandoffContext()
    assert (context.conversation_history, context.tool_state, context.metadata) == ([], {}, {})


def test_to_dict_gives_the_three_fields_as_a_copy() -> None:
    data = SAMPLE.to_dict()
    assert data == {
        "conversation_history": SAMPLE.conversation_history,
        "tool_state": SAMPLE.tool_state,
        "metadata": SAMPLE.metadata,
    }
    data["tool_state"]["cache"]["k"].append(3)
    assert SAMPLE.tool_state["cache"]["k"] == [1, 2]


def test_from_dict_fills_missing_fields_with_defaults_as_sw4rm_does() -> None:
    context = HandoffContext.from_dict({"conversation_history": [{"role": "system", "content": "You are helpful"}]})
    assert context == HandoffContext(conversation_history=[{"role": "system", "content": "You are helpful"}])


def test_from_dict_refuses_a_field_of_the_wrong_type() -> None:
    with pytest.raises(ValueError, match="tool_state must be an object"):
        HandoffContext.from_dict({"tool_state": ["not", "an", "object"]})


# -- the wire format -------------------------------------------------------------------------


def test_serialize_writes_compact_utf8_json_with_sorted_keys() -> None:
    context = HandoffContext(
        conversation_history=[{"role": "user", "content": "Grüße ☃"}],
        metadata={"z": 1, "a": {"y": True, "b": None}},
    )
    assert (
        serialize_context(context)
        == (
            '{"conversation_history":[{"content":"Grüße ☃","role":"user"}],'
            '"metadata":{"a":{"b":null,"y":true},"z":1},"tool_state":{}}'
        ).encode()
    )


def test_an_empty_context_serializes_to_three_empty_fields() -> None:
    assert serialize_context(HandoffContext()) == EMPTY
    assert deserialize_context(EMPTY) == HandoffContext()


def test_serialize_then_deserialize_gives_an_equal_context() -> None:
    data = serialize_context(SAMPLE)
    assert isinstance(data, bytes)
    assert deserialize_context(data) == SAMPLE


def test_equal_contexts_built_in_a_different_order_give_equal_bytes() -> None:
    reordered = HandoffContext(
        conversation_history=[dict(reversed(list(m.items()))) for m in SAMPLE.conversation_history],
        tool_state=dict(reversed(list(SAMPLE.tool_state.items()))),
        metadata=dict(reversed(list(SAMPLE.metadata.items()))),
    )
    assert reordered == SAMPLE
    assert serialize_context(reordered) == serialize_context(SAMPLE)


def test_what_we_write_sw4rm_reads_and_what_sw4rm_writes_we_read() -> None:
    assert sw4rm_read(serialize_context(SAMPLE)) == SAMPLE.to_dict()
    assert deserialize_context(sw4rm_write(SAMPLE)) == SAMPLE
    accented = HandoffContext(metadata={"note": "naïve ☃"})
    assert deserialize_context(sw4rm_write(accented)) == accented  # SW4RM escapes non-ASCII as \\uXXXX


def test_deserialize_accepts_bytearray_and_memoryview_but_not_text() -> None:
    assert deserialize_context(bytearray(EMPTY)) == HandoffContext()
    assert deserialize_context(memoryview(EMPTY)) == HandoffContext()
    with pytest.raises(TypeError, match="takes bytes"):
        deserialize_context(EMPTY.decode())  # type: ignore[arg-type]


class Opaque:
    pass


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("context", "reason"),
    [
        pytest.param(HandoffContext(metadata={"x": math.nan}), "NaN", id="nan"),
        pytest.param(HandoffContext(tool_state={"x": [math.inf]}), "inf", id="infinity"),
        pytest.param(HandoffContext(metadata={"x": -math.inf}), "-inf", id="minus-infinity"),
        pytest.param(HandoffContext(metadata={"x": {1, 2}}), "set is not JSON-serializable", id="set"),
        pytest.param(HandoffContext(metadata={"x": b"raw"}), "bytes is not JSON-serializable", id="bytes"),
        pytest.param(HandoffContext(metadata={"at": dt.datetime.now(dt.UTC)}), "datetime", id="datetime"),
        pytest.param(HandoffContext(tool_state={"x": Opaque()}), "Opaque", id="object"),
        pytest.param(HandoffContext(metadata={1: "a"}), "keys must be strings", id="int-key"),  # type: ignore[dict-item]
        pytest.param(HandoffContext(metadata={"x": "\ud800"}), "lone surrogate", id="lone-surrogate"),
        pytest.param(HandoffContext(metadata={"\udfff": 1}), "lone surrogate", id="lone-surrogate-key"),
        pytest.param(HandoffContext(metadata=_cycle()), "nested too deeply", id="cycle"),
        pytest.param(HandoffContext(tool_state={"x": _deep(100_000)}), "nested too deeply", id="too-deep"),
        pytest.param(HandoffContext(metadata={"x": 10**5000}), "digits", id="huge-int"),
        pytest.param(HandoffContext(conversation_history={}), "must be a list", id="history-object"),  # type: ignore[arg-type]
        pytest.param(HandoffContext(conversation_history=["hi"]), r"\[0\] must be a message", id="message-string"),  # type: ignore[list-item]
        pytest.param(HandoffContext(tool_state=[]), "tool_state must be an object", id="tool-state-list"),  # type: ignore[arg-type]
        pytest.param(HandoffContext(metadata=None), "metadata must be an object", id="metadata-null"),  # type: ignore[arg-type]
    ],
)
def test_serialize_raises_value_error_for_what_json_cannot_hold(context: HandoffContext, reason: str) -> None:
    with pytest.raises(ValueError, match="Failed to serialize HandoffContext") as caught:
        serialize_context(context)
    assert caught.match(reason)


def test_a_serialize_error_names_where_the_bad_value_is() -> None:
    with pytest.raises(ValueError, match=r"tool_state\['cache'\]\[1\]: nan is not a JSON number"):
        serialize_context(HandoffContext(tool_state={"cache": [1, math.nan]}))


def doc(history: str = "[]", tool_state: str = "{}", metadata: str = "{}") -> bytes:
    """A context document with the given JSON text for each field."""
    return f'{{"conversation_history":{history},"tool_state":{tool_state},"metadata":{metadata}}}'.encode()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"invalid json data", "invalid JSON", id="not-json"),
        pytest.param(b"", "invalid JSON", id="empty"),
        pytest.param(EMPTY[:-1], "invalid JSON", id="truncated"),
        pytest.param(EMPTY + b"{}", "invalid JSON", id="trailing-data"),
        pytest.param(b"\xef\xbb\xbf" + EMPTY, "invalid JSON", id="byte-order-mark"),
        pytest.param(EMPTY.replace(b"{}}", b'{"a":"\xff"}}'), "not UTF-8", id="bad-utf8"),
        pytest.param(EMPTY.replace(b"{}}", b'{"a":"\xed\xa0\x80"}}'), "not UTF-8", id="utf8-encoded-surrogate"),
        pytest.param(doc(metadata='{"a":NaN}'), "NaN is not JSON", id="nan"),
        pytest.param(doc(metadata='{"a":-Infinity}'), "-Infinity is not JSON", id="minus-infinity"),
        pytest.param(doc(tool_state='{"a":1e999}'), "inf is not a JSON number", id="overflow"),
        pytest.param(EMPTY[:-1] + b',"metadata":{}}', "duplicate key 'metadata'", id="duplicate-top-key"),
        pytest.param(doc(tool_state='{"a":1,"a":2}'), "duplicate key 'a'", id="duplicate-nested-key"),
        pytest.param(doc(metadata='{"a":"\\ud800"}'), "lone surrogate", id="escaped-surrogate"),
        pytest.param(b"[]", "top level, found a list", id="top-list"),
        pytest.param(b'"context"', "top level, found a string", id="top-string"),
        pytest.param(b"null", "top level, found null", id="top-null"),
        pytest.param(b"42", "top level, found a number", id="top-number"),
        pytest.param(EMPTY[:-1] + b',"version":2}', "found 'version'", id="unknown-key"),
        pytest.param(doc(history="{}"), "must be a list", id="history-object"),
        pytest.param(doc(history="[1]"), r"\[0\] must be a message object", id="message-number"),
        pytest.param(doc(tool_state="[]"), "tool_state must be an object", id="tool-state-list"),
        pytest.param(doc(metadata='"m"'), "metadata must be an object", id="metadata-string"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "nested too deeply", id="too-deep"),
        pytest.param(doc(tool_state='{"n":' + "9" * 5000 + "}"), "invalid JSON", id="huge-int"),
    ],
)
def test_deserialize_raises_value_error_for_bad_bytes(data: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match="Failed to deserialize HandoffContext") as caught:
        deserialize_context(data)
    assert caught.match(reason)


# -- mapping to the model ----------------------------------------------------------------------


def test_known_message_fields_become_typed_fields() -> None:
    model = to_model(SAMPLE)
    tool = model.conversation_history[2]
    assert (tool.role, tool.name, tool.tool_call_id, tool.metadata) == (
        "tool",
        "query_database",
        "call_abc123",
        {"rows": 3},
    )
    assert tool.timestamp == dt.datetime(2025, 1, 15, 10, 30, 5, tzinfo=dt.UTC)
    assert from_model(model) == SAMPLE


@pytest.mark.parametrize(
    "message",
    [
        pytest.param({"tool_calls": [{"id": "c1"}]}, id="unknown-key"),
        pytest.param({"name": None}, id="explicit-null"),
        pytest.param({"timestamp": "2025-01-15T10:30:00+00:00"}, id="utc-written-as-offset"),
        pytest.param({"timestamp": "2025-01-15T10:30:00"}, id="naive-timestamp"),
        pytest.param({"timestamp": 1736937000}, id="epoch-timestamp"),
        pytest.param({"tool_call_id": 7}, id="id-not-a-string"),
        pytest.param({"metadata": [1]}, id="metadata-not-an-object"),
        pytest.param({"metadata": {EXTRA_KEY: 1}}, id="metadata-holding-our-key"),
        pytest.param({"x": 1, "metadata": {"m": 2}}, id="metadata-travels-with-extras"),
    ],
)
def test_what_message_cannot_type_is_kept_under_the_extra_key_and_exported_back(message: dict[str, Any]) -> None:
    context = HandoffContext(conversation_history=[{"role": "assistant", "content": "", **message}])
    held = to_model(context).conversation_history[0]
    assert held.metadata == {EXTRA_KEY: message}
    assert from_model(to_model(context)) == context


@pytest.mark.parametrize(
    ("message", "where"),
    [
        pytest.param({"content": "no role"}, "conversation_history.0.role", id="no-role"),
        pytest.param({"role": "user"}, "conversation_history.0.content", id="no-content"),
        pytest.param({"role": "", "content": ""}, "conversation_history.0.role", id="empty-role"),
        pytest.param({"role": "user", "content": None}, "conversation_history.0.content", id="null-content"),
        pytest.param({"role": "user", "content": [{"type": "text"}]}, "conversation_history.0.content", id="parts"),
    ],
)
def test_a_message_without_string_role_and_content_is_refused(message: dict[str, Any], where: str) -> None:
    with pytest.raises(HandoffValidationError, match=where):
        to_model(HandoffContext(conversation_history=[message]), source="in.json")


def test_to_model_refuses_values_past_the_models_limits() -> None:
    with pytest.raises(HandoffValidationError, match="64 bits"):
        to_model(HandoffContext(tool_state={"n": 2**70}))


# -- import and export -----------------------------------------------------------------------


def test_import_into_a_new_thread_saves_the_context_with_a_narrative_saying_so(thread_dir: Path) -> None:
    receipt = import_context(serialize_context(SAMPLE), thread_dir)
    restored = HandoffStore(thread_dir).restore()
    assert receipt.generation == restored.generation == 1
    assert restored.handoff.context == to_model(SAMPLE)
    assert from_model(restored.handoff.context) == SAMPLE
    assert restored.handoff.narrative.startswith("Imported from an SW4RM HandoffContext: 3 message(s)")
    assert "\n" not in restored.handoff.narrative
    assert restored.handoff.content().model_dump(exclude={"narrative", "context"}) == HandoffContent().model_dump(
        exclude={"narrative", "context"}
    )


def test_import_into_a_thread_keeps_its_layers_and_replaces_only_its_context(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    content = {
        "narrative": "Half way through the Q3 report.",
        "priorities": [{"task": "finish the chart", "urgency": "first"}],
        "warnings": [{"text": "the staging database is slow"}],
        "context": {"metadata": {"old": True}},
    }
    store.save(content)
    before = store.restore().handoff
    receipt = import_context(serialize_context(SAMPLE), thread_dir)
    after = store.restore().handoff
    assert receipt.generation == after.generation == 2
    assert after.content().model_copy(update={"context": None}) == before.content().model_copy(update={"context": None})
    assert after.context == to_model(SAMPLE)
    assert after.parent == str(before.seal)


def test_import_passes_store_options_on(thread_dir: Path) -> None:
    import_context(EMPTY, thread_dir, format="yaml", agent_id="agent-7")
    handoff = HandoffStore(thread_dir).restore().handoff
    assert (thread_dir / "handoff.yaml").exists()
    assert handoff.agent_id == "agent-7"


def test_import_of_bad_bytes_names_the_source_and_creates_nothing(thread_dir: Path) -> None:
    with pytest.raises(HandoffParseError, match=r"^in\.json: Failed to deserialize HandoffContext: invalid JSON"):
        import_context(b"{not json", thread_dir, source="in.json")
    with pytest.raises(HandoffValidationError, match=r"^in\.json: .*conversation_history\.0\.role"):
        import_context(
            b'{"conversation_history":[{"content":"x"}],"tool_state":{},"metadata":{}}', thread_dir, source="in.json"
        )
    assert not thread_dir.exists()


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(EMPTY[:-1] + b',"tool_state":{"a":1}}', id="top-level"),
        pytest.param(doc(metadata='{"step":1,"step":2}'), id="nested"),
    ],
)
def test_context_bytes_with_a_duplicated_key_are_refused_by_the_strict_reader(data: bytes, thread_dir: Path) -> None:
    """SW4RM's error (a ValueError) from deserialize_context; a HandoffParseError from import, nothing written."""
    with pytest.raises(ValueError, match=r"^Failed to deserialize HandoffContext: .*duplicate key") as caught:
        deserialize_context(data)
    assert isinstance(caught.value.__cause__, HandoffParseError)  # the one strict reader refused it
    with pytest.raises(HandoffParseError, match=r"^in\.json: Failed to deserialize HandoffContext: .*duplicate key"):
        import_context(data, thread_dir, source="in.json")
    assert not thread_dir.exists()


@pytest.mark.parametrize("durability", ["full", "journal"])
def test_import_refuses_a_thread_whose_files_exist_but_none_verifies(thread_dir: Path, durability: Durability) -> None:
    store = HandoffStore(thread_dir, durability=durability)
    store.save({"narrative": "precious work"})
    for path in store.history_dir.iterdir():
        path.unlink()
    store.mirror_path.unlink()  # with state.json, restore would rebuild the generation instead
    if durability == "journal":  # its journal line holds the whole generation: damage its document too
        store.journal.path.write_bytes(store.journal.path.read_bytes().replace(b"precious", b"prezious"))
    store.primary.write_bytes(b'{"schema_version": "2.0", "narrative": "trunc')
    damaged = store.primary.read_bytes()
    with pytest.raises(NoHandoffError, match="restore or move these files first"):
        import_context(EMPTY, thread_dir)
    assert store.primary.read_bytes() == damaged
    assert list(store.history_dir.iterdir()) == []


def test_import_reports_what_the_restore_met(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    store.primary.write_bytes(b"garbage")
    receipt = import_context(EMPTY, thread_dir)
    assert any("handoff.json" in problem for problem in receipt.problems)
    assert store.restore().handoff.narrative == "two"


def test_export_gives_back_the_imported_bytes(thread_dir: Path) -> None:
    data = serialize_context(SAMPLE)
    import_context(data, thread_dir)
    exported = export_context(thread_dir)
    assert exported == data
    assert deserialize_context(exported) == SAMPLE


def test_export_reads_a_handoff_file_too(thread_dir: Path) -> None:
    receipt = import_context(serialize_context(SAMPLE), thread_dir)
    assert export_context(receipt.path) == serialize_context(SAMPLE)


def test_a_thread_without_a_context_block_exports_an_empty_context(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save({"narrative": "no context here"})
    assert export_context(thread_dir) == EMPTY


def test_export_of_a_missing_or_empty_thread_raises_never_exports_empty(thread_dir: Path) -> None:
    with pytest.raises(HandoffNotFoundError):
        export_context(thread_dir)
    HandoffStore(thread_dir).init()
    with pytest.raises(NoHandoffError):
        export_context(thread_dir)


def test_a_native_message_exports_without_the_fields_it_does_not_set() -> None:
    context = from_model(Context(conversation_history=[Message(role="user", content="hi")]))
    assert context.conversation_history == [{"role": "user", "content": "hi"}]


def test_import_waits_for_the_writers_lock_and_writes_nothing_without_it(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save({"narrative": "mine"})
    with writer_lock(thread_dir), pytest.raises(HandoffLockedError):
        import_context(EMPTY, thread_dir, lock_timeout=0.1)
    assert HandoffStore(thread_dir).restore().handoff.narrative == "mine"


# -- properties ------------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=20)
_timestamps = (
    st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(dt.UTC)).map(
        lambda d: d.isoformat().replace("+00:00", "Z")
    )
    | st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1)).map(dt.datetime.isoformat)
    | _text
)
_objects = st.dictionaries(_text, json_values, max_size=3)
_messages = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool"]) | st.text(min_size=1, max_size=64),
        "content": _text,
    },
    optional={
        "timestamp": st.none() | _timestamps,
        "tool_call_id": st.none() | _text | st.integers(min_value=-(2**63), max_value=2**63 - 1),
        "name": st.none() | _text,
        "metadata": st.none() | _objects | _objects.map(lambda d: {**d, EXTRA_KEY: "mine"}),
        "tool_calls": st.lists(_objects, max_size=2),
        "custom": json_values,
    },
)
sw4rm_contexts = st.builds(
    HandoffContext,
    conversation_history=st.lists(_messages, max_size=4),
    tool_state=_objects,
    metadata=_objects,
)


@given(sw4rm_contexts)
def test_any_context_round_trips_through_its_bytes(context: HandoffContext) -> None:
    data = serialize_context(context)
    assert deserialize_context(data) == context
    assert serialize_context(deserialize_context(data)) == data
    assert sw4rm_read(data) == context.to_dict()
    assert deserialize_context(sw4rm_write(context)) == context


@given(sw4rm_contexts, st.randoms(use_true_random=False))
def test_key_order_never_changes_the_bytes(context: HandoffContext, random: Any) -> None:
    def shuffled(value: Any) -> Any:
        if isinstance(value, dict):
            items = list(value.items())
            random.shuffle(items)
            return {key: shuffled(item) for key, item in items}
        if isinstance(value, list):
            return [shuffled(item) for item in value]
        return value

    assert serialize_context(HandoffContext(**shuffled(context.to_dict()))) == serialize_context(context)


@given(sw4rm_contexts)
def test_any_context_survives_the_model_unchanged(context: HandoffContext) -> None:
    assert from_model(to_model(context)) == context


@given(sw4rm_contexts)
def test_any_context_imported_into_a_thread_exports_as_the_same_bytes(context: HandoffContext) -> None:
    data = serialize_context(context)
    with tempfile.TemporaryDirectory() as tmp:
        thread = Path(tmp) / "thread-1"
        import_context(data, thread)
        assert export_context(thread) == data


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"tool_state":{},"metadata":{}}', id="missing-history"),
        pytest.param(b"{}", id="missing-all"),
    ],
)
def test_deserialize_fills_missing_fields_with_their_defaults_as_sw4rm_does(data: bytes) -> None:
    context = deserialize_context(data)
    assert (context.conversation_history, context.tool_state, context.metadata) == ([], {}, {})


@pytest.mark.parametrize(
    ("context", "match"),
    [
        pytest.param(HandoffContext(tool_state={"n": 2**70}), "64 bits", id="integer-past-64-bits"),
        pytest.param(HandoffContext(tool_state={"x": _deep(70)}), "nested deeper", id="past-the-readers-depth"),
    ],
)
def test_serialize_refuses_what_deserialize_would_refuse(context: HandoffContext, match: str) -> None:
    """A snapshot our own reader cannot read back is refused when it is written, not when it arrives."""
    with pytest.raises(ValueError, match=match):
        serialize_context(context)
