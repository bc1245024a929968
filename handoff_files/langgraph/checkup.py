"""What ``handoff doctor`` checks on a LangGraph saver's thread beyond its generations: pending writes and blobs.

The thread's own files (primary, ``history/``, ``state.json``, journal) are the generic doctor's.
A saver's thread also holds ``writes/`` (each checkpoint's pending writes) and ``blobs/`` (its
large values): a writes file that does not read, or a blob a checkpoint names that is missing or
not the bytes its digest names, makes ``get_tuple`` fail although every generation verifies. Each
namespace is checked; nothing is changed (the advice says what a person can do). Reads plain JSON
only: no LangGraph import.
"""

from __future__ import annotations

import os
from pathlib import Path

from handoff_files.foundation.errors import HandoffError
from handoff_files.foundation.safe_paths import open_dir_under
from handoff_files.langgraph.blobs import BLOBS_DIR, unstash
from handoff_files.langgraph.layout import WRITES_DIR, read_writes
from handoff_files.langgraph.spares import SPARES_DIR, spare_owner
from handoff_files.langgraph.store import Namespace
from handoff_files.thread.findings import Finding
from handoff_files.thread.kind import saver_root

__all__ = ["examine_saver_files"]


def examine_saver_files(thread: Path) -> list[Finding]:
    """The findings on the pending writes and blobs of a saver's thread *thread* and its subgraph namespaces."""
    findings: list[Finding] = []
    namespaces = [thread, *sorted(path for path in (thread / "namespaces").glob("*") if path.is_dir())]
    for ns_dir in namespaces:
        findings += _writes(ns_dir) + _blobs(ns_dir)
    return _spares(thread) + findings


def _writes(ns_dir: Path) -> list[Finding]:
    folder = ns_dir / WRITES_DIR
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        return [Finding("error", f"{folder}: cannot list the pending writes: {exc.strerror or exc}", kind="writes")]
    bad = []
    for name in names:
        try:
            read_writes(folder / name)
        except HandoffError as exc:
            bad.append(Finding("error", f"{folder / name}: {exc.reason}", _WRITES_ADVICE, kind="writes"))
    if bad:
        return bad
    return [Finding("ok", f"{len(names)} pending-writes file(s) in {_rel(folder, ns_dir)} read", kind="writes")]


def _spares(thread: Path) -> list[Finding]:
    """The root's spares holding this thread's writes (a power loss undid their rename), or naming no writes file.

    The spares' folder is opened from the root down, no link followed: a link there is reported.
    """
    root = saver_root(thread)
    try:
        with open_dir_under(root, root / SPARES_DIR) as fd:
            held = [] if fd is None else sorted(name for name in os.listdir(fd) if _holds_lines(name, fd))
    except (OSError, HandoffError) as exc:
        return [Finding("error", f"{root / SPARES_DIR}: cannot look through the spare files: {exc}", kind="writes")]
    found = []
    for path in (root / SPARES_DIR / name for name in held):
        try:
            parts = spare_owner(path)
        except HandoffError as exc:
            parts, why = None, f"lines that do not read ({exc.reason})"
        else:
            why = "lines naming no writes file of a namespace"
        if parts is None:
            found.append(Finding("error", f"{path}: a spare holding {why}", _SPARE_ADVICE, kind="writes"))
        elif parts and parts[0] == thread.name:
            what = f"pending writes of {'/'.join(parts)} (a crash undid the rename to it)"
            advice = "the saver moves them back when it is next opened on this root; until then get_tuple misses them"
            if root.joinpath(*parts).exists():
                advice = (
                    "that file exists too, so the saver leaves this one: compare the two, and merge its lines by hand"
                )
            found.append(Finding("error", f"{path}: {what}", advice, kind="writes"))
    return found


_SPARE_ADVICE = "the saver leaves it; look at it, then move it out of the spares' folder"


def _holds_lines(name: str, fd: int) -> bool:
    try:
        return bool(os.lstat(name, dir_fd=fd).st_size)
    except FileNotFoundError:
        return False  # taken by a live writer since the listing


_WRITES_ADVICE = (
    "get_tuple fails on this checkpoint until it is mended: move the file out of writes/ to drop its "
    "pending writes (LangGraph runs their tasks again)"
)


def _blobs(ns_dir: Path) -> list[Finding]:
    entries, _ = Namespace(ns_dir, durability="full", keep=None).scan()  # damaged files: the generic doctor's
    named: dict[str, Path] = {}
    for entry in entries:
        for digest in entry.blobs:
            named.setdefault(digest, entry.path)
    bad = []
    for digest, where in sorted(named.items()):
        try:
            unstash(ns_dir, {"blob": digest, "bytes": 0}, where)
        except HandoffError as exc:
            advice = (
                f"the checkpoint in {where.name} (and any other naming it) cannot be read until the blob is "
                "restored from a copy; `handoff prune` removes the checkpoints that name it once they are older "
                "than those kept"
            )
            bad.append(Finding("error", f"{exc.path}: {exc.reason}", advice, kind="blobs"))
    if bad:
        return bad
    if not (ns_dir / BLOBS_DIR).is_dir():
        return []
    return [Finding("ok", f"{len(named)} blob(s) the checkpoints name in {_rel(ns_dir / BLOBS_DIR, ns_dir)} verify")]


def _rel(path: Path, ns_dir: Path) -> str:
    return f"{path.name}/" if ns_dir.parent.name != "namespaces" else f"namespaces/{ns_dir.name}/{path.name}/"
