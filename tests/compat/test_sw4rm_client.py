"""SW4RM's HandoffClient: SW4RM's client tests re-expressed, in memory and on an inbox; copies, expiry, persistence."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from handoff_files.compat.sw4rm import (
    HandoffClient,
    HandoffContext,
    HandoffRequest,
    HandoffResponse,
    HandoffStatus,
    deserialize_context,
    serialize_context,
    to_response,
)
from handoff_files.compat.sw4rm_client import BLOBS_DIR, HANDOFF_ID_KEY, INBOX_ENV, SW4RM_KEY
from handoff_files.foundation.errors import (
    BlobIntegrityError,
    BlobNotFoundError,
    HandoffError,
    HandoffValidationError,
    InvalidTransitionError,
    UnknownRequestError,
)
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.storage import open_storage
from handoff_files.transfers.blobs import blob_path
from tests.inbox.clock import Clock
from tests.inbox_sw4rm_child import SCRIPT

PENDING, ACCEPTED, REJECTED, COMPLETED, EXPIRED = (
    HandoffStatus.PENDING,
    HandoffStatus.ACCEPTED,
    HandoffStatus.REJECTED,
    HandoffStatus.COMPLETED,
    HandoffStatus.EXPIRED,
)
MODES = [pytest.param("memory", id="memory"), pytest.param("inbox", id="inbox")]


@pytest.fixture(autouse=True)
def _empty_memory() -> Iterator[None]:
    """SW4RM's tests clear the shared in-memory store around each test; so do these."""
    HandoffClient.clear_all_handoffs()
    yield
    HandoffClient.clear_all_handoffs()


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each SW4RM behaviour runs twice: in memory (HANDOFF_INBOX unset) and on an inbox named by HANDOFF_INBOX."""
    if request.param == "inbox":
        monkeypatch.setenv(INBOX_ENV, str(tmp_path / "inbox"))
    else:
        monkeypatch.delenv(INBOX_ENV, raising=False)
    return str(request.param)


@pytest.fixture
def client(mode: str) -> HandoffClient:
    """A client made as SW4RM code makes it: ``HandoffClient()``, no arguments."""
    made = HandoffClient()
    assert (made.inbox is None) == (mode == "memory")
    return made


def ask(client: HandoffClient, to_agent: str = "agent-2", reason: str = "Test handoff", **fields: Any) -> str:
    """Request agent-1 → *to_agent*; return the handoff id."""
    return client.request_handoff(HandoffRequest("agent-1", to_agent, reason, **fields)).handoff_id


class Agent:
    """What SW4RM's ``Agent.initiate_handoff`` does, in our words: snapshot its context, ask through a fresh client."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id

    def context(self) -> HandoffContext:
        return HandoffContext(metadata={"agent_id": self.agent_id, "agent_name": "Test Agent", "state": "RUNNABLE"})

    def initiate_handoff(self, to_agent: str, reason: str) -> HandoffResponse:
        request = HandoffRequest(
            self.agent_id,
            to_agent,
            reason,
            context_snapshot=serialize_context(self.context()),
            metadata={"current_state": "RUNNABLE", "current_task_id": None},
        )
        return HandoffClient().request_handoff(request)


# -- SW4RM's client tests, re-expressed -----------------------------------------------------


def test_a_new_client_has_sw4rms_channel_and_stub_attributes(client: HandoffClient) -> None:
    assert client._channel is None
    assert client._stub is None
    assert HandoffClient(channel="a-channel")._channel == "a-channel"


def test_a_request_is_pending_accepted_for_processing_and_timestamped(client: HandoffClient) -> None:
    response = client.request_handoff(HandoffRequest("agent-1", "agent-2", "Task delegation"))
    assert isinstance(response, HandoffResponse)
    assert response.accepted is True
    assert response.handoff_id
    assert response.status is PENDING
    assert "created_at" in response.metadata


def test_accepting_sets_accepted_and_its_timestamp(client: HandoffClient) -> None:
    response = client.accept_handoff(ask(client))
    assert response.accepted is True
    assert response.status is ACCEPTED
    assert "accepted_at" in response.metadata


def test_rejecting_keeps_the_reason_and_its_timestamp(client: HandoffClient) -> None:
    response = client.reject_handoff(ask(client), "Agent is busy with other tasks")
    assert response.accepted is False
    assert response.status is REJECTED
    assert response.rejection_reason == "Agent is busy with other tasks"
    assert "rejected_at" in response.metadata


def test_completing_an_accepted_handoff_sets_its_timestamp(client: HandoffClient) -> None:
    handoff_id = ask(client)
    client.accept_handoff(handoff_id)
    response = client.complete_handoff(handoff_id)
    assert response.status is COMPLETED
    assert "completed_at" in response.metadata


def test_pending_lists_only_the_requests_to_that_agent(client: HandoffClient) -> None:
    client.request_handoff(HandoffRequest("agent-1", "agent-2", "Handoff 1"))
    client.request_handoff(HandoffRequest("agent-3", "agent-2", "Handoff 2"))
    client.request_handoff(HandoffRequest("agent-1", "agent-4", "Handoff 3 (different target)"))
    pending = client.get_pending_handoffs("agent-2")
    assert [request.reason for request in pending] == ["Handoff 1", "Handoff 2"]
    assert all(request.to_agent == "agent-2" for request in pending)


def test_an_accepted_request_is_no_longer_pending(client: HandoffClient) -> None:
    handoff_id = ask(client)
    assert len(client.get_pending_handoffs("agent-2")) == 1
    client.accept_handoff(handoff_id)
    assert client.get_pending_handoffs("agent-2") == []


def test_status_answers_with_the_current_response(client: HandoffClient) -> None:
    handoff_id = ask(client)
    status = client.get_handoff_status(handoff_id)
    assert status is not None
    assert status.handoff_id == handoff_id
    assert status.status is PENDING


def test_status_of_an_unknown_id_is_none(client: HandoffClient) -> None:
    assert client.get_handoff_status("non-existent-id") is None
    assert client.get_handoff_status("0" * 32) is None


@pytest.mark.parametrize("operation", ["accept", "reject", "complete"])
@pytest.mark.parametrize("unknown", [pytest.param("non-existent-id", id="sw4rm-id"), pytest.param("0" * 32, id="hex")])
def test_changing_an_unknown_handoff_is_a_value_error_saying_not_found(
    client: HandoffClient, operation: str, unknown: str
) -> None:
    calls: dict[str, Callable[[], object]] = {
        "accept": lambda: client.accept_handoff(unknown),
        "reject": lambda: client.reject_handoff(unknown, "reason"),
        "complete": lambda: client.complete_handoff(unknown),
    }
    with pytest.raises(ValueError, match="not found") as caught:
        calls[operation]()
    assert isinstance(caught.value, UnknownRequestError)


def test_accepting_twice_is_a_value_error_naming_the_status_needed(client: HandoffClient) -> None:
    handoff_id = ask(client)
    client.accept_handoff(handoff_id)
    with pytest.raises(ValueError, match="not in PENDING status") as caught:
        client.accept_handoff(handoff_id)
    assert isinstance(caught.value, InvalidTransitionError)
    assert "ACCEPTED" in str(caught.value)


def test_completing_a_pending_handoff_is_a_value_error_naming_the_status_needed(client: HandoffClient) -> None:
    with pytest.raises(ValueError, match="not in ACCEPTED status"):
        client.complete_handoff(ask(client))


def test_an_agent_initiating_a_handoff_gets_a_pending_response() -> None:
    response = Agent("agent-1").initiate_handoff("agent-2", "Need specialized processing")
    assert response.accepted is True
    assert response.status is PENDING


@pytest.mark.usefixtures("mode")
def test_the_request_an_agent_sends_carries_its_context_to_another_client() -> None:
    Agent("agent-1").initiate_handoff("agent-2", "Test handoff")
    pending = HandoffClient().get_pending_handoffs("agent-2")
    assert len(pending) == 1
    assert pending[0].context_snapshot is not None
    assert deserialize_context(pending[0].context_snapshot).metadata["agent_id"] == "agent-1"


def test_request_accept_complete_moves_through_each_status(client: HandoffClient) -> None:
    first = client.request_handoff(HandoffRequest("agent-1", "agent-2", "Workflow test"))
    assert first.status is PENDING
    assert client.accept_handoff(first.handoff_id).status is ACCEPTED
    assert client.complete_handoff(first.handoff_id).status is COMPLETED


def test_request_reject_ends_rejected_with_a_reason(client: HandoffClient) -> None:
    first = client.request_handoff(HandoffRequest("agent-1", "agent-2", "Workflow test"))
    answer = client.reject_handoff(first.handoff_id, "Not equipped to handle this task")
    assert answer.status is REJECTED
    assert answer.accepted is False
    assert answer.rejection_reason is not None


@pytest.mark.usefixtures("mode")
def test_end_to_end_the_second_agent_sees_accepts_and_reads_the_first_agents_context() -> None:
    response = Agent("agent-1").initiate_handoff("agent-2", "Need specialist knowledge")
    receiver = HandoffClient()
    pending = receiver.get_pending_handoffs("agent-2")
    assert pending[0].from_agent == "agent-1"
    assert receiver.accept_handoff(response.handoff_id).status is ACCEPTED
    assert pending[0].context_snapshot is not None
    assert deserialize_context(pending[0].context_snapshot).metadata["agent_id"] == "agent-1"


# -- beyond SW4RM's tests, in both modes ----------------------------------------------------


def test_a_pending_request_carries_its_id_and_everything_it_was_sent_with(client: HandoffClient) -> None:
    snapshot = serialize_context(HandoffContext(tool_state={"cache": [1, 2]}))
    sent = HandoffRequest(
        "agent-1",
        "agent-2",
        "all fields",
        context_snapshot=snapshot,
        preserve_history=False,
        capabilities_required=["sql", "python"],
        metadata={"plan": ["a", "b"], "task": None},
        timeout=90.0,
    )
    handoff_id = client.request_handoff(sent).handoff_id
    (got,) = client.get_pending_handoffs("agent-2")
    assert got.metadata == {"plan": ["a", "b"], "task": None, HANDOFF_ID_KEY: handoff_id}
    assert (got.context_snapshot, got.preserve_history, got.timeout) == (snapshot, False, 90.0)
    assert sorted(got.capabilities_required) == ["python", "sql"]
    assert (got.from_agent, got.to_agent, got.reason) == ("agent-1", "agent-2", "all fields")


def test_callers_get_copies_changing_one_changes_nothing_stored(client: HandoffClient) -> None:
    sent = HandoffRequest("agent-1", "agent-2", "copies", metadata={"k": [1]})
    response = client.request_handoff(sent)
    sent.metadata["k"].append(2)
    response.metadata["created_at"] = "never"
    response.status = REJECTED
    (pending,) = client.get_pending_handoffs("agent-2")
    pending.metadata["k"].append(3)
    pending.reason = "changed"
    (again,) = client.get_pending_handoffs("agent-2")
    assert again.metadata["k"] == [1]
    assert again.reason == "copies"
    status = client.get_handoff_status(response.handoff_id)
    assert status is not None
    assert status.status is PENDING
    assert status.metadata["created_at"] != "never"
    assert status is not client.get_handoff_status(response.handoff_id)


def test_timestamps_are_aware_iso_times_in_the_order_things_happened(client: HandoffClient) -> None:
    handoff_id = ask(client)
    client.accept_handoff(handoff_id)
    metadata = client.complete_handoff(handoff_id).metadata
    times = [dt.datetime.fromisoformat(metadata[key]) for key in ("created_at", "accepted_at", "completed_at")]
    assert all(moment.utcoffset() == dt.timedelta(0) for moment in times)
    assert times == sorted(times)
    assert set(metadata) == {"created_at", "accepted_at", "completed_at"}


@pytest.mark.parametrize("timeout", [pytest.param(0, id="zero"), pytest.param(-1.0, id="negative")])
def test_a_timeout_that_is_not_positive_seconds_is_refused(client: HandoffClient, timeout: float) -> None:
    with pytest.raises(HandoffValidationError, match="timeout"):
        ask(client, timeout=timeout)


# -- in memory: SW4RM's shared store, with the timeout enforced ------------------------------


def test_in_memory_every_client_shares_one_store_which_clear_all_empties(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INBOX_ENV, raising=False)
    handoff_id = ask(HandoffClient())
    assert HandoffClient().get_handoff_status(handoff_id) is not None
    HandoffClient.clear_all_handoffs()
    assert HandoffClient().get_handoff_status(handoff_id) is None
    assert HandoffClient().get_pending_handoffs("agent-2") == []


def test_in_memory_an_empty_environment_variable_means_no_inbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INBOX_ENV, "")
    assert HandoffClient().inbox is None


def test_in_memory_a_request_past_its_timeout_reads_expired_and_cannot_be_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(INBOX_ENV, raising=False)
    client = HandoffClient()
    late = ask(client, timeout=0.05)
    patient = ask(client)
    time.sleep(0.1)
    assert [request.metadata[HANDOFF_ID_KEY] for request in client.get_pending_handoffs("agent-2")] == [patient]
    status = client.get_handoff_status(late)
    assert status is not None
    assert (status.status, status.accepted) == (EXPIRED, False)
    assert "expires_at" in status.metadata
    with pytest.raises(InvalidTransitionError, match=r"not in PENDING status \(current: EXPIRED\)"):
        client.accept_handoff(late)


# -- on an inbox: persisted, checked, expired by the inbox's clock ---------------------------


@pytest.fixture
def clock() -> Clock:
    """A clock the test moves by hand, so expiry is exact and instant."""
    return Clock()


@pytest.fixture
def inbox(tmp_path: Path, clock: Clock) -> HandoffInbox:
    """An inbox on the controlled clock, handed to clients directly."""
    return HandoffInbox(tmp_path / "inbox", clock=clock)


def test_on_an_inbox_a_request_expires_by_the_inbox_clock(inbox: HandoffInbox, clock: Clock) -> None:
    client = HandoffClient(inbox=inbox)
    late = ask(client, timeout=60)
    forever = ask(client)
    clock.advance(59.999)
    assert len(client.get_pending_handoffs("agent-2")) == 2
    clock.advance(0.001)
    assert [request.metadata[HANDOFF_ID_KEY] for request in client.get_pending_handoffs("agent-2")] == [forever]
    status = client.get_handoff_status(late)
    assert status is not None
    assert (status.status, status.accepted) == (EXPIRED, False)
    assert dt.datetime.fromisoformat(status.metadata["expires_at"]) == clock.now
    with pytest.raises(InvalidTransitionError, match="not in PENDING status") as caught:
        client.accept_handoff(late)
    assert "EXPIRED" in str(caught.value)
    clock.advance(10 * 365 * 24 * 3600)
    assert client.accept_handoff(forever).status is ACCEPTED


def test_on_an_inbox_each_request_is_a_file_and_its_context_a_blob_in_the_inbox(inbox: HandoffInbox) -> None:
    snapshot = serialize_context(HandoffContext(metadata={"agent_id": "agent-1"}))
    handoff_id = ask(HandoffClient(inbox=inbox.path), context_snapshot=snapshot)
    record = json.loads((inbox.requests_dir / f"{handoff_id}.json").read_text(encoding="utf-8"))
    reference = record["metadata"][SW4RM_KEY]["context"]
    assert (inbox.path / BLOBS_DIR / blob_path(reference["blob_id"])).read_bytes() == snapshot
    assert reference["size"] == len(snapshot)


def test_on_an_inbox_clear_all_never_touches_the_files(inbox: HandoffInbox) -> None:
    client = HandoffClient(inbox=inbox)
    handoff_id = ask(client)
    HandoffClient.clear_all_handoffs()
    assert client.get_handoff_status(handoff_id) is not None
    assert len(client.get_pending_handoffs("agent-2")) == 1


def test_on_an_inbox_a_context_can_go_to_a_blob_store_of_its_own(inbox: HandoffInbox, tmp_path: Path) -> None:
    snapshot = serialize_context(HandoffContext(metadata={"where": "shared"}))
    ask(HandoffClient(inbox=inbox, blobs=tmp_path / "shared"), context_snapshot=snapshot)
    assert not (inbox.path / BLOBS_DIR).exists()
    (got,) = HandoffClient(inbox=inbox, blobs=str(tmp_path / "shared")).get_pending_handoffs("agent-2")
    assert got.context_snapshot == snapshot


def _tamper(store: Path, blob_id: str) -> None:
    (store / blob_path(blob_id)).write_bytes(b'{"conversation_history":[],"metadata":{"forged":true},"tool_state":{}}')


def _remove(store: Path, blob_id: str) -> None:
    (store / blob_path(blob_id)).unlink()


@pytest.mark.parametrize(
    ("damage", "error"),
    [pytest.param(_tamper, BlobIntegrityError, id="altered"), pytest.param(_remove, BlobNotFoundError, id="missing")],
)
def test_a_request_whose_context_blob_is_altered_or_gone_is_skipped_and_reported_never_handed_out(
    inbox: HandoffInbox,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path, str], None],
    error: type[HandoffError],
) -> None:
    client = HandoffClient(inbox=inbox)
    bad = ask(client, reason="bad", context_snapshot=serialize_context(HandoffContext(metadata={"n": 1})))
    good = ask(client, reason="good", context_snapshot=serialize_context(HandoffContext(metadata={"n": 2})))
    record = json.loads((inbox.requests_dir / f"{bad}.json").read_text(encoding="utf-8"))
    damage(inbox.path / BLOBS_DIR, record["metadata"][SW4RM_KEY]["context"]["blob_id"])
    with caplog.at_level(logging.WARNING, logger="handoff_files.compat.sw4rm_inbox"):
        first = client.get_pending_handoffs("agent-2")
        second = client.get_pending_handoffs("agent-2")
    assert (
        [request.metadata[HANDOFF_ID_KEY] for request in first]
        == [good]
        == [r.metadata[HANDOFF_ID_KEY] for r in second]
    )
    assert [type(problem) for problem in client.problems] == [error]
    assert sum(bad in record.message for record in caplog.records) == 1  # said once, not at every listing
    assert client.accept_handoff(bad).status is ACCEPTED  # by id it can still be answered


def test_on_an_inbox_the_clients_metadata_key_is_reserved(inbox: HandoffInbox) -> None:
    with pytest.raises(HandoffValidationError, match=SW4RM_KEY):
        ask(HandoffClient(inbox=inbox), metadata={SW4RM_KEY: {}})
    assert not inbox.requests_dir.exists()


def test_on_an_inbox_a_context_that_is_not_bytes_is_refused_before_anything_is_written(inbox: HandoffInbox) -> None:
    with pytest.raises(HandoffValidationError, match="bytes"):
        ask(HandoffClient(inbox=inbox), context_snapshot="{}")
    assert not inbox.path.exists()


def test_on_an_inbox_a_request_made_without_the_client_reads_as_an_sw4rm_request(inbox: HandoffInbox) -> None:
    made = inbox.request_handoff("alpha", "beta", "from the CLI", capabilities_required=["sql"])
    (got,) = HandoffClient(inbox=inbox).get_pending_handoffs("beta")
    assert got == HandoffRequest("alpha", "beta", "from the CLI", capabilities_required=["sql"], metadata=got.metadata)
    assert got.metadata == {HANDOFF_ID_KEY: made.handoff_id}


def test_on_an_inbox_a_rejection_needs_a_reason(inbox: HandoffInbox) -> None:
    client = HandoffClient(inbox=inbox)
    handoff_id = ask(client)
    with pytest.raises(HandoffValidationError, match="reason"):
        client.reject_handoff(handoff_id, "")
    assert client.get_pending_handoffs("agent-2")[0].metadata[HANDOFF_ID_KEY] == handoff_id


# -- across processes ------------------------------------------------------------------------


def test_a_request_survives_its_requester_being_killed_and_another_process_takes_it(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    inbox_dir = tmp_path / "inbox"
    env = {**subprocess_env, INBOX_ENV: str(inbox_dir)}
    requester = subprocess.Popen(
        [python, str(SCRIPT), "request", "agent-1", "agent-2", "over"], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert requester.stdout is not None
        said, handoff_id, status = requester.stdout.readline().split()
        assert (said, status) == ("REQ", "PENDING")
    finally:
        os.kill(requester.pid, signal.SIGKILL)  # the request was acknowledged: the kill must not lose it
        requester.wait()
        if requester.stdout is not None:
            requester.stdout.close()

    def take(environment: dict[str, str]) -> list[str]:
        done = subprocess.run(
            [python, str(SCRIPT), "take", "agent-2"], capture_output=True, env=environment, text=True, check=True
        )
        return done.stdout.strip().split(maxsplit=3)

    # the check can fail: a process without the inbox (SW4RM's in-memory client) sees nothing
    without = {key: value for key, value in env.items() if key != INBOX_ENV}
    assert take(without) == ["NONE"]
    assert take(env) == ["TOOK", handoff_id, "ACCEPTED", json.dumps({"agent_id": "agent-1"})]
    # a restart: a fresh client in this process reads what the others left
    restarted = HandoffClient(inbox=inbox_dir)
    status_now = restarted.get_handoff_status(handoff_id)
    assert status_now is not None
    assert status_now.status is ACCEPTED
    assert {"created_at", "accepted_at"} <= set(status_now.metadata)
    assert restarted.get_pending_handoffs("agent-2") == []
    assert take(env) == ["NONE"]


# -- the one reading of an inbox request as SW4RM's response ----------------------------------


def test_an_inbox_request_reads_as_sw4rms_response_in_one_way_only(tmp_path: Path) -> None:
    """``to_response`` is the one conversion: accepted unless rejected or expired; the request's times as metadata."""
    clock = Clock()
    inbox = HandoffInbox(tmp_path / "inbox", clock=clock)
    client = HandoffClient(inbox=inbox)
    pending = inbox.request_handoff("alpha", "beta", "x", metadata={"k": 1}, timeout=60)
    created, expires = clock.now.isoformat(), (clock.now + dt.timedelta(seconds=60)).isoformat()
    assert to_response(pending) == HandoffResponse(
        True, pending.handoff_id, None, PENDING, {"created_at": created, "expires_at": expires}
    )
    assert client.get_handoff_status(pending.handoff_id) == to_response(pending)
    rejected = inbox.reject_handoff(pending.handoff_id, "busy")
    answer = to_response(rejected)
    assert (answer.accepted, answer.rejection_reason, answer.status) == (False, "busy", REJECTED)
    assert set(answer.metadata) == {"created_at", "expires_at", "rejected_at"}
    accepted = inbox.accept_handoff(inbox.request_handoff("alpha", "beta", "y").handoff_id)
    assert to_response(accepted).accepted
    completed = client.complete_handoff(accepted.handoff_id)
    assert completed == to_response(accepted.model_copy(update={"status": COMPLETED, "completed_at": clock.now}))
    overdue = inbox.request_handoff("alpha", "beta", "z", timeout=1)
    clock.advance(2)
    assert client.get_handoff_status(overdue.handoff_id) == HandoffResponse(
        False, overdue.handoff_id, None, EXPIRED, to_response(overdue).metadata
    )


def test_a_client_on_an_inbox_in_a_bucket_keeps_context_snapshots_in_the_bucket(
    bucket_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(INBOX_ENV, bucket_url)
    response = Agent("agent-1").initiate_handoff("agent-2", "Need specialist knowledge")
    receiver = HandoffClient()
    assert receiver.inbox is not None
    assert receiver.inbox.where == bucket_url
    [pending] = receiver.get_pending_handoffs("agent-2")
    assert receiver.accept_handoff(response.handoff_id).status is ACCEPTED
    assert pending.context_snapshot is not None
    assert deserialize_context(pending.context_snapshot).metadata["agent_id"] == "agent-1"
    keys = open_storage(bucket_url).list("")
    assert any(key.startswith(f"{BLOBS_DIR}/") for key in keys), keys
