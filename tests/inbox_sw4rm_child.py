"""An SW4RM-style agent in its own process, on the inbox HANDOFF_INBOX names: the client's persistence tests run it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Final

from handoff_files.compat.sw4rm import (
    HandoffClient,
    HandoffContext,
    HandoffRequest,
    deserialize_context,
    serialize_context,
)

#: Where the tests find this script.
SCRIPT: Final = Path(__file__).resolve()


def say(*words: object) -> None:
    """One line on stdout, flushed at once: the parent reads it, and may SIGKILL this process next."""
    sys.stdout.write(" ".join(map(str, words)) + "\n")
    sys.stdout.flush()


def request(from_agent: str, to_agent: str, reason: str) -> None:
    """Request a handoff carrying a context, as SW4RM's Agent.initiate_handoff does, say REQ, then wait to be killed."""
    context = HandoffContext(
        conversation_history=[{"role": "user", "content": "port the importer"}],
        metadata={"agent_id": from_agent},
    )
    snapshot = serialize_context(context)
    response = HandoffClient().request_handoff(
        HandoffRequest(from_agent, to_agent, reason, context_snapshot=snapshot, metadata={"step": 1}, timeout=3600)
    )
    say("REQ", response.handoff_id, response.status.value)
    time.sleep(3600)


def take(agent_id: str) -> None:
    """Accept the oldest request pending for *agent_id*; say TOOK with its id, status and context metadata (or NONE)."""
    client = HandoffClient()
    pending = client.get_pending_handoffs(agent_id)
    if not pending:
        say("NONE")
        return
    first = pending[0]
    handoff_id = first.metadata["handoff_id"]
    response = client.accept_handoff(handoff_id)
    assert first.context_snapshot is not None
    context = deserialize_context(first.context_snapshot)
    say("TOOK", handoff_id, response.status.value, json.dumps(context.metadata, sort_keys=True))


if __name__ == "__main__":
    if sys.argv[1] == "request":
        request(*sys.argv[2:5])
    else:
        take(sys.argv[2])
