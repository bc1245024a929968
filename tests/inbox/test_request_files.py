"""Request files as hostile input: what a request may carry, one strict reading, no ``refused_by`` from a file."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import pytest

from handoff_files.format.codec import parse_json
from handoff_files.foundation.errors import HandoffValidationError
from handoff_files.inbox import request_codec
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.status import HandoffStatus
from tests.inbox.clock import Clock


@pytest.fixture
def clock() -> Clock:
    """The inbox's clock, which the EXPIRED case moves past a request's timeout."""
    return Clock()


@pytest.fixture
def inbox(tmp_path: Path, clock: Clock) -> HandoffInbox:
    """An inbox holding one good request already, so 'nothing written' is checked against real files."""
    inbox = HandoffInbox(tmp_path / "inbox", clock=clock)
    inbox.request_handoff("alpha", "beta", "already here")
    return inbox


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"" for p in sorted(folder.rglob("*"))}


# -- metadata a request file cannot hold faithfully ------------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for _ in range(depth):
        tree = {"x": tree}
    return tree


class _Thing:
    """An object of the caller's: no JSON value."""


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        pytest.param({"n": 2**70}, "64 bits", id="int-2**70"),
        pytest.param({"n": 2**64}, "64 bits", id="int-2**64"),
        pytest.param({"n": -(2**63) - 1}, "64 bits", id="int-below-i64"),
        pytest.param({"deep": {"list": [1, 2**80]}}, "64 bits", id="big-int-nested"),
        pytest.param({"x": math.nan}, "finite", id="nan"),
        pytest.param({"x": math.inf}, "finite", id="inf"),
        pytest.param({"x": [-math.inf]}, "finite", id="minus-inf-in-list"),
        pytest.param({1: "x"}, "string", id="int-key"),
        pytest.param({"x": {None: 1}}, "string", id="none-key-nested"),
        pytest.param({"x": b"bytes"}, "bytes", id="bytes"),
        pytest.param({"x": {1, 2}}, "set", id="set"),
        pytest.param({"x": (1, 2)}, "tuple", id="tuple"),
        pytest.param({"x": _Thing()}, "_Thing", id="object"),
        pytest.param({"x": "\ud800"}, "surrogate", id="lone-surrogate"),
        pytest.param({"\ud800": 1}, "surrogate", id="lone-surrogate-key"),
        pytest.param(_nested(60), "deeper", id="too-deep"),
    ],
)
def test_metadata_a_request_file_cannot_hold_is_refused_naming_the_field_and_nothing_is_written(
    inbox: HandoffInbox, metadata: dict[Any, Any], words: str
) -> None:
    before = _snapshot(inbox.path)
    with pytest.raises(HandoffValidationError) as caught:
        inbox.request_handoff("alpha", "beta", "x", metadata=metadata)
    assert caught.value.path == str(inbox.path)
    assert "metadata" in caught.value.reason
    assert words in caught.value.reason
    assert _snapshot(inbox.path) == before


def test_metadata_at_the_edges_of_64_bits_is_kept_exactly(inbox: HandoffInbox) -> None:
    metadata = {"most": 2**64 - 1, "least": -(2**63), "float": 1e308, "nested": [{"k": None}]}
    record = inbox.request_handoff("alpha", "beta", "x", metadata=metadata)
    read = inbox.get_handoff(record.handoff_id)
    assert read is not None
    assert read.metadata == metadata


# -- one strict reading ---------------------------------------------------------------------------


def test_a_request_file_is_parsed_once_by_the_strict_reader_and_never_again_by_pydantic(
    inbox: HandoffInbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "x", metadata={"k": [1, "two"]}, timeout=60).handoff_id
    parsed: list[bytes] = []

    def counted(data: bytes, *args: Any, **kwargs: Any) -> Any:
        parsed.append(data)
        return parse_json(data, *args, **kwargs)

    def second_parse(*_: object, **__: object) -> InboxRequest:
        pytest.fail("the request file's bytes were parsed a second time, by pydantic")

    monkeypatch.setattr(request_codec, "parse_json", counted)
    monkeypatch.setattr(InboxRequest, "model_validate_json", second_parse)
    record = inbox.get_handoff(handoff_id)
    assert record is not None
    assert (record.metadata, record.status) == ({"k": [1, "two"]}, HandoffStatus.PENDING)
    assert len(parsed) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("created_at", 1700000000, id="time-as-a-number"),
        pytest.param("created_at", "2030-01-02T03:04:05", id="time-without-a-zone"),
        pytest.param("status", "pending", id="status-lowercase"),
        pytest.param("priority", "5", id="priority-as-text"),
        pytest.param("priority", 5.0, id="priority-as-float"),
        pytest.param("capabilities_required", "sql", id="capabilities-as-text"),
    ],
)
def test_a_request_file_is_validated_as_strictly_as_before(inbox: HandoffInbox, field: str, value: object) -> None:
    """Validating the parsed value (not the bytes) loosens nothing: no number for a time, no text for a number."""
    handoff_id = inbox.request_handoff("alpha", "beta", "x").handoff_id
    path = inbox.requests_dir / f"{handoff_id}.json"
    document = json.loads(path.read_bytes())
    document[field] = value
    path.write_text(json.dumps(document, indent=2))
    with pytest.raises(HandoffValidationError, match=field) as caught:
        inbox.get_handoff(handoff_id)
    assert caught.value.path == str(path)


# -- refused_by is the library's word, never a file's -----------------------------------------------


def _in_state(inbox: HandoffInbox, clock: Clock, status: HandoffStatus) -> str:
    """A request brought to *status* by the public operations (EXPIRED: past its timeout, and recorded)."""
    handoff_id = inbox.request_handoff("alpha", "beta", "take over", timeout=60).handoff_id
    if status in (HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED):
        inbox.accept_handoff(handoff_id)
    if status is HandoffStatus.COMPLETED:
        inbox.complete_handoff(handoff_id)
    if status is HandoffStatus.REJECTED:
        inbox.reject_handoff(handoff_id, "refused by the capability gate: delta lacks sql")  # the gate's words
    if status is HandoffStatus.EXPIRED:
        clock.now += dt.timedelta(seconds=60)
        inbox.expire_overdue()
    assert inbox.get_handoff_status(handoff_id) is status
    return handoff_id


@pytest.mark.parametrize("value", [pytest.param("capability-gate", id="gate"), pytest.param(None, id="null")])
@pytest.mark.parametrize("status", list(HandoffStatus), ids=[status.value for status in HandoffStatus])
def test_a_request_file_carrying_refused_by_is_refused_as_malformed_in_every_status(
    inbox: HandoffInbox, clock: Clock, status: HandoffStatus, value: str | None
) -> None:
    """The inbox never stores refused_by (a gate's refusal is never written): in a file, someone else wrote it."""
    handoff_id = _in_state(inbox, clock, status)
    path = inbox.requests_dir / f"{handoff_id}.json"
    honest = path.read_bytes()
    assert b"refused_by" not in honest
    path.write_text(json.dumps({**json.loads(honest), "refused_by": value}, indent=2))
    with pytest.raises(HandoffValidationError, match="refused_by") as caught:
        inbox.get_handoff(handoff_id)
    assert caught.value.path == str(path)
    assert handoff_id not in [record.handoff_id for record in inbox.list_handoffs()]
    assert [problem.path for problem in inbox.problems] == [str(path)]
    with pytest.raises(HandoffValidationError, match="refused_by"):
        inbox.accept_handoff(handoff_id)
    path.write_bytes(honest)  # the same file without it reads as before: refused_by was the one fault
    assert inbox.get_handoff_status(handoff_id) is status
