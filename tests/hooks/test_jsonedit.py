"""JSON edits in place: the value gains exactly one member or item, and every other byte stays where it was."""

from __future__ import annotations

import copy
import difflib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_files.hooks.jsonedit import JsonPath, add_item, add_member, render_new

_KEYS = st.text(st.characters(codec="utf-8"), max_size=6)  # utf-8: no lone surrogates
_SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)
_STYLES = st.sampled_from([None, 2, 4, "\t"])


def _containers(value: Any, path: JsonPath = ()) -> list[tuple[JsonPath, Any]]:
    found: list[tuple[JsonPath, Any]] = []
    if isinstance(value, dict):
        found.append((path, value))
        for key, item in value.items():
            found += _containers(item, (*path, key))
    elif isinstance(value, list):
        found.append((path, value))
        for index, item in enumerate(value):
            found += _containers(item, (*path, index))
    return found


def _at(document: Any, path: JsonPath) -> Any:
    for step in path:
        document = document[step]
    return document


def _kept(before: str, after: str) -> bool:
    """Nothing of *before* was removed or rewritten, except whitespace inside an empty container."""
    for op, i1, i2, _, _ in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op in ("delete", "replace") and before[i1:i2].strip():
            return False
    return True


@given(
    st.dictionaries(_KEYS, _VALUES, max_size=4),
    _STYLES,
    st.data(),
    _VALUES,
)
def test_adding_anywhere_keeps_the_rest_and_adds_exactly_the_value(
    document: dict[str, Any], indent: int | str | None, data: st.DataObject, value: Any
) -> None:
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    path, container = data.draw(st.sampled_from(_containers(document)))
    expected = copy.deepcopy(document)
    if isinstance(container, dict):
        key = data.draw(_KEYS.filter(lambda k: k not in container))
        after = add_member(text, path, key, value)
        _at(expected, path)[key] = value
        assert list(_at(json.loads(after), path))[-1] == key  # the new member is last
    else:
        after = add_item(text, path, value)
        _at(expected, path).append(value)
    assert json.loads(after) == expected
    assert _kept(text, after)


def test_a_member_already_there_is_refused() -> None:
    with pytest.raises(ValueError, match="already has"):
        add_member('{"a": 1}', (), "a", 2)


def test_a_path_to_the_wrong_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="not an object"):
        add_member('{"a": []}', ("a",), "b", 1)
    with pytest.raises(ValueError, match="not an array"):
        add_item('{"a": {}}', ("a",), 1)
    with pytest.raises(KeyError):
        add_item('{"a": []}', ("b",), 1)


def test_strings_with_brackets_quotes_and_escapes_do_not_confuse_the_scanner() -> None:
    text = '{\n  "a\\"}": "]\\\\",\n  "list": ["{", "\\u005d"],\n  "z": {}\n}\n'
    after = add_item(add_member(text, ("z",), "k", [1]), ("list",), "new")
    assert json.loads(after) == {'a"}': "]\\", "list": ["{", "]", "new"], "z": {"k": [1]}}


def test_a_new_file_is_two_space_json_with_a_final_newline() -> None:
    assert render_new({"a": [1]}) == '{\n  "a": [\n    1\n  ]\n}\n'
