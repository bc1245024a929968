"""The fast check of free-form trees (orjson round trip) agrees with the exact walk that names what is wrong."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_files.format.model import MAX_DATA_DEPTH, _plain_json, _walk_json

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec="utf-8")),
    st.sampled_from(["\ud800", "a\udfffb"]),  # lone surrogates: not UTF-8
)
_TREES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner),
        st.dictionaries(st.one_of(st.text(max_size=5), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=20,
)


def _walk_accepts(value: Any) -> bool:
    try:
        _walk_json(value, 1)
    except ValueError:
        return False
    return True


@given(st.dictionaries(st.text(max_size=5), _TREES, max_size=4))
def test_the_fast_check_accepts_exactly_what_the_walk_accepts(tree: dict[str, Any]) -> None:
    assert _plain_json(tree) == _walk_accepts(tree)


def _nested(depth: int) -> dict[str, Any]:
    tree: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        tree = {"k": tree}
    return tree


@pytest.mark.parametrize(
    "tree",
    [
        pytest.param({"x": math.nan}, id="NaN"),
        pytest.param({"x": [math.inf]}, id="Infinity in a list"),
        pytest.param({"x": 2**64}, id="integer past 64 bits"),
        pytest.param({"x": {1: "a"}}, id="integer key"),
        pytest.param({"x": (1, 2)}, id="tuple"),
        pytest.param({"x": {1, 2}}, id="set"),
        pytest.param({"x": "\ud800"}, id="lone surrogate"),
        pytest.param(_nested(MAX_DATA_DEPTH), id="one level too deep"),
    ],
)
def test_the_fast_check_refuses_what_is_not_json(tree: dict[str, Any]) -> None:
    assert not _plain_json(tree)
    assert not _walk_accepts(tree)


def test_the_deepest_allowed_tree_passes_both() -> None:
    tree = _nested(MAX_DATA_DEPTH - 1)
    assert _walk_accepts(tree)
    assert _plain_json(tree)


def _lists(depth: int, leaf: list[Any]) -> dict[str, Any]:
    """The tersest tree of *depth* levels (the top map included): lists in lists, *leaf* innermost."""
    inner: list[Any] = leaf
    for _ in range(depth - 2):
        inner = [inner]
    return {"": inner}


@pytest.mark.parametrize("depth", range(MAX_DATA_DEPTH - 2, MAX_DATA_DEPTH + 3))
@pytest.mark.parametrize("leaf", [pytest.param([], id="empty"), pytest.param([0], id="one-element")])
def test_the_fast_checks_length_bound_agrees_with_the_walk_at_the_depth_limit(depth: int, leaf: list[Any]) -> None:
    """Trees of a few bytes skip the depth walk: the tersest trees around the limit show the bound is exact."""
    tree = _lists(depth, leaf)
    assert _plain_json(tree) == _walk_accepts(tree)
