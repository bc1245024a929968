"""What the MCP tests share: the layers they save, and the official client talking to ``handoff mcp`` over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import pytest

from tests.conftest import ROOT

mcp = pytest.importorskip("mcp", reason="the [mcp] extra is part of the test extras")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

__all__ = ["LAYERS", "Client", "MCPError", "server", "talk", "text"]

_T = TypeVar("_T")

LAYERS: dict[str, Any] = {
    "narrative": "Ported the importer's date parsing; the tests for it pass.",
    "priorities": [
        {"task": "port the CSV reader", "urgency": "primary"},
        {"task": "rerun the failing test", "urgency": "first"},
    ],
    "warnings": [{"text": "old data is in local time", "severity": "high"}],
    "decisions": [{"decision": "keep the old parser for 1.x", "reason": "users pin it", "status": "deferred"}],
    "state": {"active_tasks": ["CSV reader"], "data": {"ported": 12}},
}


def server(*args: str) -> StdioServerParameters:
    """`python -m handoff_files mcp ARGS` as the client starts it (its environment is passed explicitly)."""
    env = {"PYTHONPATH": str(ROOT), "HANDOFF_FILES_KEY": os.environ["HANDOFF_FILES_KEY"]}
    # the test's configuration folder (a signing key, allowed_signers), never the user's own
    env |= {
        name: os.environ[name] for name in ("XDG_CONFIG_HOME", "HANDOFF_FILES_ALLOWED_SIGNERS") if name in os.environ
    }
    env |= {name: value for name, value in os.environ.items() if name.startswith("AWS_")}  # a bucket's test server
    return StdioServerParameters(command=sys.executable, args=["-m", "handoff_files", "mcp", *args], env=env)


def talk(params: StdioServerParameters, session: Callable[[Client], Awaitable[_T]]) -> _T:
    """Start the server, run *session* with a connected client, and close it."""

    async def main() -> _T:
        with anyio.fail_after(60):
            async with Client(params) as client:
                return await session(client)

    return anyio.run(main)


def text(result: Any) -> str:
    """The text blocks of a tool's result, joined."""
    return "".join(block.text for block in result.content if block.type == "text")
