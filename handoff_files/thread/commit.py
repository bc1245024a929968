"""The commit: seal one generation and write it, every file durable ("full") or the journal line first ("journal")."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, render
from handoff_files.format.content import ENVELOPE
from handoff_files.format.model import MAX_INT, SCHEMA_VERSION
from handoff_files.foundation.atomic import fsync_dir, fsync_file, write_durable, write_durable_together
from handoff_files.foundation.errors import HandoffValidationError, HandoffWriteError
from handoff_files.thread.mirror import mirror_bytes
from handoff_files.thread.recovery import summary_fields
from handoff_files.thread.results import SaveReceipt

if TYPE_CHECKING:
    from handoff_files.thread.store import Durability, HandoffStore

__all__ = ["Head", "commit"]

# the order a person reads a handoff in: envelope, then story, dangers, next steps, facts, reasons
_ORDER: Final = (*ENVELOPE, "narrative", "warnings", "priorities", "state", "decisions", "context")


@dataclass(frozen=True, slots=True)
class Head:
    """What the next save chains from."""

    generation: int  # highest generation seen anywhere (0 for a new thread)
    parent: str | None  # seal of the newest verified generation
    agent_id: str | None
    thread_id: str | None
    primary: Literal["ok", "missing", "bad", "legacy"]
    saves: int = 0  # saves so far, as state.json counts them


def commit(
    store: HandoffStore,
    layers: dict[str, Any],
    head: Head,
    listing: list[tuple[int, str]],
    *,
    ids: tuple[str, str],
    lineage: dict[str, Any] | None,
    after: int,
    event: str,
    durability: Durability,
) -> tuple[SaveReceipt, Head]:
    """Write the generation after *head* (call under the writers' lock); return its receipt and the new head.

    :param listing: ``history/``'s generation files, newest first (for pruning and checkpoints).
    :param ids: the agent and thread ids the generation carries.
    :raises HandoffValidationError: if the content cannot be sealed, or is too large to read back.
    :raises HandoffWriteError: if the disk refuses.
    """
    generation = max(head.generation, after) + 1
    if generation > MAX_INT:
        msg = f"the next generation would be {generation}, past the 64-bit limit; start a new thread"
        raise HandoffValidationError(store.path, msg)
    created_at = dt.datetime.now(dt.UTC)
    document = {
        "schema_version": SCHEMA_VERSION,
        "agent_id": ids[0],
        "thread_id": ids[1],
        "generation": generation,
        "created_at": created_at.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "parent": head.parent,
        "lineage": lineage or {"adopted_from": None, "migrated_from": None},
        **layers,
    }
    try:
        checksum = sealing.digest(sealing.canonical(document), store.algorithm)
    except ValueError as exc:
        msg = f"not valid handoff content: {exc}"
        raise HandoffValidationError(store.path, msg) from exc
    document["seal"] = {"algorithm": store.algorithm, "digest": checksum}
    data = render({key: document[key] for key in _ORDER if key in document}, store.format)
    if len(data) > MAX_FILE_BYTES:
        # never acknowledge a generation the loader would refuse to read back
        msg = f"handoff would be {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit; trim context or data"
        raise HandoffValidationError(store.path, msg)
    journal_first = durability == "journal"
    problems = _keep_replaced_primary(store, head, created_at, journal_first=journal_first)
    history_file = store.history_dir / f"{generation:08d}{store.primary.suffix}"
    seal_text = f"{store.algorithm}:{checksum}"
    summary = summary_fields(document)
    if journal_first:
        # the commit point is one fdatasync of a line holding the whole sealed document;
        # the files below are copies a crash may lose, and restore falls back to this line
        store.journal.append(
            event,
            generation=generation,
            seal=seal_text,
            before_rotate=lambda: _checkpoint(store, listing),
            document=document,
            durability="journal",
            **summary,
        )
    else:
        # history first: once its copy is durable the generation exists (restore takes the newest
        # verified generation of primary and history); a separate copy, not a hard link, so a
        # person editing the primary in place can never alter the sealed generation
        write_durable(history_file, data)
    mirror = mirror_bytes(
        generation=generation,
        seal=seal_text,
        agent_id=ids[0],
        thread_id=ids[1],
        created_at=document["created_at"],
        state=document["state"],
        saves=head.saves + 1,
        last_restore=None,
    )
    if journal_first:
        write_durable(history_file, data, sync=False)
    # the primary and state.json share one directory fsync
    write_durable_together([(store.primary, data), (store.mirror_path, mirror)], sync=not journal_first)
    if not journal_first:
        # the journal's line for a new generation: "saved", or "sealed" (a person's edit accepted),
        # "migrated" (an older file rewritten) or "adopted"; each carries the summary a rebuild reads
        store.journal.append(event, generation=generation, seal=seal_text, **summary)
    _prune(store, [(generation, history_file.name), *listing])
    receipt = SaveReceipt(generation, seal_text, store.primary, created_at, tuple(problems))
    return receipt, Head(generation, seal_text, ids[0], ids[1], "ok", head.saves + 1)


def _keep_replaced_primary(
    store: HandoffStore, head: Head, created_at: dt.datetime, *, journal_first: bool
) -> list[str]:
    """Keep a primary that does not verify (an edit, damage) or is an older version: never overwrite it unseen."""
    if head.primary not in ("bad", "legacy"):
        return []
    prefix = "displaced" if head.primary == "bad" else "legacy"
    kept = store.history_dir / f"{prefix}-{created_at:%Y%m%dT%H%M%S%fZ}{store.primary.suffix}"
    try:
        os.link(store.primary, kept)
        if journal_first:
            fsync_dir(store.history_dir)  # a full save's history write makes the link durable too
    except OSError as exc:
        msg = f"cannot keep the replaced primary before replacing it: {exc.strerror or exc}"
        raise HandoffWriteError(store.primary, msg) from exc
    why = "did not verify" if head.primary == "bad" else "was an older version"
    return [f"the primary {why}; kept it as {store.history_dir.name}/{kept.name}"]


def _checkpoint(store: HandoffStore, listing: list[tuple[int, str]]) -> None:
    """Make a journal-first save's files durable: the journal is about to drop its older lines."""
    try:
        for path in (*(store.history_dir / name for _, name in listing[:1]), store.primary, store.mirror_path):
            fsync_file(path)
        fsync_dir(store.history_dir)
        fsync_dir(store.path)
    except OSError as exc:
        msg = f"cannot make the journal-first copies durable before rotating the journal: {exc.strerror or exc}"
        raise HandoffWriteError(store.path, msg) from exc


def _prune(store: HandoffStore, listing: list[tuple[int, str]]) -> None:
    """Remove history files past the newest ``keep`` (*listing*: the generation files, newest first)."""
    for _, name in listing[store.keep :]:
        try:
            os.unlink(store.history_dir / name)
        except FileNotFoundError:
            pass
        except OSError:
            break  # pruning is housekeeping: a failure here never fails a durable save
