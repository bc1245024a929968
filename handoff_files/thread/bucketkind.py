"""What a bucket prefix holds when it is no handoff thread: a LangGraph saver's root, or one thread of one.

``BucketSaver("s3://…/graphs")`` keeps ``<thread>/<namespace>/checkpoints/<id>.json`` under its root
(:mod:`~handoff_files.langgraph.bucket_keys`); the commands that read a handoff thread name such a
prefix for what it is rather than calling it empty, or its objects a stranger's.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from handoff_files.foundation.errors import HandoffNotFoundError, NoHandoffError

__all__ = ["refuse_saver", "saver_part"]


def saver_part(keys: Iterable[str]) -> str | None:
    """``"root"`` if *keys* (a listing under a prefix) hold a LangGraph bucket saver's checkpoints, ``"thread"``
    if they hold one thread of a saver (its namespaces), or None."""
    for key in keys:
        parts = key.split("/")
        if len(parts) in (3, 4) and parts[-2] == "checkpoints" and parts[-1].endswith(".json"):
            return "root" if len(parts) == 4 else "thread"
    return None


def refuse_saver(where: str, keys: Collection[str], doing: str, *, empty: bool = False) -> None:
    """Raise if *keys* (the listing under *where*) are a LangGraph saver's: *doing* (``"verify"``) reads
    handoff threads; with *empty*, raise if there are none too.

    :raises NoHandoffError: naming *where* and what it holds (no handoff thread is there).
    :raises HandoffNotFoundError: with *empty*, if nothing is under *where*.
    """
    if empty and not keys:
        raise HandoffNotFoundError(where, "nothing here: no thread under this URL (mistyped?)")
    part = saver_part(keys)
    if part is None:
        return
    root = where if part == "root" else where.rpartition("/")[0]
    msg = (
        f"not a handoff thread but a LangGraph saver's {part} (checkpoints/ objects): {doing} reads handoff "
        f"threads; BucketSaver({root!r}) verifies each checkpoint as it reads it, and "
        f"`handoff prune {root} --keep N` trims a saver's root"
    )
    raise NoHandoffError(where, msg)
