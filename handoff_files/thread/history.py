"""History: what a thread kept — its generations, each verified, the change between two, and its journal by time."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    NoHandoffError,
    SignatureError,
)
from handoff_files.thread.edits import layers_diff
from handoff_files.thread.journal import DOCUMENT, Entry
from handoff_files.thread.layout import MIRROR_NAME, ThreadDir
from handoff_files.thread.mirror import primary_stamp
from handoff_files.thread.results import HistoryEntry, Restored
from handoff_files.thread.signatures import SignerCheck, signature_damage, verified

__all__ = [
    "DEFAULT_KEEP",
    "GenerationDiff",
    "GenerationNotFoundError",
    "diff_generations",
    "find_generation",
    "list_history",
    "load_generation",
    "recent",
]


#: Generations kept in ``history/``, the current one included (a store's ``keep``, unless opened with another).
DEFAULT_KEEP: Final = 10


class GenerationNotFoundError(HandoffNotFoundError):
    """``history/`` holds no file for the generation asked for: pruned, removed, or not written yet.

    :param generation: the generation asked for (also named in the reason).
    """

    def __init__(self, path: str | os.PathLike[str], reason: str, generation: int) -> None:
        super().__init__(path, reason)
        self.generation = generation

    def __reduce__(self) -> tuple[type[HandoffError], tuple[object, ...]]:
        # the generation is not among OSError's args: pass it back explicitly so the error pickles whole
        return (type(self), (self.path, self.reason, self.generation))


@dataclass(frozen=True, slots=True)
class GenerationDiff:
    """The change to the layers from one generation to another (``before`` None: nothing came before)."""

    before: int | None
    after: int
    text: str  # a unified diff of the layers' JSON, keys sorted; empty when nothing changed

    @property
    def changed(self) -> bool:
        """Whether any layer differs (the envelope always does, and is left out)."""
        return bool(self.text)


def find_generation(layout: ThreadDir, generation: int) -> Path:
    """The file ``history/`` keeps generation *generation* in (not yet verified). Reads only.

    :raises GenerationNotFoundError: if ``history/`` holds no file for it (pruned, or never written).
    """
    listing = layout.generations()
    name = next((name for number, name in listing if number == generation), None)
    if name is not None:
        return layout.history_dir / name
    newest = listing[0][0] if listing else 0
    oldest = listing[-1][0] if listing else 0
    kept = f"{len(listing)} kept: {oldest} to {newest}"
    if generation > newest:
        what = f"the newest is {newest}" if newest else "it holds none"
        msg = f"holds no generation {generation}: {what} (`handoff history` lists them)"
    elif generation < oldest:
        msg = (
            f"holds no generation {generation}: pruned past the history size ({kept}); saves keep the newest "
            f"{DEFAULT_KEEP} unless the store is opened with keep=N (HandoffStore(thread, keep=N)) to keep more"
        )
    else:
        msg = f"holds no generation {generation}: its file was removed ({kept}; `handoff doctor` checks history/)"
    raise GenerationNotFoundError(layout.history_dir, msg, generation)


def load_generation(layout: ThreadDir, generation: int) -> Handoff:
    """Generation *generation* as ``history/`` keeps it, verified. Reads only.

    :raises GenerationNotFoundError: if ``history/`` holds no file for it (pruned, or never written).
    :raises HandoffError: the loader's own subclass (``ChecksumMismatchError`` …, ``SignatureError``
        for a signature that does not verify) if its file does not verify, its reason naming the generation.
    """
    path = find_generation(layout, generation)
    try:
        handoff = load(path, follow_symlinks=False, origin="store")
        bad = signature_damage(handoff, path)
        if bad is not None:
            raise SignatureError(path, bad)
        return handoff
    except HandoffError as exc:
        # the same class, so a caller (and `--json`'s kind) still tells corrupt from invalid; every
        # HandoffError subclass takes (path, reason)
        msg = f"generation {generation} does not verify: {exc.reason}"
        raise type(exc)(exc.path, msg) from exc


def diff_generations(layout: ThreadDir, before: int | None = None, after: int | None = None) -> GenerationDiff:
    """What changed in the layers from generation *before* to *after*, both from ``history/``, verified. Reads only.

    :param before: the older generation (default: the one before *after*; for generation 1,
        nothing: every layer reads as added).
    :param after: the newer generation (default: the newest in ``history/``).
    :raises NoHandoffError: if *after* is not given and ``history/`` holds no generation.
    :raises HandoffError: as :func:`load_generation` does, for either.
    """
    if after is None:
        after = layout.newest_generation()
        if after == 0:
            msg = "holds no generation to compare: save one first"
            raise NoHandoffError(layout.history_dir, msg)
    if before is None and after > 1:
        before = after - 1
    old = None if before is None else load_generation(layout, before)
    new = load_generation(layout, after)
    old_name = "(nothing before generation 1)" if before is None else f"generation {before}"
    return GenerationDiff(before, after, layers_diff(old, new, old_name, f"generation {after}"))


def recent(entries: Sequence[Entry], *, since: dt.datetime | None = None, last: int | None = None) -> list[Entry]:
    """The journal entries at or after *since*, and of those the *last* few; oldest first, as given.

    A journal-first save's document line is not counted as a line of its own: it goes with the
    save line after it. An entry whose time does not read is left out by *since*.

    :param since: an aware time (None: from the start).
    :param last: how many lines, counted from the end (None: all; 0: none).
    """
    kept = [e for e in entries if since is None or _at_or_after(e.at, since)]
    if last is None:
        return kept
    lines = [i for i, e in enumerate(kept) if e.event != DOCUMENT]
    start = len(kept) if last == 0 else lines[-last] if last <= len(lines) else 0
    if 0 < start < len(kept) and kept[start - 1].event == DOCUMENT:
        start -= 1  # the document the first kept save line commits
    return kept[start:]


def _at_or_after(at: str, since: dt.datetime) -> bool:
    try:
        moment = dt.datetime.fromisoformat(at)
    except ValueError:
        return False
    return moment.tzinfo is not None and moment >= since


def list_history(
    layout: ThreadDir, primary: Path, restored: Restored | None = None, *, allowed_signers: Path | None = None
) -> list[HistoryEntry]:
    """List the generations in ``history/``, newest first, each verified; a bad or astray primary is listed first.

    ``current`` marks the generation *restored* holds: the one a restore returns, which ``show``
    and ``brief`` show. A primary that verifies but holds another generation (behind a newer copy
    in ``history/``, say: a save interrupted after its commit) is listed first with its
    ``problem``. The generation a restore returns is listed even when ``history/`` has no verified
    copy of it (deleted, damaged, or a journal-first save's copy not written yet), in its place
    among the generations, from the file it came from: a thread that restores never lists as empty.
    Reads only: nothing is repaired or removed.

    :param layout: the thread directory.
    :param primary: its primary file.
    :param restored: what a restore of the thread returns (None: nothing restores, nothing is marked).
    :param allowed_signers: who is trusted to sign (default: the user's ``allowed_signers``): each
        signed generation's entry says who signed it; one whose signature does not verify is listed
        with that problem.
    :returns: one entry per generation file, with its problem if it does not verify or is astray; an
        entry outside ``history/`` whose ``problem`` is None holds a generation only it holds.
    :raises HandoffError: if ``history/`` exists but cannot be listed.
    """
    entries: list[HistoryEntry] = []
    signers = SignerCheck(allowed_signers)

    def entry(handoff: Handoff, path: Path, *, current: bool, problem: str | None = None) -> HistoryEntry:
        bad = signature_damage(handoff, path)
        if bad is not None:
            return HistoryEntry(handoff.generation, path, False, None, None, bad)
        seal = None if handoff.seal is None else str(handoff.seal)
        signed = signers.report(handoff, path)
        return HistoryEntry(handoff.generation, path, current, seal, handoff.created_at, problem, signed)

    # a rebuilt handoff comes from no file and has no seal: no entry stands for it
    wanted = None if restored is None or restored.source == "rebuilt" else restored.generation
    head = None
    try:
        written = primary_stamp(primary.parent / MIRROR_NAME)
        head = verified(load(primary, follow_symlinks=False, written=written), primary)
    except HandoffNotFoundError:
        pass
    except HandoffError as exc:
        entries.append(HistoryEntry(None, primary, False, None, None, exc.reason))
    if head is not None and restored is not None and wanted is not None and head.generation != wanted:
        entries.append(entry(head, primary, current=False, problem=_astray(head.generation, restored, layout)))
        head = None  # listed: never again as a generation only it holds
    for generation, name in layout.generations():
        path = layout.history_dir / name
        try:
            handoff = load(path, follow_symlinks=False, origin="store")
        except HandoffError as exc:
            entries.append(HistoryEntry(generation, path, False, None, None, exc.reason))
        else:
            entries.append(entry(handoff, path, current=handoff.generation == wanted))
    lone = (
        (restored.handoff, restored.path, True)
        if restored is not None and wanted is not None
        else (head, primary, False)
        if head is not None
        else None
    )
    if lone is not None and not any(e.generation == lone[0].generation and e.problem is None for e in entries):
        handoff, path, current = lone
        # newest first, and before a damaged copy of its own generation: the one that verifies leads
        place = (i for i, e in enumerate(entries) if e.generation is not None and e.generation <= handoff.generation)
        entries.insert(next(place, len(entries)), entry(handoff, path, current=current))
    return entries


def _astray(generation: int, restored: Restored, layout: ThreadDir) -> str:
    """Why a primary that verifies is not what a restore returns, and what to do."""
    source = restored.path
    where = f"{source.parent.name}/{source.name}" if source.parent == layout.history_dir else source.name
    if generation < restored.generation:
        return (
            f"holds generation {generation}, behind generation {restored.generation} ({where}), which a restore "
            "returns: `handoff doctor --repair` rewrites it"
        )
    pinned = next((p for p in restored.problems if f"generation {generation} (" in p and "is not trusted" in p), None)
    if pinned is not None:  # the folder is pinned to signed generations, and no trusted key signed this one
        return f"not trusted, and passed over: {pinned.split(' is not trusted: ', 1)[1]}"
    return (
        f"holds generation {generation}, but a restore returns generation {restored.generation} ({where}): "
        "`handoff doctor` says why"
    )
