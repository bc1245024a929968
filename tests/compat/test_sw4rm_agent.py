"""SW4RM's Agent: SW4RM's agent handoff tests re-expressed, in memory and on an inbox; receiving; bad input."""

from __future__ import annotations

import json
import logging
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_files.compat.sw4rm import (
    HandoffClient,
    HandoffContext,
    HandoffRequest,
    HandoffResponse,
    HandoffStatus,
    deserialize_context,
)
from handoff_files.compat.sw4rm_agent import Agent, AgentState, Decision
from handoff_files.compat.sw4rm_client import BLOBS_DIR, HANDOFF_ID_KEY, INBOX_ENV, SW4RM_KEY
from handoff_files.foundation.errors import (
    BlobIntegrityError,
    HandoffValidationError,
    InvalidNameError,
    InvalidTransitionError,
)
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.transfers.blobs import blob_path

PENDING, ACCEPTED, REJECTED, COMPLETED = (
    HandoffStatus.PENDING,
    HandoffStatus.ACCEPTED,
    HandoffStatus.REJECTED,
    HandoffStatus.COMPLETED,
)
MODES = [pytest.param("memory", id="memory"), pytest.param("inbox", id="inbox")]

# a requester in its own process: an SW4RM-style agent that starts, takes a task and hands it off
CHILD = """
import sys
from handoff_files.compat.sw4rm_agent import Agent
agent = Agent(sys.argv[1], "Generalist")
agent.start()
agent.schedule(sys.argv[3])
response = agent.initiate_handoff(sys.argv[2], "needs a specialist")
print(response.handoff_id, response.status.value, flush=True)
"""


class Recorder(Agent):
    """An SW4RM-style receiver: overrides both hooks, records what they got, answers *decision*."""

    def __init__(
        self, agent_id: str, name: str, decision: Decision = None, *, client: HandoffClient | None = None
    ) -> None:
        super().__init__(agent_id, name, client=client)
        self.decision = decision
        self.requests: list[HandoffRequest] = []
        self.contexts: list[HandoffContext] = []
        self.status_when_received: list[HandoffStatus | None] = []

    def on_handoff_request(self, request: HandoffRequest) -> Decision:
        self.requests.append(request)
        return self.decision

    def on_handoff_received(self, context: HandoffContext) -> None:
        self.contexts.append(context)
        status = HandoffClient().get_handoff_status(self.requests[-1].metadata[HANDOFF_ID_KEY])
        self.status_when_received.append(None if status is None else status.status)


@pytest.fixture(autouse=True)
def _empty_memory() -> Iterator[None]:
    """SW4RM's tests clear the process's shared in-memory store around each test; so do these."""
    HandoffClient.clear_all_handoffs()
    yield
    HandoffClient.clear_all_handoffs()


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each behaviour runs twice: in memory (HANDOFF_INBOX unset) and on an inbox on disk named by HANDOFF_INBOX."""
    if request.param == "inbox":
        monkeypatch.setenv(INBOX_ENV, str(tmp_path / "inbox"))
    else:
        monkeypatch.delenv(INBOX_ENV, raising=False)
    return str(request.param)


@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HandoffInbox:
    """An inbox on disk that agents made without a client find through HANDOFF_INBOX, as SW4RM code makes them."""
    monkeypatch.setenv(INBOX_ENV, str(tmp_path / "inbox"))
    return HandoffInbox(tmp_path / "inbox")


def started(agent_id: str, name: str) -> Agent:
    agent = Agent(agent_id, name)
    agent.start()
    return agent


# -- SW4RM's agent handoff tests, re-expressed (both modes) ------------------------------------


@pytest.mark.usefixtures("mode")
def test_an_agent_has_sw4rms_handoff_methods_and_hooks_that_do_nothing_by_default() -> None:
    agent = Agent("agent-1", "Test Agent")
    for method in ("initiate_handoff", "get_handoff_context", "on_handoff_request", "on_handoff_received"):
        assert callable(getattr(agent, method))
    assert agent.on_handoff_request(HandoffRequest("agent-0", "agent-1", "r")) is None
    agent.on_handoff_received(HandoffContext())
    assert (agent.agent_id, agent.name, agent.state, agent.current_task_id) == (
        "agent-1",
        "Test Agent",
        AgentState.INITIALIZING,
        None,
    )


@pytest.mark.usefixtures("mode")
def test_initiating_a_handoff_answers_pending_accepted_with_an_id_another_client_knows() -> None:
    response = Agent("agent-1", "Test Agent").initiate_handoff(to_agent="agent-2", reason="Need specialized processing")
    assert isinstance(response, HandoffResponse)
    assert (response.accepted, response.status) == (True, PENDING)
    assert response.handoff_id
    status = HandoffClient().get_handoff_status(response.handoff_id)
    assert status is not None
    assert status.status is PENDING


def test_a_started_agents_context_names_it_and_says_runnable() -> None:
    context = started("agent-1", "Test Agent").get_handoff_context()
    assert isinstance(context, HandoffContext)
    assert context.metadata == {"agent_id": "agent-1", "agent_name": "Test Agent", "state": "RUNNABLE", "task_id": None}
    assert (context.conversation_history, context.tool_state) == ([], {})


def test_a_scheduled_agents_context_carries_its_state_and_task() -> None:
    agent = started("agent-1", "Test Agent")
    agent.schedule("task-123")
    context = agent.get_handoff_context()
    assert (context.metadata["state"], context.metadata["task_id"]) == ("SCHEDULED", "task-123")
    assert (agent.state, agent.state_name, agent.current_task_id) == (AgentState.SCHEDULED, "SCHEDULED", "task-123")


@pytest.mark.usefixtures("mode")
def test_a_subclass_overriding_both_hooks_gets_what_it_is_handed_directly_and_by_receiving() -> None:
    class Custom(Agent):
        def __init__(self, agent_id: str, name: str) -> None:
            super().__init__(agent_id, name)
            self.request_received: HandoffRequest | None = None
            self.context_received: HandoffContext | None = None

        def on_handoff_request(self, request: HandoffRequest) -> None:
            self.request_received = request

        def on_handoff_received(self, context: HandoffContext) -> None:
            self.context_received = context

    agent = Custom("agent-1", "Custom Agent")
    request = HandoffRequest(from_agent="agent-0", to_agent="agent-1", reason="Test")
    agent.on_handoff_request(request)
    assert agent.request_received == request
    context = HandoffContext(conversation_history=[{"role": "user", "content": "Hello"}])
    agent.on_handoff_received(context)
    assert agent.context_received == context
    # beyond SW4RM's test: receiving calls the same overrides with what agent-0 sent
    Agent("agent-0", "Sender").initiate_handoff("agent-1", "Test")
    assert [answer.status for answer in agent.receive_handoffs()] == [COMPLETED]
    assert agent.request_received is not None
    assert (agent.request_received.from_agent, agent.request_received.reason) == ("agent-0", "Test")
    assert agent.context_received is not None
    assert agent.context_received.metadata["agent_name"] == "Sender"


@pytest.mark.usefixtures("mode")
def test_the_request_an_agent_sends_carries_its_serialized_context_and_state() -> None:
    agent = started("agent-1", "Test Agent")
    agent.initiate_handoff("agent-2", "Test handoff")
    (request,) = HandoffClient().get_pending_handoffs("agent-2")
    assert request.context_snapshot is not None
    context = deserialize_context(request.context_snapshot)
    assert context.metadata["agent_id"] == "agent-1"
    assert context.metadata["state"] == "RUNNABLE"
    assert request.preserve_history is True
    assert request.capabilities_required == []
    assert {key: request.metadata[key] for key in ("current_state", "current_task_id")} == {
        "current_state": "RUNNABLE",
        "current_task_id": None,
    }


@pytest.mark.usefixtures("mode")
def test_end_to_end_the_specialist_sees_accepts_and_reads_the_generalists_context() -> None:
    generalist, specialist = started("agent-1", "Generalist"), started("agent-2", "Specialist")
    response = generalist.initiate_handoff(to_agent=specialist.agent_id, reason="Need specialist knowledge")
    assert (response.accepted, response.status) == (True, PENDING)
    client = HandoffClient()
    (request,) = client.get_pending_handoffs(specialist.agent_id)
    assert request.from_agent == generalist.agent_id
    assert client.accept_handoff(response.handoff_id).status is ACCEPTED
    assert request.context_snapshot is not None
    assert deserialize_context(request.context_snapshot).metadata["agent_id"] == generalist.agent_id


# -- receiving: the hooks run on the client (both modes) ---------------------------------------


@pytest.mark.usefixtures("mode")
def test_receiving_asks_the_request_hook_then_hands_the_context_over_accepted_then_completes() -> None:
    sender = started("agent-1", "Generalist")
    sender.schedule("task-7")
    sent = sender.initiate_handoff("agent-2", "over to you")
    receiver = Recorder("agent-2", "Specialist")
    (answer,) = receiver.receive_handoffs()
    assert (answer.handoff_id, answer.status, answer.accepted) == (sent.handoff_id, COMPLETED, True)
    (request,) = receiver.requests
    assert (request.from_agent, request.reason, request.metadata[HANDOFF_ID_KEY]) == (
        "agent-1",
        "over to you",
        sent.handoff_id,
    )
    (context,) = receiver.contexts
    assert context.metadata == {
        "agent_id": "agent-1",
        "agent_name": "Generalist",
        "state": "SCHEDULED",
        "task_id": "task-7",
    }
    assert receiver.status_when_received == [ACCEPTED]
    assert receiver.receive_handoffs() == []
    assert Recorder("agent-2", "Another").receive_handoffs() == []


@pytest.mark.usefixtures("mode")
def test_an_agent_that_overrides_no_hook_takes_its_handoffs_and_others_are_left_alone() -> None:
    sender = Agent("agent-1", "Generalist")
    mine = sender.initiate_handoff("agent-2", "mine")
    theirs = sender.initiate_handoff("agent-3", "theirs")
    assert [answer.handoff_id for answer in Agent("agent-2", "Plain").receive_handoffs()] == [mine.handoff_id]
    client = HandoffClient()
    done, waiting = client.get_handoff_status(mine.handoff_id), client.get_handoff_status(theirs.handoff_id)
    assert done is not None
    assert waiting is not None
    assert (done.status, waiting.status) == (COMPLETED, PENDING)


@pytest.mark.usefixtures("mode")
@pytest.mark.parametrize(
    ("decision", "status", "reason"),
    [
        pytest.param(None, COMPLETED, None, id="none-accepts"),
        pytest.param(True, COMPLETED, None, id="true-accepts"),
        pytest.param(HandoffResponse(True, "ignored"), COMPLETED, None, id="accepting-response"),
        pytest.param(HandoffResponse(False, "ignored", "at capacity"), REJECTED, "at capacity", id="refusing-response"),
        pytest.param(HandoffResponse(False, "ignored"), REJECTED, "declined by agent-2", id="response-no-reason"),
        pytest.param("not my field", REJECTED, "not my field", id="reason"),
        pytest.param("  ", REJECTED, "declined by agent-2", id="blank-reason"),
        pytest.param(False, REJECTED, "declined by agent-2", id="false"),
        pytest.param(42, REJECTED, "agent-2's on_handoff_request returned int", id="not-a-decision"),
    ],
)
def test_the_request_hooks_answer_accepts_or_rejects_with_a_reason(
    decision: Decision, status: HandoffStatus, reason: str | None
) -> None:
    Agent("agent-1", "Generalist").initiate_handoff("agent-2", "decide")
    receiver = Recorder("agent-2", "Specialist", decision)
    (answer,) = receiver.receive_handoffs()
    assert answer.status is status
    assert answer.accepted is (status is COMPLETED)
    if reason is None:
        assert answer.rejection_reason is None
        assert len(receiver.contexts) == 1
    else:
        assert answer.rejection_reason is not None
        assert answer.rejection_reason.startswith(reason)
        assert receiver.contexts == []


@pytest.mark.usefixtures("mode")
def test_a_request_hook_that_raises_rejects_with_the_error_and_says_so_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(Agent):
        def on_handoff_request(self, request: HandoffRequest) -> Decision:
            msg = "cannot decide"
            raise RuntimeError(msg)

    Agent("agent-1", "Generalist").initiate_handoff("agent-2", "decide")
    with caplog.at_level(logging.ERROR, logger="handoff_files.compat.sw4rm_agent"):
        (answer,) = Broken("agent-2", "Specialist").receive_handoffs()
    assert answer.status is REJECTED
    assert answer.rejection_reason == "agent-2's on_handoff_request raised RuntimeError: cannot decide"
    assert any("on_handoff_request raised" in record.message for record in caplog.records)


@pytest.mark.usefixtures("mode")
def test_a_context_that_is_not_sw4rms_is_rejected_unclaimed_and_never_handed_over() -> None:
    HandoffClient().request_handoff(HandoffRequest("agent-1", "agent-2", "garbled", context_snapshot=b"not json"))
    receiver = Recorder("agent-2", "Specialist")
    (answer,) = receiver.receive_handoffs()
    assert answer.status is REJECTED
    assert answer.rejection_reason is not None
    assert answer.rejection_reason.startswith("its context_snapshot is not an SW4RM context: Failed to deserialize")
    assert receiver.contexts == []


@pytest.mark.usefixtures("mode")
def test_a_request_sent_without_a_context_hands_over_an_empty_one() -> None:
    HandoffClient().request_handoff(HandoffRequest("agent-1", "agent-2", "bare"))
    receiver = Recorder("agent-2", "Specialist")
    assert [answer.status for answer in receiver.receive_handoffs()] == [COMPLETED]
    assert receiver.contexts == [HandoffContext()]


@pytest.mark.usefixtures("mode")
def test_a_received_hook_that_raises_leaves_the_request_accepted_for_the_caller_to_complete(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Fragile(Agent):
        def on_handoff_received(self, context: HandoffContext) -> None:
            msg = "disk full"
            raise OSError(msg)

    sent = Agent("agent-1", "Generalist").initiate_handoff("agent-2", "take over")
    with caplog.at_level(logging.ERROR, logger="handoff_files.compat.sw4rm_agent"):
        (answer,) = Fragile("agent-2", "Specialist").receive_handoffs()
    assert (answer.handoff_id, answer.status) == (sent.handoff_id, ACCEPTED)
    assert any("stays ACCEPTED" in record.message for record in caplog.records)
    client = HandoffClient()
    assert client.get_pending_handoffs("agent-2") == []
    assert client.complete_handoff(sent.handoff_id).status is COMPLETED


@pytest.mark.usefixtures("mode")
def test_a_request_another_agent_claims_first_is_passed_over() -> None:
    class Slow(Recorder):
        def on_handoff_request(self, request: HandoffRequest) -> Decision:
            # a rival, with its own client, claims the request while this agent is still deciding
            HandoffClient().accept_handoff(request.metadata[HANDOFF_ID_KEY])
            return super().on_handoff_request(request)

    sent = Agent("agent-1", "Generalist").initiate_handoff("agent-2", "contested")
    loser = Slow("agent-2", "Specialist")
    assert loser.receive_handoffs() == []
    assert loser.contexts == []
    status = HandoffClient().get_handoff_status(sent.handoff_id)
    assert status is not None
    assert status.status is ACCEPTED


# -- on an inbox: files on disk, other processes ---------------------------------------------------


def test_on_an_inbox_the_sent_request_is_a_file_and_its_context_a_blob(inbox: HandoffInbox) -> None:
    agent = started("agent-1", "Generalist")
    response = agent.initiate_handoff("agent-2", "on disk")
    record = json.loads((inbox.requests_dir / f"{response.handoff_id}.json").read_text(encoding="utf-8"))
    assert (record["from_agent"], record["to_agent"], record["status"]) == ("agent-1", "agent-2", "PENDING")
    assert record["metadata"]["current_state"] == "RUNNABLE"
    blob = inbox.path / BLOBS_DIR / blob_path(record["metadata"][SW4RM_KEY]["context"]["blob_id"])
    assert deserialize_context(blob.read_bytes()).metadata["agent_name"] == "Generalist"


def test_an_agent_given_a_client_on_an_inbox_uses_it_whatever_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(INBOX_ENV, raising=False)
    client = HandoffClient(inbox=tmp_path / "own")
    sent = Agent("agent-1", "Generalist", client=client).initiate_handoff("agent-2", "explicit")
    assert (tmp_path / "own" / "requests" / f"{sent.handoff_id}.json").is_file()
    assert HandoffClient().get_pending_handoffs("agent-2") == []  # nothing went to memory
    receiver = Recorder("agent-2", "Specialist", client=client)
    assert [answer.status for answer in receiver.receive_handoffs()] == [COMPLETED]
    assert client.inbox is not None
    assert client.inbox.get_handoff_status(sent.handoff_id) is COMPLETED


def test_a_handoff_sent_by_another_process_is_received_here_and_completed_on_disk(
    inbox: HandoffInbox, python: str, subprocess_env: dict[str, str]
) -> None:
    env = {**subprocess_env, INBOX_ENV: str(inbox.path)}
    done = subprocess.run(
        [python, "-c", CHILD, "agent-1", "agent-2", "task-9"], capture_output=True, env=env, text=True, check=True
    )
    handoff_id, status = done.stdout.split()
    assert status == "PENDING"
    receiver = Recorder("agent-2", "Specialist")
    assert [(answer.handoff_id, answer.status) for answer in receiver.receive_handoffs()] == [(handoff_id, COMPLETED)]
    assert receiver.contexts[0].metadata["task_id"] == "task-9"
    record = json.loads((inbox.requests_dir / f"{handoff_id}.json").read_text(encoding="utf-8"))
    assert record["status"] == "COMPLETED"
    assert record["accepted_at"] <= record["completed_at"]


def test_on_an_inbox_a_request_whose_context_blob_was_altered_is_skipped_reported_and_left_pending(
    inbox: HandoffInbox,
) -> None:
    sent = Agent("agent-1", "Generalist").initiate_handoff("agent-2", "tampered")
    record = json.loads((inbox.requests_dir / f"{sent.handoff_id}.json").read_text(encoding="utf-8"))
    blob = inbox.path / BLOBS_DIR / blob_path(record["metadata"][SW4RM_KEY]["context"]["blob_id"])
    blob.write_bytes(b'{"conversation_history":[],"metadata":{"forged":true},"tool_state":{}}')
    receiver = Recorder("agent-2", "Specialist")
    assert receiver.receive_handoffs() == []
    assert receiver.requests == []
    assert [type(problem) for problem in receiver.problems] == [BlobIntegrityError]
    assert inbox.get_handoff_status(sent.handoff_id) is PENDING


def test_on_an_inbox_an_agent_id_that_is_not_a_name_is_refused_naming_the_inbox(inbox: HandoffInbox) -> None:
    agent = Agent("agent one", "Spaced")
    with pytest.raises(InvalidNameError, match="not a valid id") as sending:
        agent.initiate_handoff("agent-2", "r")
    with pytest.raises(InvalidNameError, match="not a valid id") as receiving:
        agent.receive_handoffs()
    assert sending.value.path == receiving.value.path == str(inbox.path)
    assert not inbox.requests_dir.exists()


# -- state, hooks, repr --------------------------------------------------------------------------


def test_start_and_schedule_call_sw4rms_lifecycle_hooks_in_order() -> None:
    events: list[object] = []

    class Watched(Agent):
        def on_startup(self) -> None:
            events.append(("startup", self.state_name))

        def on_state_change(self, old_state: int, new_state: int) -> None:
            events.append((old_state, new_state))

        def on_scheduled(self, task_id: str) -> None:
            events.append(("scheduled", task_id, self.state_name))

    agent = Watched("agent-1", "Watched")
    agent.start()
    agent.schedule("task-1")
    assert events == [("startup", "INITIALIZING"), (1, 2), (2, 3), ("scheduled", "task-1", "SCHEDULED")]
    assert agent.state == 3  # SW4RM's number for SCHEDULED (INITIALIZING 1, RUNNABLE 2)
    assert repr(agent) == "Agent(id='agent-1', name='Watched', state=SCHEDULED)"


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent_id", "name", "match", "where"),
    [
        pytest.param("", "n", "agent_id must be a non-empty string, not an empty string", "<agent>", id="empty-id"),
        pytest.param(7, "n", "agent_id must be a non-empty string, not int", "<agent>", id="int-id"),
        pytest.param("agent-1", " ", "name must be a non-empty string", "<agent agent-1>", id="blank-name"),
        pytest.param("agent-1", None, "name must be a non-empty string, not NoneType", "<agent agent-1>", id="no-name"),
    ],
)
def test_an_agent_needs_an_id_and_a_name(agent_id: object, name: object, match: str, where: str) -> None:
    with pytest.raises(HandoffValidationError, match=match) as caught:
        Agent(agent_id, name)  # type: ignore[arg-type]
    assert caught.value.path == where


def test_a_client_that_is_not_a_handoff_client_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HandoffValidationError, match="client must be a HandoffClient, not PosixPath"):
        Agent("agent-1", "n", client=tmp_path)  # type: ignore[arg-type]


def test_starting_twice_is_an_invalid_transition_naming_the_agent_and_its_state() -> None:
    agent = started("agent-1", "Twice")
    with pytest.raises(InvalidTransitionError, match="cannot start agent agent-1: it is RUNNABLE, not INITIALIZING"):
        agent.start()
    with pytest.raises(ValueError, match="RUNNABLE"):  # SW4RM code catching ValueError keeps working
        agent.start()
    assert agent.state is AgentState.RUNNABLE


def test_scheduling_before_start_is_refused_and_sets_no_task() -> None:
    agent = Agent("agent-1", "Early")
    with pytest.raises(InvalidTransitionError, match="it is INITIALIZING, not RUNNABLE") as caught:
        agent.schedule("task-1")
    assert caught.value.path == "<agent agent-1>"
    assert (agent.state, agent.current_task_id) == (AgentState.INITIALIZING, None)


@pytest.mark.parametrize("task_id", [pytest.param("", id="empty"), pytest.param(None, id="none")])
def test_a_task_id_must_be_a_non_empty_string(task_id: object) -> None:
    agent = started("agent-1", "n")
    with pytest.raises(HandoffValidationError, match="task_id must be a non-empty string"):
        agent.schedule(task_id)  # type: ignore[arg-type]
    assert agent.state is AgentState.RUNNABLE


@pytest.mark.usefixtures("mode")
@pytest.mark.parametrize(
    ("to_agent", "reason", "match"),
    [
        pytest.param("", "r", "to_agent must be a non-empty string", id="empty-target"),
        pytest.param(None, "r", "to_agent must be a non-empty string, not NoneType", id="no-target"),
        pytest.param("agent-1", "r", "agent agent-1 cannot hand off to itself", id="itself"),
        pytest.param("agent-2", b"r", "reason must be a string, not bytes", id="bytes-reason"),
    ],
)
def test_a_bad_target_or_reason_is_refused_before_anything_is_sent(
    tmp_path: Path, to_agent: object, reason: object, match: str
) -> None:
    with pytest.raises(HandoffValidationError, match=match) as caught:
        Agent("agent-1", "n").initiate_handoff(to_agent, reason)  # type: ignore[arg-type]
    assert caught.value.path == "<agent agent-1>"
    assert HandoffClient().get_pending_handoffs("agent-2") == []
    assert not (tmp_path / "inbox").exists()


class NotJson(Agent):
    def get_handoff_context(self) -> HandoffContext:
        return HandoffContext(tool_state={"score": math.nan})


class NotAContext(Agent):
    def get_handoff_context(self) -> HandoffContext:
        return {"metadata": {}}  # type: ignore[return-value]


@pytest.mark.usefixtures("mode")
@pytest.mark.parametrize(
    ("kind", "match"),
    [
        pytest.param(NotJson, "cannot be sent: Failed to serialize HandoffContext", id="nan"),
        pytest.param(NotAContext, "must return a HandoffContext, not dict", id="dict"),
    ],
)
def test_an_overridden_context_that_cannot_be_sent_is_refused_naming_the_agent(
    tmp_path: Path, kind: type[Agent], match: str
) -> None:
    with pytest.raises(HandoffValidationError, match=match) as caught:
        kind("agent-1", "n").initiate_handoff("agent-2", "r")
    assert caught.value.path == "<agent agent-1>"
    assert HandoffClient().get_pending_handoffs("agent-2") == []
    assert not (tmp_path / "inbox").exists()
