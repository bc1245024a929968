"""SW4RM's agent lifecycle: its thirteen states with its numbers, its Agent's moves, cooperative preemption."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import IntEnum
from types import MappingProxyType
from typing import Any, Final

from handoff_files.foundation.errors import HandoffValidationError, InvalidTransitionError

__all__ = ["TRANSITIONS", "AgentState", "Lifecycle"]

logger = logging.getLogger(__name__)


class AgentState(IntEnum):
    """An agent's state, with the names and numbers of sw4rm-sdk 0.6.0 (``sw4rm.constants``, spec section 8).

    An ``int``, so it compares equal to SW4RM's constants; 0 is the protocol's unset value,
    which no agent is ever in (``AGENT_STATE_UNSPECIFIED`` is SW4RM's name for it).
    """

    UNSPECIFIED = 0
    AGENT_STATE_UNSPECIFIED = 0
    INITIALIZING = 1
    RUNNABLE = 2
    SCHEDULED = 3
    RUNNING = 4
    WAITING = 5
    WAITING_RESOURCES = 6
    SUSPENDED = 7
    RESUMED = 8
    COMPLETED = 9
    FAILED = 10
    SHUTTING_DOWN = 11
    RECOVERING = 12


_S = AgentState

#: Each state's allowed next states: the table of SW4RM's ``sw4rm.runtime.agent.Agent`` (0.6.0).
#: COMPLETED is terminal; FAILED is left only by recovery.
TRANSITIONS: Final[Mapping[AgentState, frozenset[AgentState]]] = MappingProxyType(
    {
        _S.INITIALIZING: frozenset({_S.RUNNABLE}),
        _S.RUNNABLE: frozenset({_S.SCHEDULED}),
        _S.SCHEDULED: frozenset({_S.RUNNING}),
        _S.RUNNING: frozenset(
            {_S.WAITING, _S.WAITING_RESOURCES, _S.SUSPENDED, _S.COMPLETED, _S.FAILED, _S.SHUTTING_DOWN}
        ),
        _S.WAITING: frozenset({_S.RUNNING}),
        _S.WAITING_RESOURCES: frozenset({_S.RUNNING}),
        _S.SUSPENDED: frozenset({_S.RESUMED}),
        _S.RESUMED: frozenset({_S.RUNNING}),
        _S.COMPLETED: frozenset(),
        _S.FAILED: frozenset({_S.RECOVERING}),
        _S.RECOVERING: frozenset({_S.RUNNABLE, _S.FAILED}),
        _S.SHUTTING_DOWN: frozenset({_S.FAILED}),
    }
)

# the states a method may move from where SW4RM's docstring names fewer than the table allows
# into its target (its code lets start() leave RECOVERING, complete_recovery() leave INITIALIZING)
_ONLY_FROM: Final[Mapping[str, frozenset[AgentState]]] = MappingProxyType(
    {
        "start": frozenset({_S.INITIALIZING}),
        "complete_recovery": frozenset({_S.RECOVERING}),
        "fail_recovery": frozenset({_S.RECOVERING}),
    }
)
_PREEMPT: Final = "PREEMPT_REQUEST"


class _Keep:
    """The marker for a field a move leaves as it is."""


_KEEP: Final = _Keep()


class Lifecycle:
    """SW4RM's agent lifecycle, for :class:`~handoff_files.compat.sw4rm_agent.Agent` to inherit.

    Each method moves as SW4RM's does, only along :data:`TRANSITIONS` (``start``,
    ``complete_recovery`` and ``fail_recovery`` only from the one state SW4RM documents), and
    calls SW4RM's hooks in SW4RM's order. A move out of order raises
    :class:`~handoff_files.foundation.errors.InvalidTransitionError` (a ``ValueError``, where
    SW4RM raises its own ``StateTransitionError``) before any hook runs or anything changes
    (SW4RM runs ``on_startup``, ``on_suspend`` and ``on_shutdown``, and sets the task id or failure
    reason, before it checks). The state lives in memory; a subclass keeps it elsewhere by
    overriding :meth:`_record` (the compat ``Agent`` saves it in a thread when given one).
    """

    agent_id: str
    _where: str

    def __init__(self) -> None:
        self._state = AgentState.INITIALIZING
        self._current_task_id: str | None = None
        self._failure_reason: str | None = None
        self._preempt_requested = False
        self._preempt_reason: str | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """The current state (an int, so it compares equal to SW4RM's constants)."""
        return self._state

    @property
    def state_name(self) -> str:
        """The current state's name, as SW4RM spells it (``"RUNNABLE"`` …)."""
        return self._state.name

    @property
    def current_task_id(self) -> str | None:
        """The task :meth:`schedule` assigned, until :meth:`complete`; else None."""
        return self._current_task_id

    @property
    def failure_reason(self) -> str | None:
        """The reason of the last :meth:`fail` or :meth:`fail_recovery`, until :meth:`complete_recovery`."""
        return self._failure_reason

    def can_transition_to(self, target_state: int) -> bool:
        """Whether :data:`TRANSITIONS` allows a move from the current state to *target_state*."""
        return target_state in TRANSITIONS[self._state]

    def is_terminal(self) -> bool:
        """True in COMPLETED, the one state with no way out (FAILED can recover), as SW4RM answers."""
        return self._state is AgentState.COMPLETED

    # -- moves ---------------------------------------------------------------------------------

    def start(self) -> None:
        """INITIALIZING → RUNNABLE; :meth:`on_startup` runs first.

        :raises InvalidTransitionError: if the agent is not INITIALIZING.
        """
        self._check("start", AgentState.RUNNABLE)
        self.on_startup()
        self._move(AgentState.RUNNABLE)

    def schedule(self, task_id: str) -> None:
        """RUNNABLE → SCHEDULED with *task_id*, then :meth:`on_scheduled`.

        :raises HandoffValidationError: if *task_id* is not a non-empty string.
        :raises InvalidTransitionError: if the agent is not RUNNABLE.
        """
        if not isinstance(task_id, str) or not task_id.strip():
            found = "an empty string" if isinstance(task_id, str) else type(task_id).__name__
            msg = f"task_id must be a non-empty string, not {found}"
            raise HandoffValidationError(self._where, msg)
        self._check("schedule", AgentState.SCHEDULED)
        self._move(AgentState.SCHEDULED, task_id=task_id)
        self.on_scheduled(task_id)

    def run(self) -> None:
        """→ RUNNING, from SCHEDULED, WAITING, WAITING_RESOURCES or RESUMED."""
        self._step("run", AgentState.RUNNING)

    def wait(self) -> None:
        """RUNNING → WAITING: waiting for input or an answer."""
        self._step("wait", AgentState.WAITING)

    def wait_resources(self) -> None:
        """RUNNING → WAITING_RESOURCES: waiting for memory, compute or a service's limit."""
        self._step("wait_resources", AgentState.WAITING_RESOURCES)

    def suspend(self) -> None:
        """RUNNING → SUSPENDED (preempted); :meth:`on_suspend` runs first, to save what must be kept."""
        self._check("suspend", AgentState.SUSPENDED)
        self.on_suspend()
        self._move(AgentState.SUSPENDED)

    def resume(self) -> None:
        """SUSPENDED → RESUMED, then :meth:`on_resume`; :meth:`run` carries on."""
        self._step("resume", AgentState.RESUMED)
        self.on_resume()

    def complete(self) -> None:
        """RUNNING → COMPLETED, the terminal state; the task id is cleared."""
        self._check("complete", AgentState.COMPLETED)
        self._move(AgentState.COMPLETED, task_id=None)

    def fail(self, reason: str) -> None:
        """→ FAILED with *reason*, from RUNNING, SHUTTING_DOWN or RECOVERING.

        :raises HandoffValidationError: if *reason* is not a string.
        :raises InvalidTransitionError: from any other state (the reason is then not kept).
        """
        self._check("fail", AgentState.FAILED, reason)
        self._move(AgentState.FAILED, failure_reason=reason)

    def shutdown(self) -> None:
        """RUNNING → SHUTTING_DOWN; :meth:`on_shutdown` runs first. Only :meth:`fail` leaves it."""
        self._check("shutdown", AgentState.SHUTTING_DOWN)
        self.on_shutdown()
        self._move(AgentState.SHUTTING_DOWN)

    def recover(self) -> None:
        """FAILED → RECOVERING, then :meth:`on_recovery_start`."""
        self._step("recover", AgentState.RECOVERING)
        self.on_recovery_start()

    def complete_recovery(self) -> None:
        """RECOVERING → RUNNABLE, clearing the failure reason, then ``on_recovery_complete(success=True)``."""
        self._check("complete_recovery", AgentState.RUNNABLE)
        self._move(AgentState.RUNNABLE, failure_reason=None)
        self.on_recovery_complete(success=True)

    def fail_recovery(self, reason: str) -> None:
        """RECOVERING → FAILED with *reason*, then ``on_recovery_complete(success=False)``."""
        self._check("fail_recovery", AgentState.FAILED, reason)
        self._move(AgentState.FAILED, failure_reason=reason)
        self.on_recovery_complete(success=False)

    def _step(self, verb: str, new: AgentState) -> None:
        self._check(verb, new)
        self._move(new)

    def _check(self, verb: str, new: AgentState, reason: object = "") -> None:
        """Raise unless *verb* may move the agent to *new* now (and *reason* is a string)."""
        if not isinstance(reason, str):
            msg = f"reason must be a string, not {type(reason).__name__}"
            raise HandoffValidationError(self._where, msg)
        sources = _ONLY_FROM.get(verb) or frozenset(s for s, targets in TRANSITIONS.items() if new in targets)
        if self._state in sources:
            return
        names = sorted(sources)  # in SW4RM's order of states
        allowed = ", ".join(s.name for s in names[:-1]) + (" or " if len(names) > 1 else "") + names[-1].name
        only = f"only a {allowed} agent" if len(names) == 1 else f"only an agent that is {allowed}"
        msg = (
            f"cannot {verb} agent {self.agent_id}: it is {self.state_name}, not {allowed}; {only} can become {new.name}"
        )
        raise InvalidTransitionError(self._where, msg)

    def _move(
        self, new: AgentState, *, task_id: str | _Keep | None = _KEEP, failure_reason: str | _Keep | None = _KEEP
    ) -> None:
        """Record the move (:meth:`_record`), then make it and call :meth:`on_state_change`."""
        task = self._current_task_id if isinstance(task_id, _Keep) else task_id
        failure = self._failure_reason if isinstance(failure_reason, _Keep) else failure_reason
        self._record(new, task, failure)
        old, self._state = self._state, new
        self._current_task_id, self._failure_reason = task, failure
        self.on_state_change(old, new)

    def _record(self, state: AgentState, task_id: str | None, failure_reason: str | None) -> None:
        """Keep the state about to be entered, before anything changes; raise to refuse the move. Keeps nothing here."""

    # -- cooperative preemption ----------------------------------------------------------------

    def safe_point(self) -> bool:
        """True if a preemption was requested (:meth:`on_control`) and the caller should yield here."""
        return self._preempt_requested

    @contextmanager
    def non_preemptible(self, *, deadline_ms: int | None = None) -> Iterator[None]:
        """Within the block :meth:`safe_point` answers False; a pending request is back after it.

        :param deadline_ms: accepted as SW4RM's is; nothing here enforces it (SW4RM leaves that
            to its scheduler).
        """
        held = self._preempt_requested
        self._preempt_requested = False
        try:
            yield
        finally:
            self._preempt_requested = held

    # -- hooks, for subclasses (all do nothing but on_control) ---------------------------------

    def on_state_change(self, old_state: int, new_state: int) -> None:
        """Called after every move, with the states before and after."""

    def on_startup(self) -> None:
        """Called by :meth:`start` before the agent becomes RUNNABLE."""

    def on_scheduled(self, task_id: str) -> None:
        """Called by :meth:`schedule` once the agent is SCHEDULED with *task_id*."""

    def on_shutdown(self) -> None:
        """Called by :meth:`shutdown` before the agent becomes SHUTTING_DOWN."""

    def on_suspend(self) -> None:
        """Called by :meth:`suspend` before the agent becomes SUSPENDED."""

    def on_resume(self) -> None:
        """Called by :meth:`resume` once the agent is RESUMED."""

    def on_recovery_start(self) -> None:
        """Called by :meth:`recover` once the agent is RECOVERING."""

    def on_recovery_complete(self, success: bool) -> None:
        """Called by :meth:`complete_recovery` (True) and :meth:`fail_recovery` (False) after the move."""

    def on_preempt_request(self, reason: str) -> None:
        """Called by :meth:`on_control` when a preemption is requested, with its reason (or "")."""

    def on_message(self, envelope: dict[str, Any]) -> None:
        """An incoming data message; SW4RM's envelope dict. Nothing here delivers messages."""

    def on_tool_call(self, envelope: dict[str, Any]) -> None:
        """An incoming tool call; SW4RM's envelope dict. Nothing here delivers them."""

    def on_hitl(self, envelope: dict[str, Any]) -> None:
        """An incoming human-in-the-loop request; SW4RM's envelope dict. Nothing here delivers them."""

    def on_control(self, envelope: dict[str, Any]) -> None:
        """A control message: a JSON ``PREEMPT_REQUEST`` makes :meth:`safe_point` True and calls
        :meth:`on_preempt_request`; anything else is ignored, as SW4RM ignores it.
        """
        if envelope.get("content_type") != "application/json":
            return
        try:
            body = json.loads(envelope.get("payload", b""))
        except (TypeError, ValueError):
            logger.debug("agent %s: ignoring a control message whose payload is not JSON", self.agent_id)
            return
        if not isinstance(body, dict) or body.get("type") != _PREEMPT:
            return
        reason = body.get("reason")
        self._preempt_requested = True
        self._preempt_reason = reason if isinstance(reason, str) else None
        self.on_preempt_request(self._preempt_reason or "")
