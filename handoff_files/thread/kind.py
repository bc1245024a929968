"""A thread's kind: a LangGraph checkpointer's thread, whose generations only its saver writes, or a plain one."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Final, Literal

from handoff_files.format.loader import load
from handoff_files.foundation.errors import HandoffError, HandoffValidationError, ThreadKindError
from handoff_files.thread.journal import first_entry
from handoff_files.thread.layout import HISTORY_DIR, ThreadDir

__all__ = [
    "KINDS",
    "LANGGRAPH",
    "SAVER_FOLDERS",
    "SAVER_LOST",
    "SAVER_SEALING",
    "Kind",
    "ThreadKindError",
    "check_kind",
    "file_sealing_advice",
    "refuse_plain_write",
    "saver_root",
    "sealing_advice",
    "thread_kind",
]

#: The kinds of thread a store may be opened as (None, the default: a plain thread's writer).
Kind = Literal["langgraph"]
#: A LangGraph checkpointer's thread (:class:`~handoff_files.langgraph.HandoffSaver`).
LANGGRAPH: Final = "langgraph"
KINDS: Final[tuple[Kind, ...]] = (LANGGRAPH,)
#: The agent id HandoffSaver writes in every checkpoint's envelope (its ``AGENT_ID``).
SAVER_AGENT_ID: Final = "langgraph"
#: The folders a saver's thread holds beside the thread's own files: pending writes, large values,
#: subgraph namespaces (the langgraph layer's ``WRITES_DIR``, ``BLOBS_DIR``, ``NAMESPACES_DIR``: a
#: test keeps them equal).
SAVER_FOLDERS: Final = frozenset({"writes", "blobs", "namespaces"})
# an older thread's newest checkpoint files tried, newest first, when one does not verify
_LOOKED_AT: Final = 3

_INSTEAD: Final = (
    "change the graph's state through LangGraph (`graph.update_state(config, values)`) and read it with `handoff show`"
)
#: What mends a hand-edited (or unsealed) primary of a saver's thread, said where a plain thread's
#: advice is `handoff seal` (which a saver's thread refuses: see _WHY["seal"]).
SAVER_SEALING: Final = (
    "a LangGraph checkpoint is not sealed by hand: `handoff doctor --repair` puts back the saver's copy from "
    "history/, and `graph.update_state(config, values)` changes the graph's state"
)
#: What to do when a saver's newest checkpoint survives only in state.json (a plain thread seals a rebuilt one).
SAVER_LOST: Final = (
    "the graph resumes from its newest checkpoint that verifies; the lost one's state is exact in state.json: "
    "set it again with `graph.update_state(config, values)`"
)
# a refusal names the write by its verb; a commit names it by its journal event
_ACTIONS: Final = {"saved": "save", "sealed": "seal", "adopted": "adopt", "migrated": "migrate"}
_WHY: Final = {
    "save": "a plain save would break its checkpoints (the graph would no longer read its state, or would list "
    "a checkpoint twice)",
    "seal": "a hand edit of a checkpoint is not sealed: the graph reads only the checkpoints its saver wrote, and "
    "turning an edit into a consistent new checkpoint is not supported; the edited file is left as it is, and the "
    "graph's next checkpoint replaces it",
    "edit": "an edited handoff saved there would be a generation the graph never wrote (it would no longer read "
    "its state)",
    "adopt": "a handoff adopted into it would not be one of the graph's checkpoints",
    "migrate": "its checkpoints are rewritten only by its saver",
}


def check_kind(kind: object, path: str | os.PathLike[str]) -> Kind | None:
    """Return *kind* if it is None or one of :data:`KINDS`.

    :raises HandoffValidationError: if it is not.
    """
    if kind is None:
        return None
    if kind == LANGGRAPH:
        return LANGGRAPH
    msg = f"kind must be None or one of {', '.join(map(repr, KINDS))}, not {kind!r}"
    raise HandoffValidationError(path, msg)


def saver_root(thread: Path) -> Path:
    """The LangGraph saver's root a saver's thread folder is in (a thread's folder, or ``namespaces/<ns>`` in one)."""
    return thread.parent.parent.parent if thread.parent.name == "namespaces" else thread.parent


def recorded_kind(layout: ThreadDir) -> Kind | None:
    """The kind the journal's "created" line records (None: none recorded, or the line rotated away)."""
    created = first_entry(layout.journal)
    if created is None or created.event != "created":
        return None
    found = created.extra.get("kind")
    return LANGGRAPH if found == LANGGRAPH else None


def thread_kind(layout: ThreadDir, *, newest_may_be_a_checkpoint: bool = True) -> Kind | None:
    """The thread's kind: the one its "created" line records, else what its newest generation is.

    A thread an older release's saver made (or whose "created" line a journal rotation dropped)
    is a LangGraph thread when its newest verified generation in ``history/`` carries the saver's
    agent id and a ``state.data.langgraph`` record. Reads one journal line, and (unless
    *newest_may_be_a_checkpoint* is False) the newest generation files; never writes.

    :param newest_may_be_a_checkpoint: False when the caller knows the newest generation's agent
        id is not the saver's (a plain thread's save then reads no generation file).
    :returns: ``"langgraph"``, or None for a plain thread.
    """
    recorded = recorded_kind(layout)
    if recorded is not None or not newest_may_be_a_checkpoint:
        return recorded
    try:
        listing = layout.generations()
    except HandoffError:
        return None  # an unreadable history/ is reported by what reads it; it holds no kind
    for _, name in listing[:_LOOKED_AT]:
        try:
            handoff = load(layout.history_dir / name, follow_symlinks=False)
        except HandoffError:
            continue
        record = handoff.state.data.get("langgraph")
        is_checkpoint = isinstance(record, dict) and isinstance(record.get("format"), int)
        return LANGGRAPH if handoff.agent_id == SAVER_AGENT_ID and is_checkpoint else None
    return None


def sealing_advice(layout: ThreadDir) -> Callable[[], str | None]:
    """What accepts a person's change to *layout*'s primary, for the loader (``sealing``): asked only when needed.

    :returns: a function giving :data:`SAVER_SEALING` on a LangGraph saver's thread, None on a plain
        one (the loader then says ``handoff seal``); it reads the thread's kind when called.
    """
    return lambda: SAVER_SEALING if thread_kind(layout) == LANGGRAPH else None


def file_sealing_advice(path: Path) -> Callable[[], str | None]:
    """:func:`sealing_advice` for a file named alone: the thread it is in, as its primary or in ``history/``."""
    folder = path.parent.parent if path.parent.name == HISTORY_DIR else path.parent
    return sealing_advice(ThreadDir(folder))


def refuse_plain_write(
    layout: ThreadDir, writer: Kind | None, action: str, *, newest_may_be_a_checkpoint: bool = True
) -> None:
    """Refuse a plain *writer* an *action* (save, seal, adopt, migrate, or its event) into a LangGraph thread.

    A LangGraph saver's own store (``kind="langgraph"``) is never refused; a plain store is, in a
    thread :func:`thread_kind` finds to be a LangGraph checkpointer's. Call under the writers' lock.

    :raises ThreadKindError: naming the folder, why, and what to do instead.
    """
    if writer == LANGGRAPH:
        return
    if thread_kind(layout, newest_may_be_a_checkpoint=newest_may_be_a_checkpoint) != LANGGRAPH:
        return
    action = _ACTIONS.get(action, action)
    why = _WHY.get(action, _WHY["save"])
    msg = f"is a LangGraph checkpointer's thread (HandoffSaver), so a plain {action} is refused: {why}; {_INSTEAD}"
    raise ThreadKindError(Path(layout.path), msg)
