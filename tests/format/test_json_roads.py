"""JSON written by someone else: orjson's tree is kept when it hides nothing, else the strict road refuses it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_files import HandoffParseError
from handoff_files.format import codec
from handoff_files.format.codec import parse_json

KEYS = st.text(alphabet=st.sampled_from(["a", ":", '"', "\\", "é", "\n", "{", "]", ","]), max_size=4)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from(["x", ":", '"', "\\", "ü", "\t"]), max_size=6)
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4))
#: ways other writers lay JSON out (none of them is ours: orjson's indent-2 or compact rendering)
LAYOUTS = [
    {"indent": None, "separators": (", ", ": ")},
    {"indent": 4},
    {"indent": "\t", "ensure_ascii": False},
    {"indent": None, "separators": (",", ":"), "ensure_ascii": True},
]


def _strict(data: bytes) -> Any:
    return codec._parse_json_strict(data, "x.json")


@given(value=VALUES, layout=st.sampled_from(LAYOUTS))
def test_json_written_by_another_tool_reads_as_the_strict_road_reads_it(value: Any, layout: dict[str, Any]) -> None:
    data = json.dumps({"v": value}, **layout).encode()
    assert parse_json(data, "x.json") == _strict(data) == {"v": value}


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1, "a": 2}',
        b'{"v": [{"k": 1, "b": {"x": 0, "x": 0}}]}',
        b'{"a:\\"b": 1, "a:\\"b": 2}',  # a key holding a colon and an escaped quote, twice
        b'{"s": "a\\\\", "s": 1}',  # a string ending in an escaped backslash, then the key again
    ],
)
def test_a_duplicated_key_is_still_refused_whatever_the_layout(data: bytes) -> None:
    with pytest.raises(HandoffParseError, match="duplicate key"):
        parse_json(data, "x.json")


@pytest.mark.parametrize("number", [2**64, -(2**63) - 1, 10**30])
def test_an_integer_past_64_bits_is_still_refused_not_read_as_a_float(number: int) -> None:
    with pytest.raises(HandoffParseError, match="64 bits"):
        parse_json(b'{"n":  %d}' % number, "x.json")


def test_keys_and_colons_inside_strings_are_not_counted_as_keys() -> None:
    data = b'{"a:b": "c:d", "e\\":": [":", {"\\\\": ":::"}]}'
    assert parse_json(data, "x.json") == {"a:b": "c:d", 'e":': [":", {"\\": ":::"}]}


def test_a_long_run_of_digits_takes_the_strict_road_and_reads_the_same() -> None:
    data = b'{"pi": 3.1415926535897932384626, "big": 18446744073709551615}'
    assert parse_json(data, "x.json") == _strict(data) == {"pi": 3.141592653589793, "big": 2**64 - 1}
