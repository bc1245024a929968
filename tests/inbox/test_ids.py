"""Request ids as people type them: git-style unique prefixes resolved, and the shortest unique prefix to show."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handoff_files import InvalidNameError
from handoff_files.foundation.errors import UnknownRequestError
from handoff_files.inbox.ids import MIN_PREFIX, SHORT_ID, matching, shortest_prefixes
from handoff_files.inbox.lifecycle import HandoffInbox


@pytest.fixture
def inbox(tmp_path: Path) -> HandoffInbox:
    """An inbox not yet created on disk."""
    return HandoffInbox(tmp_path / "inbox")


@pytest.fixture
def request_as(monkeypatch: pytest.MonkeyPatch, inbox: HandoffInbox) -> Callable[[str], str]:
    """Make a request whose id is the one given: colliding prefixes are otherwise a 1 in 65,536 chance."""

    def make(handoff_id: str) -> str:
        monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(hex=handoff_id))
        made = inbox.request_handoff("alpha", "beta", "x").handoff_id
        assert made == handoff_id
        return made

    return make  # monkeypatch puts uuid4 back after the test


A1 = "5f0c1a2b" + "0" * 24
A2 = "5f0c1a2c" + "0" * 24
B = "abcdef01" + "1" * 24
C = "12345" + "0" * 27
D = "12355" + "0" * 27


def test_a_unique_prefix_of_four_or_more_digits_resolves_to_the_full_id(
    inbox: HandoffInbox, request_as: Callable[[str], str]
) -> None:
    request_as(A1)
    request_as(B)
    for prefix in ("abcd", "abcdef01", B[:31], B):
        assert inbox.resolve_id(prefix) == B
    assert inbox.resolve_id("5f0c1a2b") == A1


def test_an_ambiguous_prefix_is_an_error_listing_every_candidate(
    inbox: HandoffInbox, request_as: Callable[[str], str]
) -> None:
    request_as(A1)
    request_as(A2)
    request_as(B)
    with pytest.raises(UnknownRequestError) as caught:
        inbox.resolve_id("5f0c")
    message = str(caught.value)
    assert "5f0c" in message
    assert "ambiguous" in message
    assert A1 in message
    assert A2 in message
    assert B not in message
    assert caught.value.path == str(inbox.path)
    assert inbox.resolve_id("5f0c1a2c") == A2  # one digit more settles it


def test_a_prefix_no_request_has_is_an_unknown_request(inbox: HandoffInbox, request_as: Callable[[str], str]) -> None:
    with pytest.raises(UnknownRequestError, match="no handoff request in this inbox has an id starting with 9999"):
        inbox.resolve_id("9999")  # not even created yet
    request_as(A1)
    with pytest.raises(UnknownRequestError, match="9999"):
        inbox.resolve_id("9999")


def test_a_full_id_is_its_own_resolution_whether_or_not_a_request_has_it(inbox: HandoffInbox) -> None:
    """As ``git rev-parse`` does with a full hash: the call that takes it then says whether it exists."""
    assert inbox.resolve_id("0" * 32) == "0" * 32


def test_a_damaged_request_file_is_still_found_by_its_prefix_so_reading_it_can_say_what_is_wrong(
    inbox: HandoffInbox, request_as: Callable[[str], str]
) -> None:
    request_as(A1)
    (inbox.requests_dir / f"{A1}.json").write_bytes(b"{")
    assert inbox.resolve_id("5f0c") == A1


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("5f0", id="three-digits"),
        pytest.param("", id="empty"),
        pytest.param("5F0C", id="uppercase"),
        pytest.param("5f0c…", id="ellipsis"),
        pytest.param("../5f0c", id="path"),
        pytest.param("0" * 33, id="too-long"),
        pytest.param(5, id="not-a-string"),
    ],
)
def test_what_is_not_four_to_32_lowercase_hex_digits_is_refused_naming_the_inbox(inbox: HandoffInbox, bad: Any) -> None:
    with pytest.raises(InvalidNameError, match="4 to 32 lowercase hex digits") as caught:
        inbox.resolve_id(bad)
    assert caught.value.path == str(inbox.path)


def test_abbreviated_ids_are_the_shortest_unique_prefixes_and_never_shorter_than_eight(
    inbox: HandoffInbox, request_as: Callable[[str], str]
) -> None:
    assert inbox.abbreviate_ids() == {}
    request_as(A1)
    request_as(A2)
    request_as(B)
    assert inbox.abbreviate_ids() == {A1: "5f0c1a2b", A2: "5f0c1a2c", B: "abcdef01"}
    twin = "abcdef01" + "1" * 20 + "2222"
    request_as(twin)
    assert inbox.abbreviate_ids()[B] == B[:29]
    assert inbox.abbreviate_ids()[twin] == twin[:29]
    for full, short in inbox.abbreviate_ids().items():
        assert inbox.resolve_id(short) == full


@pytest.mark.parametrize(
    ("ids", "minimum", "expected"),
    [
        pytest.param([], 8, {}, id="none"),
        pytest.param(["ab" * 16], 8, {"ab" * 16: "abababab"}, id="one"),
        pytest.param(["a" * 32, "a" * 31 + "b"], 8, {"a" * 32: "a" * 32, "a" * 31 + "b": "a" * 31 + "b"}, id="last"),
        pytest.param([C, D], 4, {C: "1234", D: "1235"}, id="at-least-4"),
    ],
)
def test_each_id_s_shortest_prefix_is_one_digit_past_what_it_shares_with_its_neighbours(
    ids: list[str], minimum: int, expected: dict[str, str]
) -> None:
    assert shortest_prefixes(ids, minimum=minimum) == expected


def test_matching_is_by_prefix_and_the_limits_are_git_s() -> None:
    assert (MIN_PREFIX, SHORT_ID) == (4, 8)
    assert matching("5f0c", [A1, A2, B]) == [A1, A2]
    assert matching(B, [A1, B]) == [B]
    assert matching("0000", [A1, B]) == []
