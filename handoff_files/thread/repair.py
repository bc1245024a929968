"""Repair: the verified copies of each generation, and the durable rewrites that put one in place of a damaged one."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from handoff_files.format.codec import MAX_FILE_BYTES, Format, parse, render
from handoff_files.format.content import ENVELOPE
from handoff_files.format.loader import decode, load
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import fsync_dir, read_bytes, rewrite, write_all, write_durable
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.thread import signatures
from handoff_files.thread.layout import HISTORY_DIR, ThreadDir, format_of
from handoff_files.thread.mirror import mirror_bytes, state_message
from handoff_files.thread.scan import HasJournal, journal_saves

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey

__all__ = [
    "Copy",
    "document_of",
    "format_of",
    "history_copies",
    "journal_copies",
    "mirror_of",
    "rewrite",
    "saved_bytes",
    "set_aside_lines",
    "store_key",
]

#: The order a save writes a handoff's keys in (``thread/commit.py``): a copy rewritten in it is,
#: byte for byte, the file the save wrote. The doctor's tests compare the bytes with the save's.
_SAVED_ORDER: Final = (*ENVELOPE, "narrative", "warnings", "priorities", "state", "decisions", "context")


@dataclass(frozen=True, slots=True)
class Copy:
    """A verified copy of one sealed generation: the handoff, where it is, and how a person names it.

    ``document`` is a journal-first line's document; a file's is read again when a repair needs it.
    """

    handoff: Handoff
    path: Path
    label: str  # "handoff.json", "history/00000003.json", "its journal line"
    document: dict[str, Any] | None = None

    @property
    def generation(self) -> int:
        """The generation it holds."""
        return self.handoff.generation


def history_copies(layout: ThreadDir) -> tuple[dict[int, Copy], dict[int, tuple[Path, str]]]:
    """The verified copies in ``history/``, and each file there that does not verify, with what is wrong.

    :raises HandoffError: if ``history/`` exists but cannot be listed.
    """
    verified: dict[int, Copy] = {}
    damaged: dict[int, tuple[Path, str]] = {}
    for generation, name in layout.generations():
        path = layout.history_dir / name
        try:
            handoff = signatures.verified(load(path, follow_symlinks=False), path)
        except HandoffError as exc:
            damaged[generation] = (path, f"{HISTORY_DIR}/{name} does not verify: {exc.reason}")
            continue
        if handoff.generation != generation:
            damaged[generation] = (path, f"{HISTORY_DIR}/{name} holds generation {handoff.generation}")
        elif handoff.seal is None:
            damaged[generation] = (path, f"{HISTORY_DIR}/{name} is an older-version file, not a sealed generation")
        else:
            verified[generation] = Copy(handoff, path, f"{HISTORY_DIR}/{name}")
    return verified, damaged


def journal_copies(
    thread: HasJournal, floor: int, wanted: Collection[int]
) -> tuple[dict[int, Copy], list[tuple[int, str]]]:
    """Journal-first saves' verified documents: those newer than generation *floor*, and those of generations *wanted*.

    :returns: the copies, and each save line newer than every copy and *floor* that holds no usable
        document, by generation, with why (such a save was never acknowledged, or its document line is lost).
    :raises HandoffError: if the journal cannot be read.
    """
    copies: dict[int, Copy] = {}
    unusable: list[tuple[int, str]] = []
    for entry, handoff, document, why_not in journal_saves(thread, min([*wanted, floor + 1]) - 1):
        generation = entry.generation or 0  # journal_saves yields only lines with a generation
        if handoff is None or document is None:
            if generation > floor and not copies:
                why = f"the journal's line of generation {generation} holds no usable document: {why_not}"
                unusable.append((generation, why))
        elif generation > floor or generation in wanted:
            copies.setdefault(generation, Copy(handoff, thread.journal.path, "its journal line", document))
    return copies, unusable


def document_of(copy: Copy) -> dict[str, Any]:
    """The sealed document *copy* holds, as parsed (a file is read again, and must still verify).

    :raises HandoffError: if the file cannot be read, or no longer holds the same sealed generation.
    """
    if copy.document is not None:
        return copy.document
    data, st = read_bytes(copy.path, MAX_FILE_BYTES, follow_symlinks=False)
    _same(decode(data, copy.path, mtime=st.st_mtime), copy, copy.path)
    return parse(data, copy.path)


def saved_bytes(copy: Copy, fmt: Format, target: Path) -> bytes:
    """The bytes the save of *copy*'s generation wrote in *fmt*, checked to verify as that generation.

    :param target: the file they are for (named in errors).
    :raises HandoffError: if the copy cannot be read again, or the bytes would not verify.
    """
    document = document_of(copy)
    ordered: dict[str, Any] = {key: document[key] for key in _SAVED_ORDER if key in document}
    ordered.update(document)  # a key no save writes (none verifies today) keeps its place after the rest
    data = render(ordered, fmt)
    # never write a copy that does not verify: these bytes must hold the very same sealed generation
    _same(decode(data, target), copy, target)
    return data


def mirror_of(copy: Copy, primary: Path, *, signing_key: SigningKey | None = None) -> bytes:
    """``state.json`` as the save of *copy*'s generation wrote it (the count of saves taken to be its generation).

    The primary's stamp (size, mtime) is recorded when *primary* holds that generation, verified,
    so a later edit of it is told from corruption exactly, as after a save.

    :param signing_key: signs what it holds, as a signed save does, if the generation itself is
        signed by this same key (never another's, nor an unsigned one: a repair vouches for nothing
        the key did not sign).
    :raises HandoffError: if the copy cannot be read again.
    """
    document = document_of(copy)
    handoff = copy.handoff
    created_at = document.get("created_at")
    state = document.get("state")
    saved: dict[str, Any] = {
        "generation": handoff.generation,
        "seal": str(handoff.seal),
        "agent_id": handoff.agent_id,
        "thread_id": handoff.thread_id,
        "created_at": created_at if isinstance(created_at, str) else iso_z(handoff.created_at, timespec="microseconds"),
        "state": state if isinstance(state, dict) else handoff.state.model_dump(mode="json"),
    }
    signature = None
    if signing_key is not None and _signed_by(handoff, signing_key):
        signature = signing_key.sign(state_message(**saved))
    return mirror_bytes(
        **saved,
        saves=handoff.generation,
        last_restore=None,
        primary_written=_stamp_if_holding(primary, copy),
        signature=signature,
    )


class _Keyed(Protocol):
    @property
    def signing_key(self) -> SigningKey | None: ...


def store_key(store: _Keyed) -> SigningKey | None:
    """The key *store* signs with, or None, also when its configured key cannot be read (a repair is
    never refused for it: it signs nothing)."""
    try:
        return store.signing_key
    except HandoffError:
        return None


def _signed_by(handoff: Handoff, key: SigningKey) -> bool:
    armored = None if handoff.seal is None else handoff.seal.signature
    if armored is None:
        return False
    from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed generation loads it

    try:
        return sshsig.parse(armored, "the generation").fingerprint == key.fingerprint
    except HandoffError:
        return False


def _stamp_if_holding(primary: Path, copy: Copy) -> tuple[int, int] | None:
    """*primary*'s size and mtime (ns) if it holds *copy*'s generation and verifies; else None."""
    try:
        held = signatures.verified(load(primary, follow_symlinks=False), primary)
        st = os.lstat(primary)
    except (HandoffError, OSError):
        return None
    return (st.st_size, st.st_mtime_ns) if held.seal == copy.handoff.seal else None


def set_aside_lines(path: Path, numbers: Collection[int], stamp: str) -> Path:
    """Move lines *numbers* (counted from 1) of the line file *path* to ``<name>.damaged-<stamp>.jsonl``. Writes.

    The lines go to a new file beside *path* (written and synced) first; only then is *path*
    rewritten without them, atomically and durably. A crash in between leaves them in both
    files: a line is never lost. Call under the writers' lock.

    :returns: the file that holds them.
    :raises HandoffError: if *path* cannot be read.
    :raises HandoffWriteError: if either file cannot be written (*path* is then as it was).
    """
    data, _ = read_bytes(path, sys.maxsize, follow_symlinks=False)
    lines = data.split(b"\n")
    tail = lines.pop()  # what follows the last newline: a torn line, or nothing
    wanted = set(numbers)
    damaged = b"".join(line + b"\n" for number, line in enumerate(lines, 1) if number in wanted)
    kept = b"".join(line + b"\n" for number, line in enumerate(lines, 1) if number not in wanted)
    aside = path.with_name(f"{path.name.removesuffix('.jsonl')}.damaged-{stamp}.jsonl")
    _write_new(aside, damaged)
    write_durable(path, kept + tail)
    return aside


def _write_new(path: Path, data: bytes) -> None:
    """Write a new file durably (it must not exist): no temp file, since nothing is replaced."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        msg = f"cannot create it: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)  # a new file's name is durable only with its directory's
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()  # a part written is no copy: the lines are still where they were
        msg = f"cannot write it: {exc.strerror or exc}"
        raise HandoffWriteError(path, msg) from exc


def _same(found: Handoff, copy: Copy, path: Path) -> None:
    if (found.generation, found.seal) != (copy.generation, copy.handoff.seal):
        msg = f"does not hold generation {copy.generation} sealed {copy.handoff.seal} as {copy.label} did; run it again"
        raise HandoffError(path, msg)
