"""The commit: seal one generation and write it, every file durable ("full") or the journal line first ("journal")."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.model import MAX_INT, SCHEMA_VERSION
from handoff_files.foundation.atomic import fsync_dir, fsync_file, lexists, write_durable
from handoff_files.foundation.clock import file_stamp, iso_z, utc_now
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffValidationError,
    HandoffWriteError,
    RollbackError,
    TransferRefusedError,
)
from handoff_files.thread.anchor import anchor_of, rollback_of
from handoff_files.thread.catchup import catch_up
from handoff_files.thread.copyback import file_bytes
from handoff_files.thread.head import Head
from handoff_files.thread.kind import refuse_plain_write
from handoff_files.thread.layout import TRANSFERRED_NAME
from handoff_files.thread.mirror import mirror_bytes, state_message
from handoff_files.thread.recovery import summary_fields
from handoff_files.thread.results import SaveReceipt
from handoff_files.thread.retained import keep_record
from handoff_files.thread.settings import Durability, ThreadSettings
from handoff_files.thread.signatures import sign_document

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey

__all__ = ["check_disk", "commit"]

_T = TypeVar("_T")


def check_disk(thread: ThreadSettings, head: Head, event: str, *, checkpoint: bool) -> None:
    """What a save checks when the files are not as this store's last save left them (call under the lock).

    The thread's kind (a plain store never writes into a LangGraph saver's thread; *checkpoint*: the
    newest generation may be one) and, on a pinned folder, its rollback anchor.

    :raises ThreadKindError: if this store may not write into the thread.
    :raises RollbackError: if the thread is older than its anchor (the save would reuse a number).
    """
    refuse_plain_write(thread.layout, thread.kind, event, newest_may_be_a_checkpoint=checkpoint)
    if head.thread_id is None:
        return
    try:
        why = rollback_of(anchor_of(thread.path), head.thread_id, head.generation, head.parent)
    except RollbackError:
        return  # an anchor that is not this user's private file is used for nothing (restore says so)
    if why is not None:
        msg = f"{why}; a save now would follow the rolled-back generation. Accept the rollback first: `handoff show"
        accept = f"{msg} {thread.path} --accept-rollback` (Python: restore(accept_rollback=True))"
        raise RollbackError(thread.path, f"{accept}, or `handoff trust {thread.path} --reset`")


def commit(
    thread: ThreadSettings,
    layers: dict[str, Any],
    head: Head,
    listing: list[tuple[int, str]],
    *,
    lineage: dict[str, Any] | None,
    after: int,
    event: str,
    durability: Durability,
) -> tuple[SaveReceipt, Head]:
    """Write the generation after *head* (call under the writers' lock); return its receipt and the new head.

    :param thread: the thread to write.
    :param layers: the five layers (and optionally ``context``), JSON mode.
    :param head: what the generation chains from (:class:`~handoff_files.thread.head.HeadTracker`).
    :param listing: ``history/``'s generation files, newest first (for pruning and checkpoints).
    :param lineage: ``adopted_from`` and ``migrated_from`` (default: neither).
    :param after: a generation the new one must follow too (a migrated file's own).
    :param event: the journal event: ``"saved"``, ``"sealed"``, ``"migrated"`` or ``"adopted"``.
    :param durability: when the save is acknowledged (see :data:`Durability`).
    :returns: the receipt, and the head the next save chains from.
    :raises TransferRefusedError: if the thread was transferred and is closed.
    :raises HandoffValidationError: if the thread is another agent's, if the content cannot be
        sealed, or if it is too large to read back.
    :raises HandoffWriteError: if the disk refuses.
    """
    _check_writable(thread, head)
    ids = thread.ids(head.agent_id, head.thread_id)
    created_at = utc_now()
    key = thread.keys.key() if thread.keys is not None else None  # a key that cannot sign fails here: nothing written
    document, seal_text = _sealed(thread, layers, head, ids, created_at, lineage=lineage, after=after, key=key)
    data = file_bytes(document, thread.format)
    if len(data) > MAX_FILE_BYTES:
        # never acknowledge a generation the loader would refuse to read back
        msg = f"handoff would be {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit; trim context or data"
        raise HandoffValidationError(thread.path, msg)
    journal_first = durability == "journal"
    problems = _keep_replaced_primary(thread, head, created_at, journal_first=journal_first)
    if head.generation > (listing[0][0] if listing else 0):
        # the head is ahead of history/: a journal-first writer was killed after its commit, and
        # nothing else writes its copy (one comparison on every save; the journal is read only then)
        problems.extend(_copied_back(thread))
    if head.thread_id is None and thread.derived_note:  # the first generation: its ids come from the folder
        problems.append(thread.derived_note)
    unfinished = _write(
        thread,
        document,
        data,
        seal_text=seal_text,
        head=head,
        listing=listing,
        event=event,
        journal_first=journal_first,
        key=key,
    )
    generation: int = document["generation"]
    signed_by = key.fingerprint if key is not None else None
    receipt = SaveReceipt(
        generation, seal_text, thread.primary, created_at, tuple(problems), tuple(unfinished), signed_by
    )
    return receipt, Head(generation, seal_text, ids[0], ids[1], "ok", head.saves + 1)


def _check_writable(thread: ThreadSettings, head: Head) -> None:
    """Refuse a save into a transferred thread, or into another agent's."""
    if lexists(thread.layout.transferred):
        msg = f"thread was transferred (see {TRANSFERRED_NAME}) and is closed; the agent that adopted it carries on"
        raise TransferRefusedError(thread.path, msg)
    if head.agent_id and thread.agent_id and head.agent_id != thread.agent_id:
        msg = f"thread belongs to agent {head.agent_id!r}, not {thread.agent_id!r}; adopt it into a new thread instead"
        raise HandoffValidationError(thread.path, msg)


def _sealed(
    thread: ThreadSettings,
    layers: dict[str, Any],
    head: Head,
    ids: tuple[str, str],
    created_at: dt.datetime,
    *,
    lineage: dict[str, Any] | None,
    after: int,
    key: SigningKey | None,
) -> tuple[dict[str, Any], str]:
    """The next generation's whole document, sealed (and signed with *key*), and its seal as text."""
    generation = max(head.generation, after) + 1
    if generation > MAX_INT:
        msg = f"the next generation would be {generation}, past the 64-bit limit; start a new thread"
        raise HandoffValidationError(thread.path, msg)
    document = {
        "schema_version": SCHEMA_VERSION,
        "agent_id": ids[0],
        "thread_id": ids[1],
        "generation": generation,
        "created_at": iso_z(created_at, timespec="microseconds"),
        "parent": head.parent,
        "lineage": lineage or {"adopted_from": None, "migrated_from": None},
        **layers,
    }
    try:
        checksum = sealing.digest(sealing.canonical(document), thread.algorithm)
    except ValueError as exc:
        msg = f"not valid handoff content: {exc}"
        raise HandoffValidationError(thread.path, msg) from exc
    document["seal"] = {"algorithm": thread.algorithm, "digest": checksum}
    if key is not None:
        sign_document(document, key)  # over the seal's text: the digest is what it was
    return document, f"{thread.algorithm}:{checksum}"


def _write(
    thread: ThreadSettings,
    document: dict[str, Any],
    data: bytes,
    *,
    seal_text: str,
    head: Head,
    listing: list[tuple[int, str]],
    event: str,
    journal_first: bool,
    key: SigningKey | None,
) -> list[str]:
    """Write the sealed generation: one commit point, then its copies; returns the copies left unfinished.

    Each durability has one commit point, the only write the receipt waits for: ``"full"``, the
    generation's own file in ``history/`` (fdatasync, rename to a new name, directory fsync);
    ``"journal"``, its document line in the journal (one fdatasync). The primary, ``state.json``
    and the other channel follow without a flush: a crash may lose them, never the generation,
    since restore takes the newest verified generation across primary, history and journal.
    A failure before or at the commit point raises (at it, :class:`UncertainWriteError` when the
    write is in place but its flush failed); a failure after it is not a failed save: the
    generation exists, and the copies it left unwritten are returned, each as "path: reason".
    """
    generation: int = document["generation"]
    history_file = thread.layout.generation_file(generation, thread.format)
    journal = thread.journal
    summary = summary_fields(document)
    unfinished: list[str] = []

    def after_commit(step: Callable[[], _T]) -> _T | None:
        try:
            return step()
        except HandoffWriteError as exc:
            unfinished.append(str(exc))
            return None

    if journal_first:
        # the commit point is one fdatasync of a line holding the whole sealed document;
        # the files below are copies a crash may lose, and restore falls back to this line
        journal.append(
            event,
            generation=generation,
            seal=seal_text,
            before_rotate=lambda: _checkpoint(thread, listing),
            document=document,
            durability="journal",
            **summary,
        )
    # a separate copy in history/, not a hard link, so a person editing the primary in place can
    # never alter the sealed generation; under "full" it is the commit point: once it is durable
    # the generation exists, and it is a new name, so its rename flushes nothing else
    if journal_first:
        after_commit(lambda: write_durable(history_file, data, sync=False, new=True))
    else:
        write_durable(history_file, data, new=True)
    # the copies a person and a restart read first: atomic for readers, not flushed; the primary
    # first, so state.json can record it as written (an edit changes that stamp, bit rot does not)
    written = after_commit(lambda: write_durable(thread.primary, data, sync=False))
    saved = {
        "generation": generation,
        "seal": seal_text,
        "agent_id": document["agent_id"],
        "thread_id": document["thread_id"],
        "created_at": document["created_at"],
        "state": document["state"],
    }
    signed = None if key is None else key.sign(state_message(**saved))
    mirror = mirror_bytes(**saved, saves=head.saves + 1, last_restore=None, primary_written=written, signature=signed)
    after_commit(lambda: write_durable(thread.layout.mirror, mirror, sync=False))
    if not journal_first:
        # the journal's line for a new generation: "saved", or "sealed" (a person's edit accepted),
        # "migrated" (an older file rewritten) or "adopted"; each carries the summary a rebuild reads
        after_commit(lambda: journal.append(event, generation=generation, seal=seal_text, sync=False, **summary))
    _prune(thread, [(generation, history_file.name), *listing], document["thread_id"], seal_text)
    return unfinished


def _copied_back(thread: ThreadSettings) -> list[str]:
    """Write the missing ``history/`` copies of journal-only generations; a failure is noted, not raised."""
    try:
        return catch_up(thread.layout, thread.format)
    except HandoffError as exc:
        return [f"a generation only in the journal could not be copied back to history/: {exc}"]


def _keep_replaced_primary(
    thread: ThreadSettings, head: Head, created_at: dt.datetime, *, journal_first: bool
) -> list[str]:
    """Keep a primary that does not verify (an edit, damage) or is an older version: never overwrite it unseen."""
    if head.primary not in ("bad", "legacy"):
        return []
    prefix = "displaced" if head.primary == "bad" else "legacy"
    primary, history_dir = thread.primary, thread.layout.history_dir
    kept = thread.layout.kept_copy(prefix, file_stamp(created_at), primary.suffix)
    try:
        os.link(primary, kept)
        if journal_first:
            fsync_dir(history_dir)  # a full save's history write makes the link durable too
    except OSError as exc:
        msg = f"cannot keep the replaced primary before replacing it: {exc.strerror or exc}"
        raise HandoffWriteError(primary, msg) from exc
    why = "did not verify" if head.primary == "bad" else "was an older version"
    return [f"the primary {why}; kept it as {history_dir.name}/{kept.name}"]


def _checkpoint(thread: ThreadSettings, listing: list[tuple[int, str]]) -> None:
    """Make a journal-first save's files durable: the journal is about to drop its older lines."""
    history_dir = thread.layout.history_dir
    try:
        for path in (*(history_dir / name for _, name in listing[:1]), thread.primary, thread.layout.mirror):
            fsync_file(path)
        fsync_dir(history_dir)
        fsync_dir(thread.path)
    except OSError as exc:
        msg = f"cannot make the journal-first copies durable before rotating the journal: {exc.strerror or exc}"
        raise HandoffWriteError(thread.path, msg) from exc


def _prune(thread: ThreadSettings, listing: list[tuple[int, str]], thread_id: str, seal: str) -> None:
    """Remove history files past the newest ``keep`` (*listing*: the generation files, newest first).

    The retention record says so first (durably, and only when it does not already cover this
    store): a generation file is never removed without it, so ``handoff verify`` tells the
    pruned from the lost.
    """
    removed = listing[thread.keep :]
    if not removed:
        return
    history_dir = thread.layout.history_dir
    try:
        keep_record(
            thread.layout,
            thread_id=thread_id,
            keep=thread.keep,
            kept_from=listing[thread.keep - 1][0],
            oldest=listing[-1][0],
            generation=listing[0][0],
            seal=seal,
            key=thread.keys.key() if thread.keys is not None else None,
        )
    except HandoffError:
        return  # pruning is housekeeping: a failure here never fails a durable save (the files stay)
    for _, name in removed:
        try:
            os.unlink(history_dir / name)
        except FileNotFoundError:
            pass
        except OSError:
            break
