"""SW4RM's agent lifecycle: AgentState's numbers and the Agent's moves, against sw4rm-sdk 0.6.0's source and itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handoff_files.compat.sw4rm import Agent, AgentState
from handoff_files.compat.sw4rm_agent import LIFECYCLE_KEY
from handoff_files.foundation.errors import (
    HandoffValidationError,
    HandoffWriteError,
    InvalidTransitionError,
    NoHandoffError,
)
from handoff_files.thread.store import HandoffStore

S = AgentState

# sw4rm-sdk 0.6.0, sw4rm/runtime/agent.py (AgentState) and sw4rm/constants.py, read by hand
SDK_NUMBERS = {
    "AGENT_STATE_UNSPECIFIED": 0,
    "INITIALIZING": 1,
    "RUNNABLE": 2,
    "SCHEDULED": 3,
    "RUNNING": 4,
    "WAITING": 5,
    "WAITING_RESOURCES": 6,
    "SUSPENDED": 7,
    "RESUMED": 8,
    "COMPLETED": 9,
    "FAILED": 10,
    "SHUTTING_DOWN": 11,
    "RECOVERING": 12,
}

# sw4rm-sdk 0.6.0, sw4rm/runtime/agent.py, Agent._VALID_TRANSITIONS, read by hand
SDK_MOVES = {
    S.INITIALIZING: {S.RUNNABLE},
    S.RUNNABLE: {S.SCHEDULED},
    S.SCHEDULED: {S.RUNNING},
    S.RUNNING: {S.WAITING, S.WAITING_RESOURCES, S.SUSPENDED, S.COMPLETED, S.FAILED, S.SHUTTING_DOWN},
    S.WAITING: {S.RUNNING},
    S.WAITING_RESOURCES: {S.RUNNING},
    S.SUSPENDED: {S.RESUMED},
    S.RESUMED: {S.RUNNING},
    S.COMPLETED: set(),
    S.FAILED: {S.RECOVERING},
    S.RECOVERING: {S.RUNNABLE, S.FAILED},
    S.SHUTTING_DOWN: {S.FAILED},
}

# each lifecycle method: the state it moves to, and the states SW4RM's docstring allows it from
METHODS: dict[str, tuple[AgentState, set[AgentState]]] = {
    "start": (S.RUNNABLE, {S.INITIALIZING}),
    "schedule": (S.SCHEDULED, {S.RUNNABLE}),
    "run": (S.RUNNING, {S.SCHEDULED, S.WAITING, S.WAITING_RESOURCES, S.RESUMED}),
    "wait": (S.WAITING, {S.RUNNING}),
    "wait_resources": (S.WAITING_RESOURCES, {S.RUNNING}),
    "suspend": (S.SUSPENDED, {S.RUNNING}),
    "resume": (S.RESUMED, {S.SUSPENDED}),
    "complete": (S.COMPLETED, {S.RUNNING}),
    "fail": (S.FAILED, {S.RUNNING, S.SHUTTING_DOWN, S.RECOVERING}),
    "shutdown": (S.SHUTTING_DOWN, {S.RUNNING}),
    "recover": (S.RECOVERING, {S.FAILED}),
    "complete_recovery": (S.RUNNABLE, {S.RECOVERING}),
    "fail_recovery": (S.FAILED, {S.RECOVERING}),
}
ARGS: dict[str, tuple[str, ...]] = {"schedule": ("task-1",), "fail": ("boom",), "fail_recovery": ("still broken",)}

# a way from INITIALIZING to each state, as calls
PATHS: dict[AgentState, list[str]] = {
    S.INITIALIZING: [],
    S.RUNNABLE: ["start"],
    S.SCHEDULED: ["start", "schedule"],
    S.RUNNING: ["start", "schedule", "run"],
    S.WAITING: ["start", "schedule", "run", "wait"],
    S.WAITING_RESOURCES: ["start", "schedule", "run", "wait_resources"],
    S.SUSPENDED: ["start", "schedule", "run", "suspend"],
    S.RESUMED: ["start", "schedule", "run", "suspend", "resume"],
    S.COMPLETED: ["start", "schedule", "run", "complete"],
    S.FAILED: ["start", "schedule", "run", "fail"],
    S.SHUTTING_DOWN: ["start", "schedule", "run", "shutdown"],
    S.RECOVERING: ["start", "schedule", "run", "fail", "recover"],
}


def call(agent: Any, method: str) -> None:
    getattr(agent, method)(*ARGS.get(method, ()))


def agent_in(state: AgentState, kind: Callable[[str, str], Any] = Agent) -> Any:
    agent = kind("agent-1", "Worker")
    for method in PATHS[state]:
        call(agent, method)
    assert agent.state == state
    return agent


class Recorder(Agent):
    """An SW4RM-style subclass: overrides every lifecycle hook and records the calls."""

    def __init__(self, agent_id: str, name: str, *, thread: HandoffStore | None = None) -> None:
        super().__init__(agent_id, name, thread=thread)
        self.calls: list[tuple[Any, ...]] = []

    def on_state_change(self, old_state: int, new_state: int) -> None:
        self.calls.append(("state", AgentState(old_state).name, AgentState(new_state).name))

    def on_startup(self) -> None:
        self.calls.append(("startup",))

    def on_scheduled(self, task_id: str) -> None:
        self.calls.append(("scheduled", task_id))

    def on_suspend(self) -> None:
        self.calls.append(("suspend",))

    def on_resume(self) -> None:
        self.calls.append(("resume",))

    def on_shutdown(self) -> None:
        self.calls.append(("shutdown",))

    def on_recovery_start(self) -> None:
        self.calls.append(("recovery_start",))

    def on_recovery_complete(self, success: bool) -> None:
        self.calls.append(("recovery_complete", success))

    def on_preempt_request(self, reason: str) -> None:
        self.calls.append(("preempt", reason))


# -- numbers and table -------------------------------------------------------------------------


def test_agent_state_has_sw4rms_numbers_and_names_for_all_thirteen() -> None:
    assert {name: int(getattr(AgentState, name)) for name in SDK_NUMBERS} == SDK_NUMBERS
    assert int(AgentState.UNSPECIFIED) == 0
    assert AgentState["AGENT_STATE_UNSPECIFIED"] is AgentState.UNSPECIFIED  # SW4RM's name, an alias
    assert len(AgentState) == 13


def test_can_transition_to_answers_sw4rms_agent_table_for_every_pair() -> None:
    for state, targets in SDK_MOVES.items():
        agent = agent_in(state)
        assert {target for target in AgentState if agent.can_transition_to(target)} == targets, state.name
        assert agent.can_transition_to(int(next(iter(targets)))) if targets else True  # a plain int works too


def test_each_method_moves_only_from_the_states_its_sw4rm_docstring_names() -> None:
    """Every method from every state: allowed states move to the target, others raise and change nothing."""
    for method, (target, sources) in METHODS.items():
        assert all(target in SDK_MOVES[source] for source in sources), method  # never outside SW4RM's table
        for state in AgentState:
            if state is S.UNSPECIFIED:
                continue
            agent = agent_in(state)
            before = (agent.state, agent.current_task_id, agent.failure_reason)
            if state in sources:
                call(agent, method)
                assert agent.state is target, (method, state.name)
            else:
                with pytest.raises(InvalidTransitionError, match=f"cannot {method} agent agent-1: it is {state.name}"):
                    call(agent, method)
                assert (agent.state, agent.current_task_id, agent.failure_reason) == before, (method, state.name)


def test_a_move_out_of_order_names_the_agent_its_state_and_where_the_move_may_start() -> None:
    agent = agent_in(S.RUNNABLE)
    with pytest.raises(InvalidTransitionError, match="it is RUNNABLE, not RUNNING, SHUTTING_DOWN or RECOVERING") as e:
        agent.fail("oops")
    assert e.value.path == "<agent agent-1>"
    assert isinstance(e.value, ValueError)
    assert agent.failure_reason is None


# -- the lifecycle as SW4RM code drives it ------------------------------------------------------


def test_a_task_runs_waits_is_suspended_resumes_and_completes_calling_each_hook_in_sw4rms_order() -> None:
    agent = Recorder("agent-1", "Worker")
    for method in ("start", "schedule", "run", "wait", "run", "wait_resources", "run", "suspend", "resume", "run"):
        call(agent, method)
    task, terminal = agent.current_task_id, agent.is_terminal()
    assert (task, terminal) == ("task-1", False)
    agent.complete()
    assert (agent.state, agent.state_name, agent.current_task_id, agent.is_terminal()) == (
        S.COMPLETED,
        "COMPLETED",
        None,
        True,
    )
    moves = [c[1:] for c in agent.calls if c[0] == "state"]
    assert [new for _, new in moves] == [
        "RUNNABLE", "SCHEDULED", "RUNNING", "WAITING", "RUNNING", "WAITING_RESOURCES", "RUNNING",
        "SUSPENDED", "RESUMED", "RUNNING", "COMPLETED",
    ]  # fmt: skip
    hooks = [c for c in agent.calls if c[0] != "state"]
    assert hooks == [("startup",), ("scheduled", "task-1"), ("suspend",), ("resume",)]
    # SW4RM's order: on_startup and on_suspend before the move, on_scheduled and on_resume after
    assert agent.calls.index(("startup",)) < agent.calls.index(("state", "INITIALIZING", "RUNNABLE"))
    assert agent.calls.index(("suspend",)) < agent.calls.index(("state", "RUNNING", "SUSPENDED"))
    assert agent.calls.index(("resume",)) > agent.calls.index(("state", "SUSPENDED", "RESUMED"))


def test_a_failed_agent_recovers_to_runnable_or_fails_again_keeping_the_reason() -> None:
    agent = agent_in(S.RUNNING, Recorder)
    agent.fail("disk full")
    assert (agent.state, agent.failure_reason) == (S.FAILED, "disk full")
    agent.recover()
    agent.fail_recovery("still full")
    assert (agent.state, agent.failure_reason) == (S.FAILED, "still full")
    agent.recover()
    agent.complete_recovery()
    assert (agent.state, agent.failure_reason) == (S.RUNNABLE, None)
    hooks = [c for c in agent.calls if c[0] not in {"state", "startup", "scheduled"}]
    assert hooks == [
        ("recovery_start",),
        ("recovery_complete", False),
        ("recovery_start",),
        ("recovery_complete", True),
    ]


def test_shutting_down_calls_on_shutdown_and_can_only_end_in_failed() -> None:
    agent = agent_in(S.RUNNING, Recorder)
    agent.shutdown()
    assert agent.calls[-2:] == [("shutdown",), ("state", "RUNNING", "SHUTTING_DOWN")]
    assert [t for t in AgentState if agent.can_transition_to(t)] == [S.FAILED]
    agent.fail("shutdown timed out")
    assert (agent.state, agent.failure_reason) == (S.FAILED, "shutdown timed out")


def test_a_refused_move_calls_no_hook() -> None:
    agent = Recorder("agent-1", "Worker")
    with pytest.raises(InvalidTransitionError):
        agent.suspend()
    with pytest.raises(InvalidTransitionError):
        agent.shutdown()
    assert agent.calls == []


@pytest.mark.parametrize("reason", [pytest.param(None, id="none"), pytest.param(b"x", id="bytes")])
def test_a_failure_reason_must_be_a_string(reason: object) -> None:
    agent = agent_in(S.RUNNING)
    with pytest.raises(HandoffValidationError, match="reason must be a string"):
        agent.fail(reason)
    assert agent.state is S.RUNNING


# -- cooperative preemption and message hooks ---------------------------------------------------


def preempt(reason: str) -> dict[str, Any]:
    payload = json.dumps({"type": "PREEMPT_REQUEST", "reason": reason}).encode()
    return {"content_type": "application/json", "payload": payload}


def test_a_preempt_control_message_makes_safe_point_true_and_calls_the_hook() -> None:
    agent = agent_in(S.RUNNING, Recorder)
    assert agent.safe_point() is False
    agent.on_control(preempt("higher priority task"))
    assert agent.safe_point() is True
    assert agent.calls[-1] == ("preempt", "higher priority task")


def test_non_preemptible_masks_a_preempt_request_inside_and_restores_it_after() -> None:
    agent = agent_in(S.RUNNING)
    agent.on_control(preempt("later"))
    with agent.non_preemptible(deadline_ms=5000):
        assert agent.safe_point() is False
    assert agent.safe_point() is True


@pytest.mark.parametrize(
    "envelope",
    [
        pytest.param({"content_type": "application/json", "payload": b"{not json"}, id="bad-json"),
        pytest.param({"content_type": "text/plain", "payload": b"PREEMPT_REQUEST"}, id="not-json-type"),
        pytest.param({"content_type": "application/json", "payload": b'{"type": "OTHER"}'}, id="other-type"),
        pytest.param({"content_type": "application/json", "payload": b"[1]"}, id="not-an-object"),
        pytest.param({}, id="empty"),
    ],
)
def test_other_control_messages_are_ignored_as_sw4rm_ignores_them(envelope: dict[str, Any]) -> None:
    agent = agent_in(S.RUNNING, Recorder)
    agent.on_control(envelope)
    assert agent.safe_point() is False
    assert not any(c[0] == "preempt" for c in agent.calls)


def test_the_message_hooks_exist_and_do_nothing_by_default() -> None:
    agent = agent_in(S.RUNNING)
    for hook in ("on_message", "on_tool_call", "on_hitl"):
        assert getattr(agent, hook)({"payload": b"x"}) is None
    assert agent.state is S.RUNNING


def test_sw4rms_docstring_example_runs_unchanged() -> None:
    printed: list[str] = []

    class MyAgent(Agent):
        def on_state_change(self, old_state: int, new_state: int) -> None:
            printed.append(f"State changed: {AgentState(old_state).name} -> {AgentState(new_state).name}")

    agent = MyAgent("agent-1", "Worker")
    before = agent.state
    agent.start()
    assert (before, agent.state) == (AgentState.INITIALIZING, AgentState.RUNNABLE)
    assert printed == ["State changed: INITIALIZING -> RUNNABLE"]


# -- against sw4rm-sdk itself, when installed ---------------------------------------------------


@pytest.fixture
def sdk() -> Any:
    """sw4rm-sdk's runtime agent module; these tests skip without it (it is not a dependency)."""
    return pytest.importorskip(
        "sw4rm.runtime.agent", reason="sw4rm-sdk is not installed (pip install sw4rm-sdk==0.6.0)"
    )


def test_agent_state_numbers_equal_the_installed_sdks(sdk: Any) -> None:
    sdk_names = {name: value for name, value in vars(sdk.AgentState).items() if isinstance(value, int)}
    assert sdk_names == SDK_NUMBERS  # the table above is the SDK's
    assert {name: int(getattr(AgentState, name)) for name in sdk_names} == sdk_names
    assert all(sdk.AgentState.name(int(state)) == state.name for state in AgentState if state)  # and its names


def test_the_transition_table_equals_the_installed_sdk_agents(sdk: Any) -> None:
    assert {int(k): {int(t) for t in v} for k, v in SDK_MOVES.items()} == sdk.Agent._VALID_TRANSITIONS


def test_the_sdk_agents_public_methods_are_all_here(sdk: Any) -> None:
    missing = [name for name in dir(sdk.Agent) if not name.startswith("_") and not hasattr(Agent, name)]
    assert missing == []


def test_every_allowed_call_from_every_state_moves_as_the_installed_sdk_agent_does(sdk: Any) -> None:
    for method, (_, sources) in METHODS.items():
        for state in sources:
            ours, theirs = agent_in(state), agent_in(state, sdk.Agent)
            call(ours, method)
            call(theirs, method)
            assert (
                int(ours.state),
                ours.state_name,
                ours.current_task_id,
                ours.failure_reason,
                ours.is_terminal(),
            ) == (
                theirs.state,
                theirs.state_name,
                theirs.current_task_id,
                theirs.failure_reason,
                theirs.is_terminal(),
            ), (method, state.name)


def test_preemption_behaves_as_the_installed_sdk_agents(sdk: Any) -> None:
    for kind in (Agent, sdk.Agent):
        agent = agent_in(S.RUNNING, kind)
        agent.on_control(preempt("p"))
        with agent.non_preemptible():
            assert agent.safe_point() is False
        assert agent.safe_point() is True


# -- the lifecycle state persisted in a thread ----------------------------------------------------


def test_with_a_thread_each_move_is_saved_and_a_new_agent_resumes_where_it_was(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    agent = Agent("agent-1", "Worker", thread=store)
    for method in ("start", "schedule", "run", "wait"):
        call(agent, method)
    restored = store.restore()
    assert restored.generation == 4  # one generation per move
    assert restored.handoff.state.data[LIFECYCLE_KEY] == {
        "agent_id": "agent-1",
        "state": "WAITING",
        "task_id": "task-1",
        "failure_reason": None,
    }
    again = Agent("agent-1", "Worker", thread=HandoffStore(tmp_path / "t"))
    assert (again.state, again.current_task_id, again.failure_reason) == (S.WAITING, "task-1", None)
    again.run()
    again.fail("disk full")
    third = Agent("agent-1", "Worker", thread=store)
    assert (third.state, third.failure_reason) == (S.FAILED, "disk full")
    assert [t for t in AgentState if third.can_transition_to(t)] == [S.RECOVERING]


def test_an_empty_thread_gives_a_new_agent_and_nothing_is_written_before_its_first_move(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    agent = Agent("agent-1", "Worker", thread=store)
    assert agent.state is S.INITIALIZING
    with pytest.raises(NoHandoffError):
        store.restore()
    agent.start()
    assert store.restore().handoff.state.data[LIFECYCLE_KEY]["state"] == "RUNNABLE"


def test_the_threads_other_layers_are_kept_across_moves(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "Half the importer is done.", "state": {"data": {"rows": 7}, "error_count": 2}})
    agent = Agent("agent-1", "Worker", thread=store)
    assert agent.state is S.INITIALIZING  # a thread without the agent's record
    agent.start()
    handoff = store.restore().handoff
    assert handoff.narrative == "Half the importer is done."
    assert (handoff.state.error_count, handoff.state.data["rows"]) == (2, 7)


def test_a_move_whose_save_fails_changes_nothing_and_calls_no_state_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = HandoffStore(tmp_path / "t")
    agent = agent_in(S.RUNNABLE, lambda agent_id, name: Recorder(agent_id, name, thread=store))

    def refuse(*_: object, **__: object) -> None:
        raise HandoffWriteError(store.path, "disk full")

    monkeypatch.setattr(store, "update", refuse)
    calls = list(agent.calls)
    with pytest.raises(HandoffWriteError, match="disk full"):
        agent.schedule("task-9")
    assert (agent.state, agent.current_task_id, agent.calls) == (S.RUNNABLE, None, calls)


@pytest.mark.parametrize(
    ("record", "match"),
    [
        pytest.param({"agent_id": "agent-2", "state": "RUNNING"}, "is agent agent-2's, not agent-1's", id="other"),
        pytest.param({"agent_id": "agent-1", "state": "DANCING"}, "'DANCING' is not an SW4RM agent state", id="name"),
        pytest.param({"agent_id": "agent-1", "state": "UNSPECIFIED"}, "not an SW4RM agent state", id="unset"),
        pytest.param({"agent_id": "agent-1", "state": 4}, "4 is not an SW4RM agent state", id="number"),
        pytest.param({"agent_id": "agent-1", "state": "RUNNING", "task_id": 3}, "task_id must be", id="task"),
        pytest.param("RUNNING", "must be an object", id="not-object"),
    ],
)
def test_a_damaged_or_foreign_record_is_refused_naming_the_thread(tmp_path: Path, record: object, match: str) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"state": {"data": {LIFECYCLE_KEY: record}}})
    with pytest.raises(HandoffValidationError, match=match) as caught:
        Agent("agent-1", "Worker", thread=store)
    assert caught.value.path == str(store.path)


def test_a_thread_must_be_a_handoff_store(tmp_path: Path) -> None:
    with pytest.raises(HandoffValidationError, match="thread must be a HandoffStore, not PosixPath"):
        Agent("agent-1", "Worker", thread=tmp_path)  # type: ignore[arg-type]
