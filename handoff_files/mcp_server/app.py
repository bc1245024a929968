"""The SDK's server as this one uses it: arguments refused in plain words, descriptions without indentation."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult, ToolAnnotations

from handoff_files.format.wording import describe_errors
from handoff_files.foundation.errors import HandoffError

__all__ = ["HandoffServer", "OneAtATime", "invalid_params"]

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


def invalid_params(message: str) -> MCPError:
    """A protocol error the client shows as it is: what a prompt's caller got wrong (the SDK's own is opaque)."""
    return MCPError(INVALID_PARAMS, message)


class OneAtATime:
    """Runs the server's calls one at a time, a :class:`HandoffError` turned into the SDK's error for the model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, work: Callable[[], _T], *, error: Callable[[str], Exception] = ToolError) -> _T:
        """The result of *work*; its :class:`HandoffError` raised as *error* (a tool's, a resource's…), text kept."""
        with self._lock:
            try:
                return work()
            except HandoffError as exc:
                raise error(str(exc)) from None


class HandoffServer(MCPServer):
    """An :class:`MCPServer` whose tools say what was wrong with their arguments in one line.

    The SDK passes pydantic's own text on (several lines, each ending in a link to pydantic's
    site); here it is worded as the library words every validation error: where, what was
    expected, what was found.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool by name; refused arguments come back as a :class:`ToolError` in one line."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, pydantic.ValidationError):
                raise
            msg = f"Error executing tool {name}: invalid arguments: {describe_errors(cause, limit=5)}"
            raise ToolError(msg) from cause

    def handoff_tool(self, annotations: ToolAnnotations, *, then: str = "") -> Callable[[_F], _F]:
        """Register a tool whose description is its docstring, dedented, and *then* (what depends on the server)."""

        def register(fn: _F) -> _F:
            text = " ".join(part for part in (inspect.cleandoc(fn.__doc__ or ""), then) if part)
            self.tool(description=text, annotations=annotations)(fn)
            return fn

        return register
