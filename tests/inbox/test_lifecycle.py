"""The inbox in one process: every transition, expiry on a controlled clock, order, copies, damage, serve, fallback."""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from handoff_files import HandoffError, HandoffStore, HandoffValidationError, InvalidNameError
from handoff_files.foundation.errors import (
    HandoffParseError,
    HandoffWriteError,
    InvalidTransitionError,
    UnknownRequestError,
)
from handoff_files.inbox.capabilities import AgentRegistry
from handoff_files.inbox.fallback import request_handoff_with_fallback
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.request import CAPABILITY_GATE, InboxRequest
from handoff_files.inbox.serve import thread_id_for
from handoff_files.inbox.status import HandoffStatus
from handoff_files.storage import Storage, open_storage
from handoff_files.transfers.adopt import AdoptResult, adopt_checkpoint
from handoff_files.transfers.blobs import LocalBlobStore
from handoff_files.transfers.descriptor import Descriptor
from handoff_files.transfers.export import handoff_checkpoint
from tests.inbox.clock import Clock

PENDING, ACCEPTED, REJECTED, COMPLETED, EXPIRED = (
    HandoffStatus.PENDING,
    HandoffStatus.ACCEPTED,
    HandoffStatus.REJECTED,
    HandoffStatus.COMPLETED,
    HandoffStatus.EXPIRED,
)


@pytest.fixture
def clock() -> Clock:
    """A clock the test moves by hand, so expiry is exact and instant."""
    return Clock()


@pytest.fixture(params=["folder", "bucket"])
def inbox_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where an inbox is: a folder, or a prefix in a bucket of the real object store (SeaweedFS)."""
    if request.param == "folder":
        return str(tmp_path / "inbox")
    url: str = request.getfixturevalue("bucket_url")
    return url


@pytest.fixture
def inbox(inbox_at: str, clock: Clock) -> HandoffInbox:
    """An inbox not yet created, on the controlled clock, in a folder or in a bucket."""
    return HandoffInbox(inbox_at, clock=clock)


@pytest.fixture
def folder_inbox(tmp_path: Path, clock: Clock) -> HandoffInbox:
    """An inbox in a folder (for what only a folder has: modes, temp files)."""
    return HandoffInbox(tmp_path / "inbox", clock=clock)


def _file(inbox: HandoffInbox, handoff_id: str) -> str:
    """The request's file or object, as errors name it."""
    return f"{inbox.where}/requests/{handoff_id}.json"


def _storage(inbox: HandoffInbox) -> Storage:
    """The inbox's folder or bucket prefix, through the storage seam (to read and damage its bytes)."""
    return open_storage(inbox.where)


def _raw(inbox: HandoffInbox, handoff_id: str) -> bytes:
    return _storage(inbox).read(f"requests/{handoff_id}.json", limit=1 << 20).data


def _put_raw(inbox: HandoffInbox, handoff_id: str, data: bytes) -> None:
    """Overwrite the request's bytes, as a careless hand or a torn copy would."""
    storage, key = _storage(inbox), f"requests/{handoff_id}.json"
    storage.replace(key, data, storage.read(key, limit=1 << 20).etag)


def _exists(inbox: HandoffInbox) -> bool:
    """Whether anything of the inbox was made (its folder; an object under its prefix)."""
    if inbox.where.startswith("s3://"):
        return _storage(inbox).list("") != []
    return inbox.path.exists()


def _on_disk(inbox: HandoffInbox, handoff_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(_raw(inbox, handoff_id))
    return document


def _in_state(inbox: HandoffInbox, clock: Clock, status: HandoffStatus) -> str:
    """A request (alpha → beta, 60 s timeout) brought to *status* by the public operations and the clock."""
    handoff_id = inbox.request_handoff("alpha", "beta", "take over", timeout=60).handoff_id
    if status is ACCEPTED or status is COMPLETED:
        inbox.accept_handoff(handoff_id)
    if status is COMPLETED:
        inbox.complete_handoff(handoff_id)
    if status is REJECTED:
        inbox.reject_handoff(handoff_id, "busy")
    if status is EXPIRED:
        clock.advance(60)
    assert inbox.get_handoff_status(handoff_id) is status
    return handoff_id


# -- the request file ------------------------------------------------------------------------


def test_a_request_is_one_readable_json_file_and_reads_back_equal(inbox: HandoffInbox, clock: Clock) -> None:
    record = inbox.request_handoff(
        "alpha",
        "beta",
        "port the rest",
        priority=2,
        timeout=30,
        capabilities_required=["sql", "python", "sql"],
        metadata={"ticket": 42, "tags": ["a"]},
    )
    assert _storage(inbox).list("") == [f"requests/{record.handoff_id}.json"]
    document = _on_disk(inbox, record.handoff_id)
    assert document["status"] == "PENDING"
    assert document["capabilities_required"] == ["python", "sql"]
    assert document["expires_at"] == "2030-01-02T03:04:35Z"
    assert _raw(inbox, record.handoff_id).startswith(b'{\n  "handoff_id": ')  # indented for people
    assert inbox.get_handoff(record.handoff_id) == record
    assert (record.from_agent, record.to_agent, record.priority, record.status) == ("alpha", "beta", 2, PENDING)
    assert len(record.handoff_id) == 32
    assert record.created_at == clock.now
    if not inbox.where.startswith("s3://"):  # a bucket's access is its policy's
        assert oct(inbox.requests_dir.stat().st_mode & 0o777) == "0o700"
        assert oct((inbox.requests_dir / f"{record.handoff_id}.json").stat().st_mode & 0o777) == "0o600"


def test_a_request_carries_a_descriptor_not_bytes_and_it_reads_back_verified(
    inbox: HandoffInbox, checkpoint: Descriptor
) -> None:
    record = inbox.request_handoff("alpha", "beta", "take it", descriptor=checkpoint.model_dump(mode="json"))
    assert record.descriptor == checkpoint
    read = inbox.get_handoff(record.handoff_id)
    assert read is not None
    assert read.descriptor == checkpoint
    assert _on_disk(inbox, record.handoff_id)["descriptor"]["blob_sha256"] == checkpoint.blob_sha256


# -- transitions -----------------------------------------------------------------------------

ALLOWED = [
    pytest.param((PENDING, "accept", ACCEPTED, "accepted_at"), id="pending-accept"),
    pytest.param((PENDING, "reject", REJECTED, "rejected_at"), id="pending-reject"),
    pytest.param((ACCEPTED, "complete", COMPLETED, "completed_at"), id="accepted-complete"),
]


def _apply(inbox: HandoffInbox, operation: str, handoff_id: str) -> InboxRequest:
    if operation == "accept":
        return inbox.accept_handoff(handoff_id)
    if operation == "reject":
        return inbox.reject_handoff(handoff_id, "not now")
    return inbox.complete_handoff(handoff_id)


def test_a_request_copied_one_level_deeper_is_not_listed_again(inbox: HandoffInbox) -> None:
    record = inbox.request_handoff("alpha", "beta", "port the rest")
    _storage(inbox).create(f"requests/zz/{record.handoff_id}.json", _raw(inbox, record.handoff_id))
    assert [found.handoff_id for found in inbox.list_handoffs()] == [record.handoff_id]


@pytest.mark.parametrize("case", ALLOWED)
def test_an_allowed_transition_is_written_with_its_time(
    inbox: HandoffInbox, clock: Clock, case: tuple[HandoffStatus, str, HandoffStatus, str]
) -> None:
    start, operation, end, stamp = case
    handoff_id = _in_state(inbox, clock, start)
    clock.advance(5)
    changed = _apply(inbox, operation, handoff_id)
    assert changed.status is end
    assert getattr(changed, stamp) == clock.now
    assert _on_disk(inbox, handoff_id)["status"] == end.value
    assert inbox.get_handoff(handoff_id) == changed
    if end is REJECTED:
        assert changed.rejection_reason == "not now"


def test_pending_becomes_expired_by_time_alone(inbox: HandoffInbox, clock: Clock) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "quick one", timeout=10).handoff_id
    clock.advance(9.999)
    assert inbox.get_handoff_status(handoff_id) is PENDING
    assert [r.handoff_id for r in inbox.get_pending_handoffs("beta")] == [handoff_id]
    clock.advance(0.001)
    assert inbox.get_handoff_status(handoff_id) is EXPIRED
    assert inbox.get_pending_handoffs("beta") == []
    assert _on_disk(inbox, handoff_id)["status"] == "PENDING"  # a read never writes
    assert [r.handoff_id for r in inbox.expire_overdue()] == [handoff_id]
    assert _on_disk(inbox, handoff_id)["status"] == "EXPIRED"
    assert inbox.expire_overdue() == []


FORBIDDEN = [
    pytest.param(start, operation, id=f"{start.value.lower()}-{operation}")
    for start in HandoffStatus
    for operation in ("accept", "reject", "complete")
    if (start, operation) not in {(PENDING, "accept"), (PENDING, "reject"), (ACCEPTED, "complete")}
]


@pytest.mark.parametrize(("start", "operation"), FORBIDDEN)
def test_a_forbidden_transition_raises_a_value_error_naming_the_current_status_and_changes_nothing(
    inbox: HandoffInbox, clock: Clock, start: HandoffStatus, operation: str
) -> None:
    handoff_id = _in_state(inbox, clock, start)
    if start is EXPIRED:
        inbox.expire_overdue()
    before = _raw(inbox, handoff_id)
    with pytest.raises(InvalidTransitionError) as caught:
        _apply(inbox, operation, handoff_id)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, HandoffError)
    assert f"it is {start.value}" in str(caught.value)
    assert caught.value.path == _file(inbox, handoff_id)
    assert _raw(inbox, handoff_id) == before
    assert inbox.get_handoff_status(handoff_id) is start


@pytest.mark.parametrize(
    ("start", "operation", "words"),
    [
        pytest.param(PENDING, "complete", "only an ACCEPTED request can become COMPLETED", id="complete-pending"),
        pytest.param(ACCEPTED, "accept", "only a PENDING request can become ACCEPTED", id="accept-accepted"),
    ],
)
def test_a_forbidden_transition_says_which_status_it_needs_in_plain_english(
    inbox: HandoffInbox, clock: Clock, start: HandoffStatus, operation: str, words: str
) -> None:
    handoff_id = _in_state(inbox, clock, start)
    with pytest.raises(InvalidTransitionError) as caught:
        _apply(inbox, operation, handoff_id)
    assert words in str(caught.value)


def test_forbidden_cases_cover_every_pair_but_the_allowed_ones() -> None:
    assert len(FORBIDDEN) == len(HandoffStatus) * 3 - len(ALLOWED) == 12


@pytest.mark.parametrize("operation", ["accept", "reject"])
def test_an_overdue_request_is_recorded_expired_by_the_writer_that_touches_it(
    inbox: HandoffInbox, clock: Clock, operation: str
) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "late", timeout=1).handoff_id
    clock.advance(1)
    assert _on_disk(inbox, handoff_id)["status"] == "PENDING"
    with pytest.raises(InvalidTransitionError, match="it is EXPIRED"):
        _apply(inbox, operation, handoff_id)
    assert _on_disk(inbox, handoff_id)["status"] == "EXPIRED"


def test_a_request_without_a_timeout_never_expires(inbox: HandoffInbox, clock: Clock) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "whenever").handoff_id
    clock.advance(10 * 365 * 24 * 3600)
    assert inbox.get_handoff_status(handoff_id) is PENDING
    assert inbox.accept_handoff(handoff_id).status is ACCEPTED


# -- ids and unknown requests ----------------------------------------------------------------


def test_an_unknown_id_reads_as_none_and_cannot_change(inbox: HandoffInbox) -> None:
    unknown = "0" * 32
    assert inbox.get_handoff_status(unknown) is None
    assert inbox.get_handoff(unknown) is None
    for operation in ("accept", "reject", "complete"):
        with pytest.raises(UnknownRequestError) as caught:
            _apply(inbox, operation, unknown)
        assert isinstance(caught.value, ValueError)
        assert unknown in str(caught.value)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("../../etc/passwd", id="path"),
        pytest.param("A" * 32, id="uppercase"),
        pytest.param("0" * 31, id="short"),
        pytest.param("0" * 33, id="long"),
        pytest.param("", id="empty"),
        pytest.param(7, id="not-a-string"),
    ],
)
def test_a_malformed_handoff_id_is_refused_naming_the_inbox(inbox: HandoffInbox, bad: Any) -> None:
    with pytest.raises(InvalidNameError) as caught:
        inbox.get_handoff_status(bad)
    assert caught.value.path == inbox.where
    with pytest.raises(InvalidNameError):
        inbox.accept_handoff(bad)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("from_agent", "../x", id="from-path"),
        pytest.param("from_agent", "", id="from-empty"),
        pytest.param("to_agent", "a b", id="to-space"),
        pytest.param("to_agent", "-lead", id="to-dash-first"),
    ],
)
def test_a_bad_agent_id_is_refused_naming_the_inbox_and_nothing_is_written(
    inbox: HandoffInbox, field: str, value: str
) -> None:
    agents = {"from_agent": "alpha", "to_agent": "beta", field: value}
    with pytest.raises(InvalidNameError) as caught:
        inbox.request_handoff(agents["from_agent"], agents["to_agent"], "x")
    assert caught.value.path == inbox.where
    assert not _exists(inbox)
    with pytest.raises(InvalidNameError):
        inbox.get_pending_handoffs("../beta")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        pytest.param({"priority": True}, "priority", id="priority-bool"),
        pytest.param({"priority": 1.5}, "priority", id="priority-float"),
        pytest.param({"priority": 2**63}, "priority", id="priority-too-big"),
        pytest.param({"timeout": 0}, "timeout", id="timeout-zero"),
        pytest.param({"timeout": -1}, "timeout", id="timeout-negative"),
        pytest.param({"timeout": math.nan}, "timeout", id="timeout-nan"),
        pytest.param({"timeout": math.inf}, "timeout", id="timeout-inf"),
        pytest.param({"timeout": "5"}, "timeout", id="timeout-string"),
        pytest.param({"capabilities_required": "sql"}, "capabilities_required", id="capabilities-a-string"),
        pytest.param({"capabilities_required": ["a b"]}, "capabilities_required", id="capabilities-bad-name"),
        pytest.param({"metadata": {1: "x"}}, "metadata", id="metadata-int-key"),
        pytest.param({"metadata": {"x": math.nan}}, "metadata", id="metadata-nan"),
        pytest.param({"metadata": {"x": (1, 2)}}, "metadata", id="metadata-tuple"),
        pytest.param({"metadata": {"x": object()}}, "metadata", id="metadata-object"),
        pytest.param({"metadata": ["x"]}, "metadata", id="metadata-list"),
        pytest.param({"metadata": {"x": "y" * 2_000_000}}, "bytes", id="metadata-huge"),
        pytest.param({"reason": "r" * 2001}, "reason", id="reason-too-long"),
        pytest.param({"reason": b"bytes"}, "reason", id="reason-bytes"),
        pytest.param({"descriptor": {"descriptor_version": "1.0"}}, "blob_sha256", id="descriptor-without-hash"),
        pytest.param({"descriptor": "not json"}, "JSON", id="descriptor-not-json"),
    ],
)
def test_bad_input_is_a_validation_error_naming_the_inbox_and_nothing_is_written(
    inbox: HandoffInbox, options: dict[str, Any], words: str
) -> None:
    arguments: dict[str, Any] = {"reason": "x", **options}
    with pytest.raises(HandoffValidationError, match=words) as caught:
        inbox.request_handoff("alpha", "beta", **arguments)
    assert caught.value.path == inbox.where
    assert not _exists(inbox)


def test_without_a_registry_to_agent_is_required(inbox: HandoffInbox) -> None:
    with pytest.raises(HandoffValidationError, match="to_agent is required"):
        inbox.request_handoff("alpha", None, "anyone?")


def test_a_rejection_needs_a_reason(inbox: HandoffInbox) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "x").handoff_id
    with pytest.raises(HandoffValidationError, match="reason"):
        inbox.reject_handoff(handoff_id, "  ")
    assert inbox.get_handoff_status(handoff_id) is PENDING


def test_a_clock_that_returns_a_naive_time_is_refused(inbox_at: str, tmp_path: Path) -> None:
    inbox = HandoffInbox(inbox_at, clock=lambda: dt.datetime(2030, 1, 1))  # naive: the point
    with pytest.raises(HandoffValidationError, match="aware"):
        inbox.request_handoff("alpha", "beta", "x")


def test_reads_of_an_inbox_that_does_not_exist_find_nothing_and_create_nothing(inbox: HandoffInbox) -> None:
    assert inbox.get_pending_handoffs("beta") == []
    assert inbox.list_handoffs() == []
    assert inbox.get_handoff_status("1" * 32) is None
    assert inbox.expire_overdue() == []
    assert not _exists(inbox)


def test_an_inbox_that_cannot_be_created_is_a_write_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    inbox = HandoffInbox(tmp_path / "file" / "inbox")
    with pytest.raises(HandoffWriteError) as caught:
        inbox.request_handoff("alpha", "beta", "x")
    assert caught.value.path == inbox.where


# -- order and copies ------------------------------------------------------------------------


def test_pending_requests_come_most_urgent_first_then_oldest(inbox: HandoffInbox, clock: Clock) -> None:
    made = {}
    for name, priority in [("p5-old", 5), ("p1-old", 1), ("p3", 3), ("p1-new", 1), ("p5-new", 5), ("p-neg", -2)]:
        made[inbox.request_handoff("alpha", "beta", name, priority=priority).handoff_id] = name
        clock.advance(1)
    inbox.request_handoff("alpha", "gamma", "someone else's", priority=0)
    settled = inbox.request_handoff("alpha", "beta", "already taken", priority=0).handoff_id
    inbox.accept_handoff(settled)
    inbox.request_handoff("alpha", "beta", "too late", priority=0, timeout=1)
    clock.advance(1)
    order = [made[r.handoff_id] for r in inbox.get_pending_handoffs("beta")]
    assert order == ["p-neg", "p1-old", "p1-new", "p3", "p5-old", "p5-new"]


def test_a_listing_comes_most_urgent_first_then_oldest_whatever_the_status(inbox: HandoffInbox, clock: Clock) -> None:
    """``list_handoffs`` orders as ``get_pending_handoffs`` does: ``handoff inbox list`` shows it."""
    made = {}
    for name, priority in [("p5-old", 5), ("p1-old", 1), ("p5-new", 5), ("p1-new", 1)]:
        made[inbox.request_handoff("alpha", "beta", name, priority=priority).handoff_id] = name
        clock.advance(1)
    made[inbox.request_handoff("alpha", "gamma", "p0-gamma", priority=0).handoff_id] = "p0-gamma"
    inbox.accept_handoff(next(key for key, name in made.items() if name == "p5-old"))
    assert [made[r.handoff_id] for r in inbox.list_handoffs()] == ["p0-gamma", "p1-old", "p1-new", "p5-old", "p5-new"]
    pending = inbox.list_handoffs(to_agent="beta", status=PENDING)
    assert [made[r.handoff_id] for r in pending] == ["p1-old", "p1-new", "p5-new"]


def test_callers_get_copies_never_the_inbox_s_own_objects(inbox: HandoffInbox) -> None:
    given = {"plan": ["a", "b"]}
    record = inbox.request_handoff("alpha", "beta", "x", metadata=given)
    given["plan"].append("changed by the caller")
    record.metadata["plan"].append("changed through the record")
    with pytest.raises(pydantic.ValidationError):
        record.status = ACCEPTED  # type: ignore[misc]
    first = inbox.get_handoff(record.handoff_id)
    assert first is not None
    first.metadata["plan"].clear()
    second = inbox.get_handoff(record.handoff_id)
    assert second is not None
    assert second.metadata == {"plan": ["a", "b"]}
    assert second is not first
    pending = inbox.get_pending_handoffs("beta")
    assert pending[0] is not second
    assert pending[0] == second


# -- damage ----------------------------------------------------------------------------------

DAMAGE = [
    pytest.param(lambda data, _: data[: len(data) // 2], "JSON", id="torn"),
    pytest.param(lambda data, _: b"", "JSON", id="empty"),
    pytest.param(lambda data, _: data.replace(b'"status": "PENDING"', b'"status": "MAYBE"'), "status", id="bad-status"),
    pytest.param(
        lambda data, _: data.replace(b'"priority": 5', b'"priority": 5, "priority": 1'), "uplicate", id="duplicate-key"
    ),
    pytest.param(lambda data, _: data.replace(b'"priority": 5', b'"priority": NaN'), "NaN", id="nan"),
    pytest.param(lambda data, other: data.replace(other[:8].encode(), b"ffffffff", 1), "not the", id="other-id"),
    pytest.param(lambda data, _: b"[]", "JSON object", id="not-an-object"),
    pytest.param(lambda data, _: b"{}", "handoff_id", id="empty-object"),
]


@pytest.mark.parametrize(("damage", "words"), DAMAGE)
def test_a_damaged_request_is_reported_by_name_and_does_not_stop_the_others(
    inbox: HandoffInbox, caplog: pytest.LogCaptureFixture, damage: Callable[[bytes, str], bytes], words: str
) -> None:
    good = inbox.request_handoff("alpha", "beta", "fine").handoff_id
    bad = inbox.request_handoff("alpha", "beta", "about to be damaged").handoff_id
    path = _file(inbox, bad)
    _put_raw(inbox, bad, damage(_raw(inbox, bad), bad))
    with caplog.at_level(logging.WARNING, logger="handoff_files.inbox.lifecycle"):
        assert [r.handoff_id for r in inbox.get_pending_handoffs("beta")] == [good]
        inbox.get_pending_handoffs("beta")
    assert [problem.path for problem in inbox.problems] == [path]
    assert words in inbox.problems[0].reason
    assert [record.message.count(path) for record in caplog.records] == [1]  # warned once, not per listing
    with pytest.raises(HandoffError, match=words) as caught:
        inbox.get_handoff_status(bad)
    assert caught.value.path == path
    with pytest.raises(HandoffError) as caught:
        inbox.accept_handoff(bad)
    assert caught.value.path == path
    assert inbox.accept_handoff(good).status is ACCEPTED
    _storage(inbox).remove(f"requests/{bad}.json")
    inbox.list_handoffs()
    assert inbox.problems == ()


def test_a_request_file_with_a_duplicated_key_is_refused_by_the_strict_reader(inbox: HandoffInbox) -> None:
    """A second ``status`` must not quietly win: the record is damage, named, never half read."""
    handoff_id = inbox.request_handoff("alpha", "beta", "x").handoff_id
    path = _file(inbox, handoff_id)
    _put_raw(
        inbox,
        handoff_id,
        _raw(inbox, handoff_id).replace(b'  "status": "PENDING"', b'  "status": "PENDING",\n  "status": "ACCEPTED"'),
    )
    with pytest.raises(HandoffParseError, match="duplicate key 'status'") as caught:
        inbox.get_handoff(handoff_id)
    assert caught.value.path == path
    assert isinstance(caught.value.__cause__, HandoffParseError)  # the one strict reader refused it
    with pytest.raises(HandoffParseError):
        inbox.accept_handoff(handoff_id)
    assert inbox.list_handoffs() == []
    assert [type(problem) for problem in inbox.problems] == [HandoffParseError]


def test_a_dead_writer_s_temp_file_is_ignored_and_cleared_by_the_next_writer(folder_inbox: HandoffInbox) -> None:
    inbox = folder_inbox
    handoff_id = inbox.request_handoff("alpha", "beta", "x").handoff_id
    stray = inbox.requests_dir / f".{handoff_id}.json.abcd1234.tmp"
    stray.write_bytes(b'{"half": ')
    unrelated = inbox.requests_dir / "notes.txt"
    unrelated.write_text("a person's file")
    assert [r.handoff_id for r in inbox.list_handoffs()] == [handoff_id]
    assert inbox.problems == ()
    HandoffInbox(inbox.path).request_handoff("alpha", "beta", "y")  # a new process's first write
    assert not stray.exists()
    assert unrelated.exists()


# -- the capability gate, as the inbox uses it -------------------------------------------------


@pytest.fixture
def registry() -> AgentRegistry:
    """alpha may delegate java, python and sql; beta can do python; gamma python and sql; delta nothing."""
    return AgentRegistry(
        {
            "alpha": {"capabilities": [], "scope": ["java", "python", "sql"]},
            "beta": {"capabilities": ["python"]},
            "gamma": {"capabilities": ["python", "sql"]},
            "delta": {},
        }
    )


def test_with_a_registry_a_request_without_a_target_is_routed_to_a_capable_agent(
    inbox_at: str, tmp_path: Path, registry: AgentRegistry
) -> None:
    inbox = HandoffInbox(inbox_at, registry=registry)
    assert inbox.request_handoff("alpha", None, "x", capabilities_required=["python"]).to_agent == "beta"
    assert inbox.request_handoff("alpha", None, "x", capabilities_required=["sql"]).to_agent == "gamma"
    assert inbox.request_handoff("alpha", None, "x").to_agent == "beta"


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(("alpha", "delta", ["sql"], "delta lacks sql"), id="target-lacks"),
        pytest.param(("beta", "gamma", ["sql"], "sql outside beta's delegation scope"), id="out-of-scope"),
        pytest.param(("alpha", "omega", [], "omega not in the agent registry"), id="unknown-target"),
        pytest.param(("omega", "beta", [], "omega not in the agent registry"), id="unknown-source"),
        pytest.param(("alpha", None, ["java"], "no registered agent other than alpha has java"), id="no-route"),
        pytest.param(("beta", None, ["python"], "python outside beta's delegation scope"), id="no-route-scope"),
    ],
)
def test_a_request_failing_the_gate_is_returned_rejected_with_the_reason_and_never_written(
    inbox_at: str, tmp_path: Path, registry: AgentRegistry, case: tuple[str, str | None, list[str], str]
) -> None:
    source, target, required, words = case
    inbox = HandoffInbox(inbox_at, registry=registry)
    record = inbox.request_handoff(source, target, "x", capabilities_required=required)
    assert record.status is REJECTED
    assert record.rejection_reason is not None
    assert record.rejection_reason.startswith("refused by the capability gate: ")
    assert words in record.rejection_reason
    assert not _exists(inbox)
    assert inbox.get_handoff_status(record.handoff_id) is None


def test_who_refused_a_request_is_a_field_not_a_wording(inbox_at: str, tmp_path: Path, registry: AgentRegistry) -> None:
    """``refused_by`` tells a gate's refusal from an agent's rejection, and is never written to a request file."""
    inbox = HandoffInbox(inbox_at, registry=registry)
    refused = inbox.request_handoff("alpha", "delta", "x", capabilities_required=["python"])
    assert (refused.status, refused.refused_by) == (REJECTED, CAPABILITY_GATE)
    stored = inbox.request_handoff("alpha", "beta", "x", capabilities_required=["python"])
    assert stored.refused_by is None
    assert "refused_by" not in _on_disk(inbox, stored.handoff_id)  # request files keep the form older readers know
    rejected = inbox.reject_handoff(stored.handoff_id, "refused by nobody: busy")  # words that look like the gate's
    assert (rejected.status, rejected.refused_by) == (REJECTED, None)


def test_a_registry_path_is_loaded_by_the_inbox(inbox_at: str, tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text("agents:\n  alpha: {scope: [sql]}\n  gamma: {capabilities: [sql]}\n")
    inbox = HandoffInbox(inbox_at, registry=path)
    assert inbox.request_handoff("alpha", None, "x", capabilities_required=["sql"]).to_agent == "gamma"


# -- serve() in this process -------------------------------------------------------------------


def _layers(step: int) -> dict[str, Any]:
    return {
        "state": {"active_tasks": [f"step {step}"], "data": {"step": step}},
        "narrative": f"Did step {step}.",
        "decisions": [],
        "priorities": [{"task": f"step {step + 1}", "urgency": "first"}],
        "warnings": [],
    }


@pytest.fixture
def blobs(tmp_path: Path) -> LocalBlobStore:
    """The blob store requester and receiver share."""
    return LocalBlobStore(tmp_path / "blobs")


@pytest.fixture
def checkpoint(tmp_path: Path, blobs: LocalBlobStore) -> Descriptor:
    """A real sealed checkpoint of a thread 'alpha-run', exported into *blobs*."""
    store = HandoffStore(tmp_path / "alpha-run")
    store.save(_layers(1))
    store.save(_layers(2))
    return handoff_checkpoint(store, blobs=blobs)


class Received:
    """What on_handoff_received was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[InboxRequest, AdoptResult | None]] = []
        self.event = threading.Event()

    def __call__(self, request: InboxRequest, result: AdoptResult | None) -> None:
        self.calls.append((request, result))
        self.event.set()


def _asking(asked: list[InboxRequest]) -> Callable[[InboxRequest], bool]:
    """A hook that accepts everything and keeps what it was asked."""

    def hook(request: InboxRequest) -> bool:
        asked.append(request)
        return True

    return hook


def _serve(
    inbox: HandoffInbox, tmp_path: Path, blobs: LocalBlobStore, on_request: Callable[[InboxRequest], Any], **kw: Any
) -> tuple[list[InboxRequest], Received]:
    received = kw.pop("received", Received())
    settled = inbox.serve(
        "beta",
        on_handoff_request=on_request,
        on_handoff_received=received,
        blobs=blobs,
        threads_dir=tmp_path / "threads",
        rescan=kw.pop("rescan", 0.2),
        **kw,
    )
    return settled, received


def test_serve_adopts_the_checkpoint_hands_it_over_and_completes(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor
) -> None:
    inbox = HandoffInbox(inbox_at)
    handoff_id = inbox.request_handoff("alpha", "beta", "take over", descriptor=checkpoint).handoff_id
    asked: list[InboxRequest] = []
    settled, received = _serve(inbox, tmp_path, blobs, _asking(asked), max_requests=1)
    assert [(r.handoff_id, r.status) for r in settled] == [(handoff_id, COMPLETED)]
    assert [r.status for r in asked] == [PENDING]
    ((request, result),) = received.calls
    assert request.status is ACCEPTED
    assert result is not None
    assert result.new_thread_id == thread_id_for(handoff_id)
    adopted = HandoffStore(tmp_path / "threads" / thread_id_for(handoff_id)).restore().handoff
    assert adopted.agent_id == "beta"
    assert adopted.lineage.adopted_from is not None
    assert adopted.lineage.adopted_from.blob_sha256 == checkpoint.blob_sha256
    assert adopted.state.data == {"step": 2}


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        pytest.param("busy with the release", "busy with the release", id="reason"),
        pytest.param(False, "declined by beta", id="false"),
        pytest.param("", "declined by beta", id="empty-string"),
        pytest.param(None, "returned NoneType", id="none"),
        pytest.param(RuntimeError("out of memory"), "raised RuntimeError: out of memory", id="raises"),
    ],
)
def test_serve_rejects_with_the_hook_s_reason_and_adopts_nothing(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor, *, answer: Any, words: str
) -> None:
    inbox = HandoffInbox(inbox_at)
    handoff_id = inbox.request_handoff("alpha", "beta", "take over", descriptor=checkpoint).handoff_id

    def hook(_request: InboxRequest) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    settled, received = _serve(inbox, tmp_path, blobs, hook, max_requests=1)
    assert [r.status for r in settled] == [REJECTED]
    record = inbox.get_handoff(handoff_id)
    assert record is not None
    assert record.rejection_reason is not None
    assert words in record.rejection_reason
    assert received.calls == []
    assert not (tmp_path / "threads").exists()


def test_serve_rejects_a_descriptor_addressed_to_another_agent(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor
) -> None:
    inbox = HandoffInbox(inbox_at)
    other = checkpoint.model_copy(update={"to_agent": "gamma"})
    handoff_id = inbox.request_handoff("alpha", "beta", "x", descriptor=other).handoff_id
    _serve(inbox, tmp_path, blobs, lambda _r: True, max_requests=1)
    record = inbox.get_handoff(handoff_id)
    assert record is not None
    assert record.status is REJECTED
    assert "addressed to gamma, not beta" in (record.rejection_reason or "")


def test_serve_takes_the_most_urgent_request_first_and_a_request_without_descriptor_too(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, clock: Clock
) -> None:
    inbox = HandoffInbox(inbox_at, clock=clock)
    ids = []
    for priority in (5, 1, 3):
        ids.append(inbox.request_handoff("alpha", "beta", "x", priority=priority).handoff_id)
        clock.advance(1)
    settled, received = _serve(inbox, tmp_path, blobs, lambda _r: True, max_requests=3)
    assert [r.handoff_id for r in settled] == [ids[1], ids[2], ids[0]]
    assert [result for _, result in received.calls] == [None, None, None]
    assert {r.status for r in settled} == {COMPLETED}


def test_serve_resumes_a_request_accepted_but_not_adopted(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor
) -> None:
    inbox = HandoffInbox(inbox_at)
    handoff_id = inbox.request_handoff("alpha", "beta", "x", descriptor=checkpoint).handoff_id
    inbox.accept_handoff(handoff_id)  # as a serve() killed right after its claim leaves it
    asked: list[InboxRequest] = []
    settled, received = _serve(inbox, tmp_path, blobs, _asking(asked), max_requests=1, resume_after=0)
    assert asked == []  # already decided: the hook is not asked again
    assert [r.status for r in settled] == [COMPLETED]
    assert received.calls[0][1] is not None
    assert HandoffStore(tmp_path / "threads" / thread_id_for(handoff_id)).restore().generation == 1


def test_a_failing_on_handoff_received_leaves_the_request_accepted_and_a_later_serve_completes_it(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = HandoffInbox(inbox_at)
    handoff_id = inbox.request_handoff("alpha", "beta", "x", descriptor=checkpoint).handoff_id
    stop = threading.Event()

    def broken(_request: InboxRequest, _result: AdoptResult | None) -> None:
        stop.set()
        msg = "agent not ready"
        raise RuntimeError(msg)

    with caplog.at_level(logging.ERROR, logger="handoff_files.inbox.lifecycle"):
        settled, _ = _serve(inbox, tmp_path, blobs, lambda _r: True, received=broken, stop=stop)
    assert settled == []
    assert inbox.get_handoff_status(handoff_id) is ACCEPTED
    assert "agent not ready" in caplog.text
    settled, received = _serve(inbox, tmp_path, blobs, lambda _r: True, max_requests=1, resume_after=0)
    assert [r.status for r in settled] == [COMPLETED]
    result = received.calls[0][1]
    assert result is not None
    assert result.new_thread_id == thread_id_for(handoff_id)  # the thread adopted the first time, taken as it is
    assert HandoffStore(tmp_path / "threads" / thread_id_for(handoff_id)).restore().generation == 1


def test_serve_picks_up_a_new_request_by_its_file_event_long_before_the_rescan(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore
) -> None:
    inbox = HandoffInbox(inbox_at)
    first = inbox.request_handoff("alpha", "beta", "first").handoff_id
    received = Received()
    stop = threading.Event()
    result: list[list[InboxRequest]] = []

    # a bucket sends no file events: it is listed every `rescan` seconds, so there the test asks for
    # that listing (with 60 s it passed only when the first scan was still running: a race)
    bucket = inbox_at.startswith("s3://")

    def run() -> None:
        settled = inbox.serve(
            "beta",
            on_handoff_request=lambda _r: True,
            on_handoff_received=received,
            blobs=blobs,
            threads_dir=tmp_path / "threads",
            stop=stop,
            rescan=1 if bucket else 60,
        )
        result.append(settled)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert received.event.wait(30)  # the first scan, after the watch began
        received.event.clear()
        second = inbox.request_handoff("alpha", "beta", "second").handoff_id
        assert received.event.wait(10)  # a folder's rescan is 60 s: only the file event can bring it this soon
    finally:
        stop.set()
        worker.join(30)
    assert not worker.is_alive()
    assert [r.handoff_id for r in result[0]] == [first, second]


def test_serve_refuses_bad_arguments(inbox_at: str, tmp_path: Path, blobs: LocalBlobStore) -> None:
    inbox = HandoffInbox(inbox_at)
    with pytest.raises(InvalidNameError):
        inbox.serve(
            "../beta",
            on_handoff_request=lambda _r: True,
            on_handoff_received=Received(),
            blobs=blobs,
            threads_dir=tmp_path,
        )
    bads: list[Any] = [0, -1, True, 1.5]
    for bad in bads:
        with pytest.raises(HandoffValidationError, match="max_requests"):
            inbox.serve(
                "beta",
                on_handoff_request=lambda _r: True,
                on_handoff_received=Received(),
                blobs=blobs,
                threads_dir=tmp_path,
                max_requests=bad,
            )


def test_serve_on_a_bucket_that_does_not_answer_waits_and_lists_again(
    bucket_url: str,
    tmp_path: Path,
    blobs: LocalBlobStore,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store down (a port nothing listens on): serve() says so and lists again, until it is stopped."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed.getsockname()[1]}")
    inbox = HandoffInbox(bucket_url)
    stop = threading.Event()
    timer = threading.Timer(3, stop.set)
    timer.start()
    try:
        settled = inbox.serve(
            "beta",
            on_handoff_request=lambda _r: True,
            on_handoff_received=Received(),
            blobs=blobs,
            threads_dir=tmp_path,
            stop=stop,
            rescan=0.2,
        )
    finally:
        timer.cancel()
    assert settled == []
    said = [r.getMessage() for r in caplog.records if "the inbox was not listed" in r.getMessage()]
    assert said, caplog.text


# -- fallback ----------------------------------------------------------------------------------


@pytest.fixture
def answering(tmp_path: Path) -> Iterator[tuple[HandoffInbox, dict[str, Any]]]:
    """An inbox and a thread answering its requests by the table given: agent → True (accept) or a reason."""
    inbox = HandoffInbox(
        tmp_path / "inbox",
        registry=AgentRegistry(
            {
                "alpha": {"scope": ["python"]},
                "beta": {"capabilities": ["python"]},
                "gamma": {"capabilities": ["python"]},
                "delta": {},
                "epsilon": {"capabilities": ["python"]},
            }
        ),
    )
    answers: dict[str, Any] = {}
    stop = threading.Event()

    def answer() -> None:
        while not stop.wait(0.01):
            for agent, reply in answers.items():
                for request in inbox.get_pending_handoffs(agent):
                    try:
                        if reply is True:
                            inbox.accept_handoff(request.handoff_id)
                        elif reply is not None:
                            inbox.reject_handoff(request.handoff_id, reply)
                    except InvalidTransitionError:
                        pass

    worker = threading.Thread(target=answer)
    worker.start()
    yield inbox, answers
    stop.set()
    worker.join()


def test_fallback_returns_the_first_acceptance_after_each_refusal(
    answering: tuple[HandoffInbox, dict[str, Any]],
) -> None:
    inbox, answers = answering
    answers.update({"beta": "busy", "gamma": None, "epsilon": True})
    result = request_handoff_with_fallback(
        inbox,
        ["delta", "beta", "gamma", "epsilon"],
        from_agent="alpha",
        reason="take over",
        wait=0.5,
        poll=0.01,
        capabilities_required=["python"],
    )
    assert (result.status, result.to_agent) == (ACCEPTED, "epsilon")
    statuses = {r.to_agent: r.status for r in inbox.list_handoffs()}
    assert statuses == {"beta": REJECTED, "gamma": EXPIRED, "epsilon": ACCEPTED}  # delta: never written
    gamma = next(r for r in inbox.list_handoffs() if r.to_agent == "gamma")
    assert _on_disk(inbox, gamma.handoff_id)["status"] == "EXPIRED"  # recorded, so it can never be taken


def test_fallback_with_no_taker_lists_every_agent_s_reason(answering: tuple[HandoffInbox, dict[str, Any]]) -> None:
    inbox, answers = answering
    answers.update({"beta": "busy"})
    result = request_handoff_with_fallback(
        inbox,
        ["beta", "gamma", "delta"],
        from_agent="alpha",
        reason="take over",
        wait=0.3,
        poll=0.01,
        capabilities_required=["python"],
    )
    assert result.status is REJECTED
    assert result.rejection_reason == (
        "beta: rejected: busy; gamma: expired after 0.3 s; delta: refused by the capability gate: delta lacks python"
    )
    assert inbox.get_handoff_status(result.handoff_id) is None  # the summary is not a stored request


def test_fallback_tells_a_gate_refusal_from_a_rejection_by_the_field_not_the_words(
    answering: tuple[HandoffInbox, dict[str, Any]],
) -> None:
    inbox, answers = answering
    answers.update({"beta": "refused by policy"})  # an agent's reason that reads like the gate's
    options: dict[str, Any] = {"from_agent": "alpha", "reason": "x", "wait": 0.5, "poll": 0.01}
    result = request_handoff_with_fallback(inbox, ["beta", "delta"], capabilities_required=["python"], **options)
    assert result.rejection_reason == (
        "beta: rejected: refused by policy; delta: refused by the capability gate: delta lacks python"
    )
    assert result.refused_by is None  # beta saw the request: not every agent was refused by the gate
    only_gate = request_handoff_with_fallback(inbox, ["delta"], capabilities_required=["python"], **options)
    assert only_gate.refused_by == CAPABILITY_GATE


def test_fallback_refuses_an_empty_list(inbox: HandoffInbox) -> None:
    with pytest.raises(HandoffValidationError, match="at least one agent"):
        request_handoff_with_fallback(inbox, [], from_agent="alpha", reason="x")


def test_inbox_files_are_private_to_their_user(folder_inbox: HandoffInbox) -> None:
    folder_inbox.request_handoff("alpha", "beta", "x")
    assert folder_inbox.path.stat().st_mode & 0o077 == 0


def test_serve_resumes_an_adoption_cut_short_after_its_commit_point(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor
) -> None:
    inbox = HandoffInbox(inbox_at)
    handoff_id = inbox.request_handoff("alpha", "beta", "x", descriptor=checkpoint).handoff_id
    inbox.accept_handoff(handoff_id)
    thread = tmp_path / "threads" / thread_id_for(handoff_id)
    adopt_checkpoint(checkpoint, thread, blobs=blobs, agent_id="beta")
    for name in ("handoff.json", "state.json", "journal.jsonl"):  # killed after history/, before the rest
        (thread / name).unlink()
    settled, received = _serve(inbox, tmp_path, blobs, _asking([]), max_requests=1, resume_after=0)
    assert [r.status for r in settled] == [COMPLETED]
    result = received.calls[0][1]
    assert result is not None
    assert (result.receipt.generation, result.checkpoint_id) == (1, checkpoint.checkpoint_id)


def test_serve_leaves_accepted_a_request_whose_thread_holds_another_checkpoint(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = HandoffInbox(inbox_at)
    handoff_id = inbox.request_handoff("alpha", "beta", "x", descriptor=checkpoint).handoff_id
    inbox.accept_handoff(handoff_id)
    HandoffStore(tmp_path / "threads" / thread_id_for(handoff_id)).save(_layers(9))  # someone else's thread
    stop = threading.Event()
    with caplog.at_level(logging.ERROR, logger="handoff_files.inbox.lifecycle"):
        worker = threading.Thread(target=lambda: _serve(inbox, tmp_path, blobs, _asking([]), stop=stop, resume_after=0))
        worker.start()
        deadline = time.monotonic() + 30
        while "not adopted from" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.set()
        worker.join(30)
    assert "not adopted from" in caplog.text
    assert inbox.get_handoff_status(handoff_id) is ACCEPTED
    assert HandoffStore(tmp_path / "threads" / thread_id_for(handoff_id)).restore().handoff.state.data == {"step": 9}


def test_a_request_another_server_accepted_just_now_is_left_to_it_until_resume_after(
    inbox_at: str, tmp_path: Path, blobs: LocalBlobStore, checkpoint: Descriptor, clock: Clock
) -> None:
    """Two servers for one agent: an ACCEPTED request is the live server's for resume_after seconds (the
    newcomer's finding: on a bucket, servers polling at other moments each resumed it, up to 4 times)."""
    inbox = HandoffInbox(inbox_at, clock=clock)
    handoff_id = inbox.request_handoff("alpha", "beta", "x", descriptor=checkpoint).handoff_id
    inbox.accept_handoff(handoff_id)  # the other server's claim, a moment ago
    received = Received()
    stop = threading.Event()
    worker = threading.Thread(
        target=lambda: _serve(inbox, tmp_path, blobs, _asking([]), received=received, stop=stop, rescan=0.05)
    )
    worker.start()
    try:
        assert not received.event.wait(1.0)  # twenty listings, and it is not taken
        clock.advance(29)
        assert not received.event.wait(0.5)
        clock.advance(1)  # DEFAULT_RESUME_AFTER: now it counts as left by a crashed server
        assert received.event.wait(30)
    finally:
        stop.set()
        worker.join(30)
    assert inbox.get_handoff_status(handoff_id) is COMPLETED


def test_resume_after_must_be_zero_or_more_seconds(inbox: HandoffInbox, tmp_path: Path, blobs: LocalBlobStore) -> None:
    for bad in (-1, float("nan"), "soon"):
        with pytest.raises(HandoffValidationError, match="resume_after"):
            _serve(inbox, tmp_path, blobs, _asking([]), max_requests=1, resume_after=bad)
