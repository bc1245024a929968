"""Copy-back: a generation committed only to the journal gets its ``history/`` copy before the journal can lose it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from handoff_files.format.codec import MAX_FILE_BYTES, Format, render
from handoff_files.format.content import ENVELOPE
from handoff_files.format.loader import decode, load
from handoff_files.foundation.atomic import fsync_dir, fsync_file, read_bytes, rewrite, write_durable
from handoff_files.foundation.clock import file_stamp
from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.thread.layout import HISTORY_DIR, ThreadDir, format_of
from handoff_files.thread.signatures import verified

__all__ = ["Committed", "copy_back", "file_bytes"]

#: A journal-first save as the journal holds it, newest first: its generation, its seal, and the
#: document line written with it (None if missing or damaged): ``Journal.committed_documents()``.
Committed = tuple[int | None, str | None, dict[str, Any] | None]

#: Flushes made at once by a rotation (see _flush); 1: one after another.
_FLUSHERS = 16
# the order a person reads a handoff in: envelope, then story, dangers, next steps, facts, reasons
_ORDER: Final = (*ENVELOPE, "narrative", "warnings", "priorities", "state", "decisions", "context")


def file_bytes(document: dict[str, Any], fmt: Format) -> bytes:
    """A sealed generation's file, as a save writes it (*document* whole, seal included)."""
    return render({key: document[key] for key in _ORDER if key in document}, fmt)


def copy_back(
    saves: Iterable[Committed], journal: Path, layout: ThreadDir, fmt: Format | None, *, dropping: bool = False
) -> list[str]:
    """Write the ``history/`` copy of each generation a journal-first save committed with no verified copy. Writes.

    A writer killed right after its commit point leaves its generation in the journal alone;
    nothing else rewrites it, and a rotation would drop it. Call under the writers' lock: on the
    next save that finds its head ahead of ``history/``, and before a rotation drops a journal
    file (*saves*: those of that file). Generations older than the oldest one ``history/`` keeps were
    pruned on purpose and are passed by; with nothing kept, only the newest is written.

    :param saves: the journal-first saves to look at, newest first (see :data:`Committed`).
    :param journal: the journal file, named in errors.
    :param layout: the thread's files.
    :param fmt: the thread's format (None: the primary's, JSON if there is none).
    :param dropping: *journal* is about to be removed (a rotation): a copy found in place is made
        durable too (its data, then ``history/``'s names), for a journal-first save wrote it
        unflushed and the journal line was its only durable copy.
    :returns: a note for each copy written.
    :raises HandoffWriteError: if a copy cannot be written, or one in place cannot be made durable.
    """
    listing = dict(layout.generations())
    floor = min(listing, default=None)
    chosen: Format = fmt if fmt is not None else next(iter(layout.primary_formats()), "json")
    notes: list[str] = []
    in_place: list[Path] = []  # copies found in place, flushed before the journal is dropped
    for generation, seal, document in saves:
        if generation is None or (floor is not None and generation < floor):
            break  # newest first: what is older was pruned
        kept = layout.history_dir / listing[generation] if generation in listing else None
        if document is not None and kept is not None and _same(kept, document):
            in_place.append(kept)  # the copy a save wrote, byte for byte (a rotation's usual case)
            continue
        if document is None or not _verified(journal, seal, generation, document):
            continue  # never acknowledged (a torn write), or damaged: nothing to copy
        if kept is not None and _loads(kept, generation):
            in_place.append(kept)  # a verified copy (another seal's is never overwritten: recovery's work)
            continue
        if kept is None:
            target = layout.generation_file(generation, chosen)
            write_durable(target, file_bytes(document, chosen))
            notes.append(
                f"generation {generation} was only in the journal; copied it back to {HISTORY_DIR}/{target.name}"
            )
        else:  # a damaged copy: written again under its own name, kept aside first as the doctor keeps it
            keep_as = layout.kept_copy("damaged", file_stamp(), f"-{kept.name}")
            rewrite(kept, file_bytes(document, format_of(kept)), keep_as=keep_as)
            notes.append(
                f"{HISTORY_DIR}/{kept.name} did not verify; wrote it again from the journal, "
                f"the damaged file kept as {HISTORY_DIR}/{keep_as.name}"
            )
        if floor is None:
            break
    if dropping:
        _flush(in_place)
        if in_place:  # their names too: an append other than a journal-first save's made none durable
            _flush_names(layout.history_dir)
    return notes


def _flush(paths: list[Path]) -> None:
    """fsync each of *paths*, several at once: a file system commits concurrent flushes together.

    A thread that keeps every generation (a LangGraph saver's) drops ~1,600 of them at a rotation
    of 1 KB saves: one after another, 0.45 s on the reference machine.

    :raises HandoffWriteError: naming the first file that could not be flushed.
    """
    failures: list[tuple[Path, OSError] | None] | None = None
    if len(paths) > 1 and _FLUSHERS > 1:
        try:  # importing the pool's module at exit raises too: it registers an exit hook of its own
            from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 -- only a rotation's flush needs it

            with ThreadPoolExecutor(max_workers=min(_FLUSHERS, len(paths))) as pool:
                failures = list(pool.map(_flushed, paths))
        except RuntimeError:  # no new thread at interpreter exit (a save in an atexit handler): one by one
            failures = None
    if failures is None:
        failures = [_flushed(path) for path in paths]
    failed = next((failure for failure in failures if failure is not None), None)
    if failed is not None:
        path, exc = failed
        msg = f"cannot make it durable before the journal holding it is rotated away: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc


def _flush_names(history: Path) -> None:
    """fsync ``history/`` itself: the names of the copies just flushed."""
    try:
        fsync_dir(history)
    except OSError as exc:
        msg = f"cannot make its names durable before the journal is rotated away: {exc.strerror or exc}"
        raise HandoffWriteError(history, msg) from exc


def _flushed(path: Path) -> tuple[Path, OSError] | None:
    try:
        fsync_file(path)
    except OSError as exc:
        return path, exc
    return None


def _same(path: Path, document: dict[str, Any]) -> bool:
    """Whether *path* holds exactly the file a save writes for *document* (in the format its name says)."""
    try:
        data, _ = read_bytes(path, MAX_FILE_BYTES, follow_symlinks=False)
        return data == file_bytes(document, format_of(path))
    except (HandoffError, TypeError, ValueError):
        return False


def _verified(path: Path, seal: str | None, generation: int, document: dict[str, Any]) -> bool:
    """Whether a journal line's document verifies as the generation and seal its save line names."""
    try:
        handoff = verified(decode(render(document, "json"), path, origin="store"), path)
    except (HandoffError, TypeError, ValueError):
        return False
    return handoff.generation == generation and str(handoff.seal) == seal


def _loads(path: Path, generation: int) -> bool:
    """Whether the ``history/`` file verifies and holds *generation*."""
    try:
        return verified(load(path, follow_symlinks=False, origin="store"), path).generation == generation
    except HandoffError:
        return False
