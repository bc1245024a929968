"""LangGraph's checkpointer on handoff threads: ``HandoffSaver`` (the optional extra ``handoff-files[langgraph]``)."""

from __future__ import annotations

try:
    import langgraph.checkpoint.base  # noqa: F401 -- only to say what is missing, in one line
except ImportError as exc:  # pragma: no cover -- the test extras install LangGraph
    msg = "HandoffSaver needs LangGraph's checkpoint package: pip install 'handoff-files[langgraph]'"
    raise ImportError(msg) from exc

from handoff_files.langgraph.saver import HandoffSaver

__all__ = ["HandoffSaver"]
