"""Puts checkpoints and writes into one thread: ``python -m tests.langgraph.put_worker ROOT THREAD N TAG``.

Prints the checkpoint ids it was acknowledged, one per line.
"""

from __future__ import annotations

import sys
from typing import Any

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files.langgraph import HandoffSaver


def main(root: str, thread: str, count: int, tag: str) -> None:
    """Put *count* checkpoints, each with one pending write, chained to the thread's newest at that moment."""
    saver = HandoffSaver(root)
    for step in range(count):
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        parent = saver.get_tuple(config)
        base = empty_checkpoint() if parent is None else parent.checkpoint
        checkpoint = create_checkpoint(base, None, step)
        checkpoint["channel_values"] = {"who": f"{tag}-{step}"}
        checkpoint["channel_versions"] = {"who": step + 1}
        if parent is not None:
            config = parent.config
        metadata: Any = {"source": "loop", "step": step, "writer": tag}
        stored = saver.put(config, checkpoint, metadata, {"who": step + 1})
        saver.put_writes(stored, [("who", f"{tag}-{step}-write")], task_id=f"{tag}-task")
        print(stored["configurable"]["checkpoint_id"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
