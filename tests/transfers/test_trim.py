"""trim_context: the last N relevant messages and only live tool state, with a record of what was cut."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_files.format.model import Context
from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.transfers.trim import TRIM_KEY, trim_context


def _history(n: int) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 else "assistant", "content": f"turn {i}"} for i in range(n)]


def test_keeps_the_last_n_messages_and_records_the_original_length() -> None:
    trimmed = trim_context({"conversation_history": _history(120)}, max_history=50)
    assert [m.content for m in trimmed.conversation_history] == [f"turn {i}" for i in range(70, 120)]
    assert trimmed.metadata[TRIM_KEY]["original_messages"] == 120
    assert trimmed.metadata[TRIM_KEY]["kept_messages"] == 50


def test_system_messages_are_always_kept() -> None:
    history = [{"role": "system", "content": "you are the importer"}, *_history(10)]
    trimmed = trim_context({"conversation_history": history}, max_history=3)
    assert [m.content for m in trimmed.conversation_history] == ["you are the importer", "turn 7", "turn 8", "turn 9"]


def test_a_tool_result_whose_call_was_cut_goes_too() -> None:
    history = [
        {"role": "assistant", "content": "calling grep", "tool_call_id": "c1"},
        {"role": "tool", "content": "grep output", "tool_call_id": "c1"},
        {"role": "user", "content": "thanks"},
    ]
    trimmed = trim_context({"conversation_history": history}, max_history=2)
    assert [m.content for m in trimmed.conversation_history] == ["thanks"]
    kept_pair = trim_context({"conversation_history": history}, max_history=3)
    assert len(kept_pair.conversation_history) == 3


def test_only_active_or_pending_tool_state_is_kept() -> None:
    tools = {
        "build": {"status": "running", "pid": 4},
        "tests": {"status": "Pending"},
        "lint": {"status": "completed"},
        "deploy": {"status": "failed"},
        "cache": {"size": 3},  # no status: nothing says it is over
    }
    trimmed = trim_context({"tool_state": tools})
    assert sorted(trimmed.tool_state) == ["build", "cache", "tests"]
    assert trimmed.metadata[TRIM_KEY]["original_tool_state"] == 5
    assert trim_context({"tool_state": tools}, keep_active_tool_state=False).tool_state == {}


def test_the_input_is_never_modified_and_metadata_is_kept() -> None:
    context = Context.model_validate(
        {"conversation_history": _history(5), "tool_state": {"x": {"status": "done"}}, "metadata": {"task": "port"}}
    )
    before = context.model_dump()
    trimmed = trim_context(context, max_history=1)
    assert context.model_dump() == before
    assert trimmed.metadata["task"] == "port"


@pytest.mark.parametrize(
    ("context", "options"),
    [
        pytest.param({"conversation_history": "not a list"}, {}, id="history not a list"),
        pytest.param({"unknown": 1}, {}, id="unknown key"),
        pytest.param({}, {"max_history": -1}, id="negative max_history"),
    ],
)
def test_bad_input_is_a_validation_error(context: dict[str, Any], options: dict[str, Any]) -> None:
    with pytest.raises(HandoffValidationError):
        trim_context(context, **options)


@given(n=st.integers(0, 200), keep=st.integers(0, 80))
def test_never_more_than_max_history_non_system_messages_and_always_the_newest(n: int, keep: int) -> None:
    trimmed = trim_context({"conversation_history": _history(n)}, max_history=keep)
    assert len(trimmed.conversation_history) == min(n, keep)
    if n and keep:
        assert trimmed.conversation_history[-1].content == f"turn {n - 1}"
