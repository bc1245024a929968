"""Channel values: readable where they read back equal, the serializer's typed bytes otherwise, never changed."""

from __future__ import annotations

import datetime as dt
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.values import decode_value, encode_value

SERDE = JsonPlusSerializer()
DEEP: list[Any] = [1]
for _ in range(45):
    DEEP = [DEEP]
VALUES: list[tuple[str, Any, str]] = [
    ("a dict", {"a": [1, 2.5, None, True], "b": {"c": "d"}}, "json"),
    ("a dict holding a tuple", {"pair": (1, 2)}, "serde"),
    ("a tuple", (1, 2), "serde"),
    ("a set", {1, 2}, "serde"),
    ("NaN", math.nan, "serde"),
    ("bytes", b"\x00\xff", "serde"),
    ("a datetime", dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "serde"),
    ("a dict with int keys", {1: "one"}, "serde"),
    ("a float that looks like an int", 1.0, "json"),
    (
        "nesting deeper than a handoff's trees",
        [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
        "serde",
    ),
    (
        "messages",
        [
            HumanMessage("hi", id="1"),
            AIMessage("hello", id="2", tool_calls=[]),
            ToolMessage("ok", tool_call_id="t", id="3"),
        ],
        "messages",
    ),
    ("one message", AIMessage("alone", id="4"), "message"),
]


@pytest.mark.parametrize(("label", "value", "form"), VALUES, ids=[label for label, _, _ in VALUES])
def test_each_value_is_stored_in_its_form_and_reads_back_as_it_went_in(label: str, value: Any, form: str) -> None:
    stored = encode_value(value, SERDE)
    assert next(iter(stored)) == form, label
    back = decode_value(stored, SERDE, "here")
    # exactly what LangGraph's serializer itself gives back (its msgpack makes a nested tuple a list)
    expected = SERDE.loads_typed(SERDE.dumps_typed(value))
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)
    else:
        assert back == expected
        assert type(back) is type(expected)
        if form != "serde":
            assert back == value, "a value stored readably is the value itself"


def test_values_round_trip_through_a_checkpoint_file(tmp_path: Path) -> None:
    saver = HandoffSaver(tmp_path / "graphs")
    checkpoint = empty_checkpoint()
    values = {f"c{index}": value for index, (_, value, _) in enumerate(VALUES) if not isinstance(value, float)}
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {})
    got = saver.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == {
        name: SERDE.loads_typed(SERDE.dumps_typed(v)) for name, v in values.items()
    }
    text = next((tmp_path / "graphs" / "t" / "history").iterdir()).read_text(encoding="utf-8")
    assert '"hello"' in text, "messages are readable JSON"
    assert '"base64"' in text, "the set, the tuple … are typed bytes, marked"


def test_without_langgraph_the_import_says_in_one_line_what_to_install(
    python: str, subprocess_env: dict[str, str]
) -> None:
    code = "import sys\nsys.modules['langgraph'] = None\nfrom handoff_files import HandoffSaver"
    done = subprocess.run([python, "-c", code], env=subprocess_env, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: HandoffSaver needs LangGraph's checkpoint package: pip install 'handoff-files[langgraph]'"
    )
