"""LangGraph's checkpointer on handoff threads: ``HandoffSaver`` (the optional extra ``handoff-files[langgraph]``).

``HandoffSaver`` is imported on first use, so the modules that read a saver's files as plain JSON
(:mod:`~handoff_files.langgraph.describe`, for ``handoff show``) load without LangGraph installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handoff_files.langgraph.saver import HandoffSaver

__all__ = ["HandoffSaver"]


def __getattr__(name: str) -> Any:
    """``HandoffSaver``, imported when first asked for; without LangGraph, one line saying what to install."""
    if name != "HandoffSaver":
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    try:
        import langgraph.checkpoint.base  # noqa: F401, PLC0415 -- only to say what is missing, in one line
    except ImportError as exc:  # pragma: no cover -- the test extras install LangGraph
        msg = "HandoffSaver needs LangGraph's checkpoint package: pip install 'handoff-files[langgraph]'"
        raise ImportError(msg) from exc
    from handoff_files.langgraph.saver import HandoffSaver  # noqa: PLC0415 -- loaded on first use, see the docstring

    return HandoffSaver
