"""``handoff mcp``: a stdio MCP server on the official SDK, with the tools a model needs to hand off.

Tools: ``handoff_save`` (the five layers, validated), ``handoff_restore`` (the briefing, its
structured content and its acknowledgement code), ``handoff_acknowledge``, ``handoff_history``,
``handoff_show`` (one generation whole), ``handoff_threads`` (the threads served),
``handoff_checkpoint`` (a descriptor out) and ``adopt_checkpoint`` (a verified adoption in). The
briefing is also a resource, and ``resume`` a prompt that starts a session from it. A
:class:`HandoffError` comes back as a tool error whose text names the reason, so the model can fix
its call; calls run one at a time.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Final

from pydantic import Field

from handoff_files.format.loader import load
from handoff_files.foundation.errors import HandoffError
from handoff_files.foundation.version import __version__

try:
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
except ImportError as exc:  # pragma: no cover - the message is the point
    msg = "the MCP server needs the official MCP SDK: pip install 'handoff-files[mcp]'"
    raise ImportError(msg) from exc

from handoff_files.mcp_server.app import HandoffServer, OneAtATime
from handoff_files.mcp_server.arguments import (
    AgentId,
    Decision,
    Narrative,
    NewThreadName,
    Priority,
    State,
    ThreadName,
    Warning,
    layer_list,
)
from handoff_files.mcp_server.briefings import add_briefings, restore
from handoff_files.mcp_server.outputs import (
    Acknowledged,
    Adopted,
    Checkpoint,
    Generation,
    History,
    Restore,
    Saved,
    Shown,
    ThreadEntry,
    Threads,
)
from handoff_files.mcp_server.targets import Targets
from handoff_files.thread.store import HandoffStore
from handoff_files.uptake.briefing import DEFAULT_BUDGET, MIN_BUDGET

__all__ = ["build_server", "serve"]

INSTRUCTIONS: Final = (
    "These tools keep your work across restarts and hand it to another agent. When you start, call "
    "handoff_restore and read the briefing, then call handoff_acknowledge with the code it ends with. "
    "Before you stop (or when your context is about to be compacted), call handoff_save with the five "
    "layers: narrative (the story so far), priorities (what to do next), warnings (what will bite), "
    "decisions (what you chose and why) and state (the facts)."
)


def build_server(targets: Targets, *, blobs: str | None = None) -> HandoffServer:  # noqa: PLR0915 -- one tool each
    """The MCP server for *targets* (one thread, or the threads under a root).

    :param blobs: the blob store for checkpoints (default: ``$HANDOFF_BLOBS``).
    """
    server = HandoffServer("handoff-files", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    run = OneAtATime()

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    reads = ToolAnnotations(read_only_hint=True, idempotent_hint=True)

    @server.handoff_tool(writes)
    def handoff_save(  # noqa: PLR0917 -- the model names every argument
        narrative: Narrative,
        priorities: Annotated[list[Priority], layer_list("what to do next, most urgent first")],
        warnings: Annotated[list[Warning], layer_list("what will bite the next session")] = [],  # noqa: B006
        decisions: Annotated[list[Decision], layer_list("what was chosen, why, and what was not")] = [],  # noqa: B006
        state: Annotated[State | None, Field(description="the facts: tasks active, done, blocked; data")] = None,
        thread: ThreadName = None,
    ) -> Saved:
        """Save the five layers as the thread's next sealed generation. Call it before you stop."""

        def work() -> Saved:
            path = targets.pick(thread)
            layers = {
                "narrative": narrative,
                "priorities": [p.model_dump(mode="json") for p in priorities],
                "warnings": [w.model_dump(mode="json") for w in warnings],
                "decisions": [d.model_dump(mode="json") for d in decisions],
                "state": (state or State()).model_dump(mode="json", exclude_defaults=True),
            }
            receipt = HandoffStore(path).save(layers)
            return Saved(
                thread=str(path),
                generation=receipt.generation,
                checksum=receipt.checksum,
                problems=list(receipt.problems),
            )

        return run(work)

    @server.handoff_tool(reads)
    def handoff_restore(
        budget: Annotated[int, Field(ge=MIN_BUDGET, description="most characters of briefing")] = DEFAULT_BUDGET,
        thread: ThreadName = None,
    ) -> Annotated[CallToolResult, Restore]:
        """Read the briefing the previous session left: priorities, warnings, story, decisions, state.

        Call it first when you start; then call handoff_acknowledge with the code the briefing ends with.
        """

        def work() -> CallToolResult:
            out = restore(targets.pick(thread), budget=budget)
            content = [TextContent(type="text", text=out.briefing)]
            return CallToolResult(content=content, structured_content=out.model_dump(mode="json"))

        return run(work)

    @server.handoff_tool(writes)
    def handoff_acknowledge(
        code: Annotated[str, Field(description="the code the briefing from handoff_restore ends with")],
        thread: ThreadName = None,
    ) -> Acknowledged:
        """Confirm you read the current briefing, with its code. A wrong code is refused (and recorded)."""

        def work() -> Acknowledged:
            path = targets.pick(thread)
            ack = HandoffStore(path).acknowledge(code=code)
            return Acknowledged(thread=str(path), generation=ack.generation, with_code=ack.with_code)

        return run(work)

    @server.handoff_tool(reads)
    def handoff_history(
        limit: Annotated[int, Field(ge=1, le=1000, description="most generations listed")] = 20,
        thread: ThreadName = None,
    ) -> History:
        """List the thread's saved generations, newest first, each verified."""

        def work() -> History:
            path = targets.pick(thread)
            entries = HandoffStore(path).history()[:limit]
            listed = [
                Generation(
                    generation=entry.generation,
                    created_at=_when(entry.created_at),
                    checksum=entry.checksum,
                    current=entry.current,
                    problem=entry.problem,
                    signed=None if entry.signature is None else entry.signature.describe(),
                )
                for entry in entries
            ]
            return History(thread=str(path), generations=listed)

        return run(work)

    @server.handoff_tool(reads)
    def handoff_show(
        generation: Annotated[int | None, Field(ge=1, description="which generation (default: the newest)")] = None,
        thread: ThreadName = None,
    ) -> Shown:
        """Show one generation whole: every layer and its context, as saved."""

        def work() -> Shown:
            path = targets.pick(thread)
            from handoff_files.thread.bucketstore import BucketThreadStore  # noqa: PLC0415 -- only for a bucket

            store = HandoffStore(path)
            if generation is None:
                handoff = store.restore().handoff
            elif isinstance(store, BucketThreadStore):  # a bucket's thread: its history/ object, verified
                handoff = store.generation(generation).handoff
            else:
                found = [e for e in store.history() if e.generation == generation and e.problem is None]
                if not found:
                    raise HandoffError(path, f"no verified generation {generation} here; handoff_history lists them")
                handoff = load(found[0].path, follow_symlinks=False)
            return Shown(thread=str(path), generation=handoff.generation, handoff=handoff.model_dump(mode="json"))

        return run(work)

    @server.handoff_tool(reads)
    def handoff_threads() -> Threads:
        """List the threads this server serves (those under its root), each with its newest verified generation."""

        def work() -> Threads:
            listed = []
            for name, path, problem in targets.threads():
                entry = ThreadEntry(name=name, thread=str(path), generation=None, created_at=None, problem=problem)
                if problem is None:
                    try:
                        entries = HandoffStore(path).history()  # what a restore returns, else the newest sound
                        newest = next((e for e in entries if e.current), None) or next(
                            (e for e in entries if e.problem is None), None
                        )
                    except HandoffError as exc:
                        entry.problem = exc.reason
                    else:
                        if newest is not None:
                            entry.generation = newest.generation
                            entry.created_at = _when(newest.created_at)
                listed.append(entry)
            return Threads(root=str(targets.root), threads=listed)

        return run(work)

    @server.handoff_tool(writes)
    def handoff_checkpoint(
        to_agent: Annotated[AgentId | None, Field(description="the agent meant to adopt it, if known")] = None,
        generation: Annotated[int | None, Field(ge=1, description="which generation (default: the newest)")] = None,
        thread: ThreadName = None,
    ) -> Checkpoint:
        """Hand a sealed generation on: store it in the blob store and return the descriptor to give the other agent."""

        def work() -> Checkpoint:
            from handoff_files.transfers.blobs import open_blobs  # noqa: PLC0415 -- only a transfer needs it
            from handoff_files.transfers.export import handoff_checkpoint as export  # noqa: PLC0415

            path = targets.pick(thread)
            descriptor = export(path, blobs=open_blobs(blobs), generation=generation, to_agent=to_agent)
            return Checkpoint(descriptor=descriptor.model_dump(mode="json"))

        return run(work)

    @server.handoff_tool(writes, then=targets.adoptions())
    def adopt_checkpoint(
        descriptor: Annotated[dict[str, Any], Field(description="the descriptor handoff_checkpoint returned")],
        new_thread: NewThreadName,
    ) -> Adopted:
        """Adopt another agent's checkpoint: fetch its blob, verify its sha256 and seal, start a new thread with it."""

        def work() -> Adopted:
            from handoff_files.transfers.adopt import adopt_checkpoint as adopt  # noqa: PLC0415
            from handoff_files.transfers.blobs import open_blobs  # noqa: PLC0415

            path = targets.new(new_thread)
            result = adopt(descriptor, path, blobs=open_blobs(blobs))
            return Adopted(
                thread=str(path),
                generation=result.receipt.generation,
                adopted_from=result.adopted_from,
                checkpoint_id=result.checkpoint_id,
            )

        return run(work)

    add_briefings(server, targets, run)
    return server


def _when(moment: dt.datetime | None) -> str | None:
    """A generation's time as the tools give it (UTC written with ``Z``)."""
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def serve(targets: Targets, *, blobs: str | None = None) -> None:
    """Serve *targets* over stdio until the client closes stdin."""
    build_server(targets, blobs=blobs).run("stdio")
