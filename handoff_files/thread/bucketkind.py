"""What a bucket prefix holds when it is no handoff thread: threads under it, or a LangGraph saver's objects.

``BucketSaver`` (``HandoffSaver("s3://…/graphs")``) keeps ``<thread>/<namespace>/checkpoints/<id>.json``
under its root (:mod:`~handoff_files.langgraph.bucket_keys`); handoff threads keep ``history/``. The
commands that read one handoff thread name such a prefix for what it is, rather than calling it
empty ("ok, no generations") or its objects a stranger's.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from handoff_files.foundation.errors import HandoffNotFoundError, NoHandoffError

__all__ = ["refuse_other", "saver_part"]

#: what a prefix is of a saver, by how many key parts lie between it and ``checkpoints/``
_SAVER_PARTS = {2: "root", 1: "thread", 0: "namespace"}


def saver_part(keys: Iterable[str], where: str) -> tuple[str, str] | None:
    """What of a LangGraph bucket saver *keys* (the listing under *where*) hold, and the saver's root:
    ``"root"``, ``"thread"``, ``"namespace"`` or ``"above"`` (a prefix above a saver's root); or None if
    they hold no checkpoint."""
    for key in keys:
        parts = key.split("/")
        if len(parts) >= 2 and parts[-2] == "checkpoints" and parts[-1].endswith(".json"):
            depth = len(parts) - 2  # key parts between *where* and checkpoints/: a root has two (thread, namespace)
            if depth > 2:
                return "above", "/".join([where, *parts[: depth - 2]])
            return _SAVER_PARTS[depth], where.rsplit("/", 2 - depth)[0]
    return None


def refuse_other(where: str, keys: Collection[str], *, empty: bool = False) -> None:
    """Raise if *keys* (the listing under *where*, which holds no ``history/``) are threads' or a LangGraph
    saver's; with *empty*, if there are none either.

    :raises NoHandoffError: naming *where* and what it holds (no handoff thread is there).
    :raises HandoffNotFoundError: with *empty*, if nothing is under *where*.
    """
    if empty and not keys:
        raise HandoffNotFoundError(where, "nothing here: no thread under this URL (mistyped?)")
    threads = sorted(
        {"/".join(parts[:-2]) for key in keys if len(parts := key.split("/")) >= 3 and parts[-2] == "history"}
    )
    if threads:  # a prefix above threads, as a folder of threads is
        named = ", ".join(threads[:5]) + (f" and {len(threads) - 5} more" if len(threads) > 5 else "")
        msg = f"a prefix of threads ({named}), not a thread: name one, e.g. {where}/{threads[0]}"
        raise NoHandoffError(where, msg)
    found = saver_part(keys, where)
    if found is None:
        return
    part, root = found
    what = "a prefix holding" if part == "above" else f"not a handoff thread but the {part} of"
    msg = (
        f"{what} a LangGraph saver's checkpoints (its root: {root}): the thread commands read handoff threads; "
        f'HandoffSaver("{root}") reads the checkpoints, verified, and `handoff prune {root} --keep N` trims them'
    )
    raise NoHandoffError(where, msg)
