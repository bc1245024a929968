"""The briefing outside the tools: an MCP resource a client reads, and a prompt that resumes from it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final

from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import Field

from handoff_files.mcp_server.app import HandoffServer, OneAtATime, invalid_params
from handoff_files.mcp_server.outputs import Restore
from handoff_files.mcp_server.targets import Targets
from handoff_files.uptake.briefing import DEFAULT_BUDGET, briefing_for

__all__ = ["BRIEFING_TEMPLATE", "BRIEFING_URI", "NOTHING_SAVED", "add_briefings", "restore"]

#: The briefing of a one-thread server's thread.
BRIEFING_URI: Final = "handoff://briefing"
#: The briefing of a thread under a root server's root.
BRIEFING_TEMPLATE: Final = "handoff://threads/{thread}/briefing"
NOTHING_SAVED: Final = "Nothing was saved on this thread yet: start fresh, and call handoff_save before you stop."
_ABOUT: Final = (
    "The briefing the previous session left (priorities, warnings, story, decisions, state), "
    "ending with the code handoff_acknowledge takes. Reading it records nothing: acknowledge with the tool."
)
_RESUME: Final = (
    "You are resuming work an earlier session handed off. Read the briefing below first: do its "
    "priorities in order and heed its warnings. Then call handoff_acknowledge with code {code}{where}, "
    "and call handoff_save with the five layers before you stop.\n\n{briefing}"
)
_FRESH: Final = "Nothing was handed off on this thread yet: start fresh, and call handoff_save{where} before you stop."


def restore(path: Path | str, *, budget: int = DEFAULT_BUDGET) -> Restore:
    """The briefing of the thread at *path*, within *budget* characters (generation 0: nothing saved yet).

    :raises HandoffError: if the thread cannot be restored, or the budget is too small for it.
    """
    briefing = briefing_for(path, budget=budget)
    if briefing is None:
        return Restore(thread=str(path), generation=0, code=None, briefing=NOTHING_SAVED, omitted=[], problems=[])
    return Restore(
        thread=str(path),
        generation=briefing.generation,
        code=briefing.code,
        briefing=briefing.text,
        omitted=list(briefing.omitted),
        problems=list(briefing.problems),
    )


def add_briefings(server: HandoffServer, targets: Targets, run: OneAtATime) -> None:
    """Serve the briefing as a resource (a template under a root) and the ``resume`` prompt."""

    def read(thread: str | None) -> str:
        return run(lambda: restore(targets.pick(thread)).briefing, error=ResourceError)

    def resume_from(thread: str | None) -> UserMessage:
        out = run(lambda: restore(targets.pick(thread)), error=invalid_params)
        where = f' and thread "{thread}"' if thread else ""
        if out.code is None:
            return UserMessage(_FRESH.format(where=where))
        return UserMessage(_RESUME.format(code=out.code, where=where, briefing=out.briefing))

    title = "Resume from the handoff"
    about = "Start this session from the handoff the previous one left: its briefing, and what to do with it."
    if targets.thread is not None:

        @server.resource(BRIEFING_URI, name="briefing", description=_ABOUT, mime_type="text/markdown")
        def briefing() -> str:
            return read(None)

        @server.prompt(name="resume", title=title, description=about)
        def resume() -> list[UserMessage]:
            return [resume_from(None)]

    else:

        @server.resource(BRIEFING_TEMPLATE, name="briefing", description=_ABOUT, mime_type="text/markdown")
        def briefing_of(thread: str) -> str:
            return read(thread)

        @server.prompt(name="resume", title=title, description=about)
        def resume_thread(
            thread: Annotated[str, Field(description="the thread's name under the server's root")],
        ) -> list[UserMessage]:
            return [resume_from(thread)]
