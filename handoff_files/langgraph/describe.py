"""A LangGraph checkpoint as a person reads it: where it stands, what runs next, its channels and open questions.

``handoff show`` on a :class:`~handoff_files.langgraph.HandoffSaver` thread uses it. Everything is
read as the plain JSON the saver wrote: LangGraph and LangChain are never imported (``show`` works
without the ``[langgraph]`` extra), and typed bytes are never decoded (see
:mod:`handoff_files.langgraph.preview`), so showing a checkpoint constructs nothing it names.

The next nodes follow LangGraph's own rule (``StateSnapshot.next``, as ``get_state`` gives it):
a node runs next when one of its trigger channels, ``branch:to:<node>`` (``__start__`` for the
input), holds a value in the checkpoint and its version is newer than the version that node
last saw (``versions_seen``; never seen counts as older). Pending writes do not change the
list, as they do not in ``get_state``: a node listed whose task already wrote is marked
*finished*, and one that called ``interrupt()`` *interrupted*. Tasks sent with ``Send`` are not
listed. A checkpoint stored as typed bytes (a saver with its own serializer) has no readable
versions: its next nodes are then unknown (None).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_files.foundation.errors import HandoffError
from handoff_files.langgraph.layout import NAMESPACES_DIR, namespace_dirs, read_checkpoint_writes
from handoff_files.langgraph.preview import Preview, interrupt_questions, preview
from handoff_files.langgraph.store import record_of
from handoff_files.thread.layout import HISTORY_DIR, PRIMARY_NAMES, generation_of

if TYPE_CHECKING:
    from handoff_files.format.model import Handoff

__all__ = ["Channel", "CheckpointView", "NextNode", "PendingWrite", "Subgraph", "describe_checkpoint"]

#: The channel that triggers a node, by name: ``branch:to:<node>``.
BRANCH: Final = "branch:to:"
#: The input's channel, which triggers the ``__start__`` node.
START: Final = "__start__"
#: LangGraph's special write channels (``WRITES_IDX_MAP``): shown apart from the channels' values.
INTERRUPT: Final = "__interrupt__"
RESUME: Final = "__resume__"
ERROR: Final = "__error__"
#: A task path of a node's task, as LangGraph writes it: ``~__pregel_pull, <node>``.
_PULL: Final = "~__pregel_pull, "


@dataclass(frozen=True, slots=True)
class Channel:
    """One channel of the checkpoint: its name, version and value."""

    name: str
    version: int | float | str | None
    value: Preview


@dataclass(frozen=True, slots=True)
class NextNode:
    """A node that runs next, and what its pending writes say of it: finished, interrupted, failed, or ""."""

    name: str
    status: str


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """One pending write of the checkpoint: the node (or task id) that wrote it, the channel, the value."""

    node: str
    channel: str
    value: Preview


@dataclass(frozen=True, slots=True)
class Subgraph:
    """A subgraph namespace's folder under ``namespaces/``, and how many checkpoints its ``history/`` holds."""

    folder: str
    checkpoints: int


@dataclass(frozen=True, slots=True)
class CheckpointView:
    """What one checkpoint of a saver's thread holds, read from its plain JSON (nothing decoded).

    ``step``, ``source`` and ``created_at`` are None where the saver stored them as typed bytes,
    ``next`` None where the checkpoint itself is; ``checkpoints`` and ``subgraphs`` are None (not
    looked at) when a file was shown rather than a thread.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    step: int | None
    source: str | None
    created_at: str | None
    next: tuple[NextNode, ...] | None
    channels: tuple[Channel, ...]
    control: tuple[str, ...]
    writes: tuple[PendingWrite, ...]
    interrupts: tuple[PendingWrite, ...]
    metadata: Preview
    checkpoints: int | None
    subgraphs: tuple[Subgraph, ...] | None
    problems: tuple[str, ...]

    def brief(self) -> dict[str, Any]:
        """The view as JSON-ready data (``show --json``'s ``langgraph``)."""

        def write(item: PendingWrite) -> dict[str, Any]:
            return {"node": item.node, "channel": item.channel, "value": item.value.brief()}

        return {
            "thread_id": self.thread_id,
            "checkpoint_ns": self.checkpoint_ns,
            "checkpoint_id": self.checkpoint_id,
            "parent_checkpoint_id": self.parent_checkpoint_id,
            "step": self.step,
            "source": self.source,
            "created_at": self.created_at,
            "next": None if self.next is None else [{"node": n.name, "status": n.status} for n in self.next],
            "channels": [{"name": c.name, "version": c.version, "value": c.value.brief()} for c in self.channels],
            "control_channels": list(self.control),
            "pending_writes": [write(item) for item in self.writes],
            "interrupts": [write(item) for item in self.interrupts],
            "metadata": self.metadata.brief(),
            "checkpoints": self.checkpoints,
            "subgraphs": None
            if self.subgraphs is None
            else [{"folder": s.folder, "checkpoints": s.checkpoints} for s in self.subgraphs],
            "problems": list(self.problems),
        }


def _plain(stored: Any) -> dict[str, Any] | None:
    """The dict a ``{"json": {...}}`` holds, or None (typed bytes, never decoded here)."""
    if isinstance(stored, dict) and set(stored) == {"json"} and isinstance(stored["json"], dict):
        return stored["json"]
    return None


def _newer(version: Any, seen: Any) -> bool:
    """LangGraph's ``version > seen`` (never seen: None); versions of two kinds compare as text."""
    if seen is None:
        return version is not None
    if version is None:
        return False
    if isinstance(version, int | float) and isinstance(seen, int | float):
        return version > seen
    return str(version) > str(seen)


def _node_of(record: dict[str, Any]) -> str:
    """The node a write's task ran, from its task path; a task id (short) where the path does not say."""
    path = record.get("task_path")
    if isinstance(path, str) and path.startswith(_PULL) and "," not in path[len(_PULL) :]:
        return path[len(_PULL) :]
    return f"task {str(record.get('task_id', '?'))[:8]}"


def _triggered(checkpoint: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """The nodes LangGraph runs next from this checkpoint (see the module's docstring for the rule)."""
    versions = checkpoint.get("channel_versions")
    seen_by = checkpoint.get("versions_seen")
    versions = versions if isinstance(versions, dict) else {}
    seen_by = seen_by if isinstance(seen_by, dict) else {}
    nodes = []
    for channel in values:
        if channel == START:
            node = START
        elif channel.startswith(BRANCH):
            node = channel[len(BRANCH) :]
        else:
            continue
        seen = seen_by.get(node)
        if _newer(versions.get(channel), seen.get(channel) if isinstance(seen, dict) else None):
            nodes.append(node)
    return nodes


def _writes(ns_dir: Path, checkpoint_id: str, generation: int) -> list[dict[str, Any]]:
    """The checkpoint's pending writes as the saver reads them: the first per (task, index), a special one's last."""
    chosen: dict[tuple[Any, Any], dict[str, Any]] = {}
    for record in read_checkpoint_writes(ns_dir, checkpoint_id, generation):
        key = (record.get("task_id"), record.get("idx"))
        index = record.get("idx")
        if key not in chosen or (isinstance(index, int) and index < 0):
            chosen[key] = record
    return sorted(chosen.values(), key=lambda r: (str(r.get("task_path")), str(r.get("task_id")), str(r.get("idx"))))


def _count_history(ns_dir: Path) -> int:
    """How many generation files ``history/`` holds: one per checkpoint kept (named, not read)."""
    try:
        return sum(generation_of(name) is not None for name in os.listdir(ns_dir / HISTORY_DIR))
    except OSError:
        return 0


def _subgraphs(thread: Path) -> tuple[Subgraph, ...]:
    """The subgraph namespaces of a thread, by folder (a link in their place is refused, never followed)."""
    found = []
    for ns_dir in namespace_dirs(thread.parent, thread):
        if ns_dir.parent.name == NAMESPACES_DIR and ns_dir.parent.parent == thread:
            found.append(Subgraph(ns_dir.name, _count_history(ns_dir)))
    return tuple(found)


def _interrupts(record: dict[str, Any]) -> list[PendingWrite]:
    """An ``__interrupt__`` write: each question it holds, where it is JSON in LangGraph's ``Interrupt`` shape.

    ``{"interrupts": [{"value": …, "id": …}, …]}`` (the saver's form) or ``[{"value": …, "id": …}, …]``
    as JSON is shown as one line per ``value`` (the question asked);
    anything else (typed bytes, other JSON) as the one value it is.
    """
    stored = record.get("value")
    node = _node_of(record)
    questions = interrupt_questions(stored)  # the saver's form
    if questions is not None:
        return [PendingWrite(node, INTERRUPT, preview({"json": question})) for question in questions]
    items = stored.get("json") if isinstance(stored, dict) and set(stored) == {"json"} else None
    if isinstance(items, list) and items and all(isinstance(item, dict) and "value" in item for item in items):
        return [PendingWrite(node, INTERRUPT, preview({"json": item["value"]})) for item in items]
    return [PendingWrite(node, INTERRUPT, preview(stored))]


def _thread_of(path: Path) -> Path | None:
    """The thread a checkpoint file is in: a ``history/`` file's or a primary's folder; None for a loose file."""
    if path.parent.name == HISTORY_DIR and generation_of(path.name) is not None:
        return path.parent.parent
    if path.name in PRIMARY_NAMES and (path.parent / HISTORY_DIR).is_dir():
        return path.parent
    return None


def _status(node: str, writes: list[dict[str, Any]]) -> str:
    """What the pending writes say of a node's task: interrupted, failed, finished, or nothing yet."""
    mine = [record for record in writes if _node_of(record) == node]
    channels = {record.get("channel") for record in mine}
    if INTERRUPT in channels:
        return "interrupted"
    if ERROR in channels:
        return "failed"
    return "finished" if mine else ""


def describe_checkpoint(handoff: Handoff, where: Path | str, *, thread: Path | None = None) -> CheckpointView | None:
    """The LangGraph checkpoint a saver's generation holds, or None if it is no saver's (no ``state.data.langgraph``).

    Reads only what the saver wrote as plain JSON; typed bytes are shown by their size, never decoded.

    :param handoff: the generation shown (verified by whoever loaded it).
    :param where: its file, for errors.
    :param thread: the thread (namespace) directory it is a generation of, to read its pending
        writes, count its checkpoints and list its subgraphs; None: the thread *where* is in (a
        ``history/`` file's, a primary's), or none for a file outside a thread.
    :raises HandoffError: if its record is not a LangGraph record this release reads (naming *where*).
    """
    if "langgraph" not in handoff.state.data:
        return None
    record = record_of(handoff, Path(where))
    values = record.get("channel_values")
    values = values if isinstance(values, dict) else {}
    metadata = _plain(record.get("metadata")) or {}
    checkpoint = _plain(record.get("checkpoint"))
    versions = (checkpoint or {}).get("channel_versions")
    versions = versions if isinstance(versions, dict) else {}
    thread = _thread_of(Path(where)) if thread is None else thread
    problems: list[str] = []
    writes: list[dict[str, Any]] = []
    checkpoints = subgraphs = None
    if thread is not None:
        try:
            writes = _writes(thread, str(record["checkpoint_id"]), handoff.generation)
        except HandoffError as exc:  # damaged writes must not hide the checkpoint: said beside it
            problems.append(f"pending writes not shown: {exc}")
        checkpoints = _count_history(thread)
        try:
            subgraphs = _subgraphs(thread)
        except HandoffError as exc:
            problems.append(f"subgraphs not listed: {exc}")
    control = tuple(name for name in values if name.startswith((BRANCH, "__")))
    step, source, ts = metadata.get("step"), metadata.get("source"), (checkpoint or {}).get("ts")
    return CheckpointView(
        thread_id=str(record.get("thread_id", "")),
        checkpoint_ns=str(record.get("checkpoint_ns", "")),
        checkpoint_id=str(record.get("checkpoint_id", "")),
        parent_checkpoint_id=record.get("parent_checkpoint_id"),
        step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        source=source if isinstance(source, str) else None,
        created_at=ts if isinstance(ts, str) else None,
        next=None
        if checkpoint is None
        else tuple(NextNode(node, _status(node, writes)) for node in _triggered(checkpoint, values)),
        channels=tuple(
            Channel(name, versions.get(name), preview(value)) for name, value in values.items() if name not in control
        ),
        control=control,
        writes=tuple(
            PendingWrite(_node_of(r), str(r.get("channel")), preview(r.get("value")))
            for r in writes
            if r.get("channel") != INTERRUPT
        ),
        interrupts=tuple(item for r in writes if r.get("channel") == INTERRUPT for item in _interrupts(r)),
        metadata=preview(record.get("metadata")),
        checkpoints=checkpoints,
        subgraphs=subgraphs,
        problems=tuple(problems),
    )
