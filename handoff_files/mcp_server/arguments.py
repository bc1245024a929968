"""What the MCP tools take: the layers as the model sees them, with every limit and every field's meaning."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final

from pydantic import ConfigDict, Field, StringConstraints

from handoff_files.format import model
from handoff_files.foundation.names import FOLDER_PATTERN, ID_PATTERN

__all__ = [
    "MEANINGS",
    "AgentId",
    "Decision",
    "Narrative",
    "NewThreadName",
    "Priority",
    "State",
    "ThreadName",
    "Warning",
    "layer_list",
]

#: What each field of the layers means, for the model filling it in (a field the handoff model
#: describes itself keeps its own description).
MEANINGS: Final[Mapping[str, Mapping[str, str]]] = {
    "State": {
        "session_id": "the session that wrote these facts (your host's session or run id), if it has one",
        "timestamp": "when these facts were true (ISO 8601 with its zone); the save itself is timed separately",
        "active_tasks": "tasks under way now, one short line each",
        "completed_tasks": "tasks finished so far, one short line each",
        "blocked_tasks": "tasks that cannot go on, each with what blocks it",
        "environment": "facts about where the work runs (name -> value: branch, versions, paths); never secrets",
        "error_count": "errors met so far in this piece of work (0 or more): a rising count warns the next session",
        "energy_level": (
            "how much of your budget (context, time, tokens) was left when you saved: 0.0 none, 1.0 all; "
            "a low value tells the next session to plan a smaller step"
        ),
        "data": "any other facts worth keeping, as JSON (nested at most 48 deep)",
    },
    "Priority": {
        "task": "what to do, in one line",
        "urgency": (
            "first: before anything else; primary: the main work; after_primary: once that is done; "
            "if_time_permits: only if there is time left"
        ),
    },
    "Warning": {
        "text": "what will bite, and how to avoid it",
        "severity": "how bad it is if ignored: info, low, medium, high or critical",
    },
    "Decision": {
        "decision": "what was decided",
        "reason": "why",
        "alternatives_considered": "what else was weighed, one line each",
        "reversible": "whether it can still be undone cheaply",
        "status": "decided, deferred (left for later) or reversed (undone, the reason says why)",
    },
}


def _described(model_name: str) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` that gives each field of *model_name* its meaning, unless it has one."""

    def describe(schema: dict[str, Any]) -> None:
        for name, field in schema.get("properties", {}).items():
            meaning = MEANINGS[model_name].get(name)
            if meaning:
                field.setdefault("description", meaning)

    return describe


class State(model.State):
    """The facts: current values of the things that matter."""

    model_config = ConfigDict(json_schema_extra=_described("State"))


class Priority(model.Priority):
    """One thing for the next session to do; the list order is the order to do them in."""

    model_config = ConfigDict(json_schema_extra=_described("Priority"))


class Warning(model.Warning):  # noqa: A001 -- the layer's own name, as in the model
    """Something that will bite the next session if nobody says it."""

    model_config = ConfigDict(json_schema_extra=_described("Warning"))


class Decision(model.Decision):
    """What was decided, deferred or reversed, and why."""

    model_config = ConfigDict(json_schema_extra=_described("Decision"))


Narrative = Annotated[
    str,
    StringConstraints(max_length=model.MAX_NARRATIVE),
    Field(description="the story so far, for whoever resumes: what happened and why (three to five sentences)"),
]


def layer_list(description: str) -> Any:  # a FieldInfo (pydantic types Field() as Any)
    """The Field of a list layer: at most as many items as a handoff holds."""
    return Field(max_length=model.MAX_ITEMS, description=description)


#: A thread named under the server's root: the pattern is advertised, and checked by the server
#: itself (so a wrong name is refused in words that say what to use).
ThreadName = Annotated[
    Annotated[str, Field(json_schema_extra={"pattern": FOLDER_PATTERN})] | None,
    Field(
        description=(
            "the thread's name under the server's root (lower-case letters, digits, '.', '_', '-'; "
            "handoff_threads lists them); leave it out when the server serves one thread"
        )
    ),
]

#: A new thread's name under the root: the same rule, advertised, and checked by the server.
NewThreadName = Annotated[
    str,
    Field(
        json_schema_extra={"pattern": FOLDER_PATTERN},
        description="the new thread's name: a new folder (lower-case letters, digits, '.', '_', '-')",
    ),
]

#: An agent id, as a descriptor's ``to_agent`` takes it.
AgentId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
