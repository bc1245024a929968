"""Rendering for people: a LangGraph saver's checkpoint (``handoff show`` on a saver's thread)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from handoff_files.cli.terminal import Terminal, fit, paint

if TYPE_CHECKING:  # annotations only: the describing module is loaded by the show command, for a saver's thread
    from handoff_files.langgraph.describe import CheckpointView, PendingWrite
    from handoff_files.langgraph.preview import Preview

__all__ = ["checkpoint_lines"]

#: Value lines are cut to the terminal's width, or to this many columns in a pipe or a file.
PIPE_WIDTH: Final = 80
#: Subgraph namespaces listed one per line; past this many, the rest are counted.
_SUBGRAPHS_SHOWN: Final = 8
#: A next node's status in words: a task that already wrote ran from this checkpoint, the graph went on.
_STATUS_WORDS: Final = {"finished": "ran from this checkpoint: its writes are pending"}


def _value(prefix: str, value: Preview, width: int) -> list[str]:
    """A value on one line after *prefix*, cut with an ellipsis to *width*, its whole size said when cut.

    Messages always say their size; typed bytes say it in their text.
    """
    text = value.text
    room = width - len(prefix)
    sized = value.form == "messages" or (value.form != "typed" and (value.cut or len(text) > room))
    size = f" ({value.size:,} bytes)" if sized else ""
    if value.lines:  # a list of messages: how many, then its newest, one line each
        size += f", the last {len(value.lines)}:" if (value.count or 0) > len(value.lines) else ":"
    if len(text) + len(size) > room:
        text = text[: max(room - len(size) - 1, 8)] + "…"
    out = [f"{prefix}{text}{size}"]
    out += [_cut(f"      {line}", width) for line in value.lines]
    return out


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _head(view: CheckpointView, t: Terminal) -> list[str]:
    """Which checkpoint: thread and namespace, id, step and source, LangGraph's parent, when, what runs next."""
    out = fit("  thread: ", f"{view.thread_id}, namespace {view.checkpoint_ns or '(root)'}", t)
    step = "(typed, not read)" if view.step is None else str(view.step)
    out += fit("  checkpoint: ", f"{view.checkpoint_id}, step {step}, source {view.source or '?'}", t)
    out += fit("  parent: ", view.parent_checkpoint_id or "(none: the thread's first checkpoint)", t)
    if view.created_at is not None:
        out += fit("  created: ", view.created_at, t)
    if view.next is None:
        nexts = "unknown (the checkpoint is stored as typed bytes)"
    elif not view.next:
        nexts = "nothing (the graph finished)"
    else:
        nexts = ", ".join(
            f"{n.name} ({_STATUS_WORDS.get(n.status, n.status)})" if n.status else n.name for n in view.next
        )
    out += fit("  next: ", nexts, t)
    if view.checkpoints is not None:
        kept = f"{view.checkpoints} checkpoint{'s' if view.checkpoints != 1 else ''} in history/"
        subgraphs = view.subgraphs or ()
        out += fit("  kept: ", f"{kept}; {len(subgraphs)} subgraph namespace(s) in namespaces/", t)
    return out


def _writes(items: tuple[PendingWrite, ...], width: int, *, channel: bool) -> list[str]:
    out = []
    for item in items:
        prefix = f"  {item.node} → {item.channel}: " if channel else f"  {item.node}: "
        out += _value(prefix, item.value, width)
    return out


def checkpoint_lines(view: CheckpointView, t: Terminal) -> list[str]:
    """The checkpoint's sections: CHECKPOINT, INTERRUPTS, CHANNELS, PENDING WRITES, SUBGRAPHS (the last three if any).

    Each value takes one line (a list of messages: a line, then its newest messages), cut with an
    ellipsis to the terminal's width (:data:`PIPE_WIDTH` columns in a pipe), its full size said.
    """
    width = t.width or PIPE_WIDTH
    out = [paint("CHECKPOINT", "heading", t), *_head(view, t), *_value("  metadata: ", view.metadata, width)]
    for problem in view.problems:
        out += fit("  note: ", problem, t, "    ")
    if view.interrupts:
        out += ["", paint("INTERRUPTS (waiting for an answer)", "heading", t)]
        out += _writes(view.interrupts, width, channel=False)
    out += ["", paint("CHANNELS", "heading", t)]
    for c in view.channels:
        out += _value(f"  {c.name}: ", c.value, width)
    if not view.channels:
        out.append("  (none)")
    if view.control:
        out += fit("  control: ", ", ".join(view.control), t, "    ")
    if view.writes:
        out += ["", paint("PENDING WRITES (of tasks run from this checkpoint)", "heading", t)]
        out += _writes(view.writes, width, channel=True)
    if view.subgraphs:
        out += ["", paint("SUBGRAPHS (namespaces/)", "heading", t)]
        for s in view.subgraphs[:_SUBGRAPHS_SHOWN]:
            out.append(_cut(f"  {s.folder}  {s.checkpoints} checkpoint{'s' if s.checkpoints != 1 else ''}", width))
        if len(view.subgraphs) > _SUBGRAPHS_SHOWN:
            out.append(f"  … and {len(view.subgraphs) - _SUBGRAPHS_SHOWN} more")
    return out
