"""SW4RM's Agent: its lifecycle (inherited) and its handoffs through the compat client."""

from __future__ import annotations

import logging
from typing import Any, Final, TypeAlias

from handoff_files.compat.sw4rm_client import HandoffClient
from handoff_files.compat.sw4rm_context import HandoffContext, deserialize_context, serialize_context
from handoff_files.compat.sw4rm_lifecycle import AgentState, Lifecycle
from handoff_files.compat.sw4rm_types import HANDOFF_ID_KEY, HandoffRequest, HandoffResponse
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffValidationError,
    InvalidTransitionError,
    NoHandoffError,
)
from handoff_files.inbox.request import MAX_REASON
from handoff_files.thread.results import Restored
from handoff_files.thread.store import HandoffStore

__all__ = ["LIFECYCLE_KEY", "Agent", "AgentState", "Decision"]

#: The key, in the ``state.data`` of a thread given to :class:`Agent`, of the agent's lifecycle
#: record: ``agent_id``, ``state`` (its name), ``task_id`` and ``failure_reason``.
LIFECYCLE_KEY: Final = "sw4rm_agent"

#: What :meth:`Agent.on_handoff_request` may answer. ``None`` (SW4RM's default hook answers it) and
#: ``True`` accept; a :class:`HandoffResponse` accepts or rejects as its ``accepted`` says (with its
#: ``rejection_reason``); a non-empty string rejects with that reason; ``False`` rejects.
Decision: TypeAlias = HandoffResponse | bool | str | None

logger = logging.getLogger(__name__)


class Agent(Lifecycle):
    """An agent as SW4RM's ``sw4rm.runtime.agent.Agent`` (sw4rm-sdk 0.6.0) shapes it: lifecycle and handoffs.

    Lifecycle: SW4RM's thirteen states with its numbers, its moves and hooks, and cooperative
    preemption, from :class:`~handoff_files.compat.sw4rm_lifecycle.Lifecycle`. The state is kept
    in memory, as SW4RM keeps it, unless a *thread* is given: then each move is first saved as
    a new generation of that thread (the other layers kept, the record under
    :data:`LIFECYCLE_KEY` in ``state.data``), and an agent made on the thread later resumes in
    the state, task and failure reason saved last (preemption requests are not kept). The message hooks
    (``on_message``, ``on_tool_call``, ``on_hitl``, ``on_control``) are there to override and to
    call; nothing here delivers messages (SW4RM's agent opens no connection either).
    Sending: :meth:`initiate_handoff` snapshots :meth:`get_handoff_context` and requests the
    handoff through a :class:`~handoff_files.compat.sw4rm_client.HandoffClient`, as SW4RM's does.
    Receiving: SW4RM only declares :meth:`on_handoff_request` and :meth:`on_handoff_received`
    for subclasses to override; :meth:`receive_handoffs` is what calls them, for each request
    pending for this agent: decide, claim, hand over the context, complete. It leaves the
    lifecycle state as it is.

    A subclass written for SW4RM's agent, importing these names instead, runs unchanged while it
    moves in the order SW4RM allows, in memory or, with ``HANDOFF_INBOX`` set (or a client on an
    inbox given), on a handoff inbox shared by every process using that directory. What differs:
    a move out of order raises :class:`~handoff_files.foundation.errors.InvalidTransitionError`
    (a ``ValueError``), not SW4RM's ``StateTransitionError``, and raises before any hook runs or
    any field changes; ``start``, ``complete_recovery`` and ``fail_recovery`` move only from the
    one state SW4RM documents for them; :class:`AgentState` is an ``IntEnum`` (SW4RM's
    ``AgentState.name(n)`` is ``AgentState(n).name`` here); bad arguments (an empty task id, a
    failure reason that is not a string) are refused.

    Errors are :class:`~handoff_files.foundation.errors.HandoffError` subclasses whose path is
    ``<agent AGENT_ID>`` (or, for what the client refuses, the inbox): a move out of order is an
    :class:`~handoff_files.foundation.errors.InvalidTransitionError` (a ``ValueError`` too), bad
    input a :class:`~handoff_files.foundation.errors.HandoffValidationError`.

    :param agent_id: this agent's id: requests are addressed to it (an inbox takes only ids of 1
        to 64 letters, digits, ``.``, ``_`` and ``-``).
    :param name: a name for people, carried in the handoff context.
    :param client: the client every call uses; by default a new ``HandoffClient()`` for each
        call, as SW4RM's agent makes one, so ``HANDOFF_INBOX`` is read when the call is made.
    :param thread: the thread that keeps this agent's lifecycle state, or None to keep it in memory.
    :raises HandoffValidationError: if *agent_id* or *name* is not a non-empty string, *client*
        is not a :class:`HandoffClient`, *thread* not a :class:`HandoffStore`, or the thread's
        record is damaged or another agent's (its path is then the thread's).
    :raises HandoffError: if the thread cannot be restored (an empty one gives a new agent).
    """

    def __init__(
        self, agent_id: str, name: str, *, client: HandoffClient | None = None, thread: HandoffStore | None = None
    ) -> None:
        where = f"<agent {agent_id}>" if isinstance(agent_id, str) and agent_id.strip() else "<agent>"
        self.agent_id = _check_text(agent_id, "agent_id", where)
        self.name = _check_text(name, "name", where)
        if client is not None and not isinstance(client, HandoffClient):
            msg = f"client must be a HandoffClient, not {type(client).__name__}"
            raise HandoffValidationError(where, msg)
        if thread is not None and not isinstance(thread, HandoffStore):
            msg = f"thread must be a HandoffStore, not {type(thread).__name__}"
            raise HandoffValidationError(where, msg)
        self._where = where
        self._client = client
        self._thread = thread
        super().__init__()
        if thread is not None:
            self._resume(thread)
        #: What the last :meth:`receive_handoffs` listing skipped (damaged requests, missing contexts).
        self.problems: tuple[HandoffError, ...] = ()

    def __repr__(self) -> str:
        return f"Agent(id={self.agent_id!r}, name={self.name!r}, state={self.state_name})"

    @property
    def client(self) -> HandoffClient:
        """The client the next call uses: the one given, or a new ``HandoffClient()``."""
        return self._client if self._client is not None else HandoffClient()

    # -- the lifecycle state in a thread -------------------------------------------------------

    def _resume(self, thread: HandoffStore) -> None:
        """Take the state, task and failure reason of the thread's last record, if it has one."""
        try:
            record: object = thread.restore().handoff.state.data.get(LIFECYCLE_KEY)
        except NoHandoffError:
            return
        if record is None:
            return
        where = str(thread.path)
        if not isinstance(record, dict):
            msg = f"state.data[{LIFECYCLE_KEY!r}] must be an object, not {type(record).__name__}"
            raise HandoffValidationError(where, msg)
        owner = record.get("agent_id")
        if owner != self.agent_id:
            msg = f"the lifecycle record in state.data[{LIFECYCLE_KEY!r}] is agent {owner}'s, not {self.agent_id}'s"
            raise HandoffValidationError(where, msg)
        name = record.get("state")
        if not isinstance(name, str) or name not in AgentState.__members__ or not AgentState[name]:
            msg = f"state.data[{LIFECYCLE_KEY!r}]: {name!r} is not an SW4RM agent state (INITIALIZING … RECOVERING)"
            raise HandoffValidationError(where, msg)
        fields = {key: record.get(key) for key in ("task_id", "failure_reason")}
        for key, value in fields.items():
            if value is not None and not isinstance(value, str):
                msg = f"state.data[{LIFECYCLE_KEY!r}]: {key} must be a string or null, not {type(value).__name__}"
                raise HandoffValidationError(where, msg)
        self._state = AgentState[name]
        self._current_task_id, self._failure_reason = fields["task_id"], fields["failure_reason"]

    def _record(self, state: AgentState, task_id: str | None, failure_reason: str | None) -> None:
        """Save the move as the thread's next generation, if the agent has a thread."""
        if self._thread is None:
            return
        record = {"agent_id": self.agent_id, "state": state.name, "task_id": task_id, "failure_reason": failure_reason}

        def change(restored: Restored | None) -> dict[str, Any]:
            layers: dict[str, Any] = {}
            if restored is not None:
                layers = restored.handoff.model_dump(
                    mode="json", include={"state", "narrative", "decisions", "priorities", "warnings", "context"}
                )
            state_layer = layers.setdefault("state", {})
            state_layer["data"] = {**state_layer.get("data", {}), LIFECYCLE_KEY: record}
            return layers

        self._thread.update(change)

    # -- hooks, for subclasses -----------------------------------------------------------------

    def on_handoff_request(self, request: HandoffRequest) -> Decision:
        """Decide on a handoff another agent requests of this one; :meth:`receive_handoffs` calls it.

        Does nothing here and answers None, which accepts, as an SW4RM agent that does not
        override it takes the work. See :data:`Decision` for the answers that reject.

        :param request: the request, with its id in ``metadata["handoff_id"]``.
        """
        return None

    def on_handoff_received(self, context: HandoffContext) -> None:
        """Take over from *context*; :meth:`receive_handoffs` calls it once the request is ACCEPTED.

        Does nothing here. A request sent without a context gives an empty one.
        """

    # -- handoffs ------------------------------------------------------------------------------

    def get_handoff_context(self) -> HandoffContext:
        """What a receiver needs to carry on from this agent; override to add history and tool state.

        :returns: an empty history and tool state, and in ``metadata`` the agent's ``agent_id``,
            ``agent_name``, ``state`` (its name) and ``task_id`` (None if unscheduled).
        """
        metadata = {
            "agent_id": self.agent_id,
            "agent_name": self.name,
            "state": self.state_name,
            "task_id": self._current_task_id,
        }
        return HandoffContext(conversation_history=[], tool_state={}, metadata=metadata)

    def initiate_handoff(self, to_agent: str, reason: str) -> HandoffResponse:
        """Ask *to_agent* to take over, sending :meth:`get_handoff_context` as the request's context.

        The request's ``metadata`` holds ``current_state`` and ``current_task_id``, and its
        ``preserve_history`` is True, as SW4RM's agent sends them.

        :returns: the client's answer: PENDING, ``accepted`` True, with the new handoff's id.
        :raises HandoffValidationError: if *to_agent* is not a non-empty string other than this
            agent's id, *reason* is not a string, or the context is not a :class:`HandoffContext`
            that serializes; as :meth:`HandoffClient.request_handoff` raises (an inbox refuses
            ids that are not names, and reasons over 2,000 characters).
        :raises HandoffError: if the request cannot be written.
        """
        _check_text(to_agent, "to_agent", self._where)
        if to_agent == self.agent_id:
            msg = f"agent {self.agent_id} cannot hand off to itself; name another agent as to_agent"
            raise HandoffValidationError(self._where, msg)
        if not isinstance(reason, str):
            msg = f"reason must be a string, not {type(reason).__name__}"
            raise HandoffValidationError(self._where, msg)
        request = HandoffRequest(
            from_agent=self.agent_id,
            to_agent=to_agent,
            reason=reason,
            context_snapshot=self._snapshot(),
            preserve_history=True,
            capabilities_required=[],
            metadata={"current_state": self.state_name, "current_task_id": self._current_task_id},
        )
        return self.client.request_handoff(request)

    def _snapshot(self) -> bytes:
        context = self.get_handoff_context()
        if not isinstance(context, HandoffContext):
            msg = f"get_handoff_context() must return a HandoffContext, not {type(context).__name__}"
            raise HandoffValidationError(self._where, msg)
        try:
            return serialize_context(context)
        except ValueError as exc:
            msg = f"the context get_handoff_context() returned cannot be sent: {exc}"
            raise HandoffValidationError(self._where, msg) from exc

    def receive_handoffs(self) -> list[HandoffResponse]:
        """Take each request pending for this agent, oldest (in an inbox: most urgent) first.

        For each: :meth:`on_handoff_request` decides (a hook that raises rejects, with the
        exception's text); an accepted request's ``context_snapshot`` must read as an SW4RM
        context, or it is rejected saying why; the request is claimed (ACCEPTED; of agents racing
        for one request exactly one wins, and the others pass over it); :meth:`on_handoff_received`
        gets the context; the request is marked COMPLETED. If :meth:`on_handoff_received` raises,
        the error is logged and the request stays ACCEPTED: it is this agent's, and the caller
        completes it (``client.complete_handoff``) once it has dealt with it.

        Requests the listing skipped (a damaged file, a context blob missing or altered) are in
        :attr:`problems`; they stay PENDING.

        :returns: the answers of the requests this call settled, in order: REJECTED, COMPLETED,
            or ACCEPTED where :meth:`on_handoff_received` raised. A request another agent took
            first, or that expired meanwhile, is not among them.
        :raises HandoffError: if the requests cannot be listed or changed (an inbox's agent id
            must be a name: :class:`~handoff_files.foundation.errors.InvalidNameError`).
        """
        client = self.client
        pending = client.get_pending_handoffs(self.agent_id)
        self.problems = client.problems
        answers = []
        for request in pending:
            answer = self._receive(client, request)
            if answer is not None:
                answers.append(answer)
        return answers

    def _receive(self, client: HandoffClient, request: HandoffRequest) -> HandoffResponse | None:
        """Decide, check the context, claim, hand it over, complete: the last answer, or None if lost."""
        handoff_id = str(request.metadata[HANDOFF_ID_KEY])  # read before the hook, which may change its copy
        snapshot = request.context_snapshot
        refusal = self._ask(request)
        context = HandoffContext()
        if refusal is None and snapshot is not None:
            try:
                context = deserialize_context(snapshot)
            except (TypeError, ValueError) as exc:
                refusal = f"its context_snapshot is not an SW4RM context: {exc}"
        try:
            if refusal is not None:
                return client.reject_handoff(handoff_id, refusal[:MAX_REASON])
            accepted = client.accept_handoff(handoff_id)
        except InvalidTransitionError as exc:
            # another agent settled it first, or it expired meanwhile: not ours any more
            logger.info("agent %s: passed over handoff %s: %s", self.agent_id, handoff_id, exc)
            return None
        try:
            self.on_handoff_received(context)
        except Exception:
            logger.exception(
                "agent %s: on_handoff_received raised; handoff %s stays ACCEPTED", self.agent_id, handoff_id
            )
            return accepted
        return client.complete_handoff(handoff_id)

    def _ask(self, request: HandoffRequest) -> str | None:
        """The hook's decision: None to accept, else the reason to reject with."""
        try:
            answer = self.on_handoff_request(request)
        except Exception as exc:
            logger.exception("agent %s: on_handoff_request raised; rejecting", self.agent_id)
            return f"{self.agent_id}'s on_handoff_request raised {type(exc).__name__}: {exc}"
        return _refusal(answer, self.agent_id)


def _refusal(answer: object, agent_id: str) -> str | None:
    """What a :data:`Decision` means: None to accept, else the reason to reject with (never empty)."""
    if isinstance(answer, HandoffResponse):
        # a refusal without a reason reads as False: declined
        reason = answer.rejection_reason
        answer = None if answer.accepted else reason if isinstance(reason, str) else False
    if answer is None or answer is True:
        return None
    if isinstance(answer, str) and answer.strip():
        return answer
    if answer is False or isinstance(answer, str):
        return f"declined by {agent_id}"
    kind = type(answer).__name__
    return f"{agent_id}'s on_handoff_request returned {kind}, not None, a bool, a reason or a HandoffResponse"


def _check_text(value: object, what: str, where: str) -> str:
    """*value* if it is a non-empty string; else HandoffValidationError naming *what* and *where*."""
    if not isinstance(value, str) or not value.strip():
        found = "an empty string" if isinstance(value, str) else type(value).__name__
        msg = f"{what} must be a non-empty string, not {found}"
        raise HandoffValidationError(where, msg)
    return value
