"""Handing a run to another agent: export a sealed checkpoint to a blob store; adopt it once its hash checks."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from handoff_files.format.codec import MAX_FILE_BYTES, render
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import read_bytes, write_durable
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    HandoffError,
    HandoffNotFoundError,
    NoHandoffError,
    TransferRefusedError,
)
from handoff_files.foundation.names import check_id
from handoff_files.thread.recovery import journal_saves, summary_fields
from handoff_files.thread.results import SaveReceipt
from handoff_files.thread.store import TRANSFERRED_NAME, HandoffStore
from handoff_files.transfer.blobs import BlobStore, sha256_hex
from handoff_files.transfer.descriptor import DESCRIPTOR_VERSION, Descriptor, now, parse_descriptor

__all__ = [
    "PHASES",
    "AdoptResult",
    "TransferResult",
    "adopt_checkpoint",
    "checkpoint_bytes",
    "handoff_checkpoint",
    "transfer",
    "transferred_to",
    "verify_checkpoint",
]

Phase = Literal["summarized", "bootstrapped", "terminated"]
#: A transfer's phases, in order; ``on_phase`` hears each name once it is durable.
PHASES: Final[tuple[Phase, ...]] = ("summarized", "bootstrapped", "terminated")


@dataclass(frozen=True, slots=True)
class AdoptResult:
    """What :func:`adopt_checkpoint` did: which checkpoint, verified, became which new thread."""

    adopted_from: str  # the descriptor's source, "thread:generation"
    new_thread_id: str
    checkpoint_id: str  # the adopted generation's seal
    blob_id: str
    verified: bool  # the blob's sha256 and the handoff's seal both checked (always True on return)
    receipt: SaveReceipt  # generation 1 of the new thread


def _store_of(store: HandoffStore | str | os.PathLike[str]) -> HandoffStore:
    return store if isinstance(store, HandoffStore) else HandoffStore(store)


def checkpoint_bytes(store: HandoffStore, generation: int | None = None) -> tuple[bytes, Handoff]:
    """The exact sealed bytes of one generation (default: the newest verified), and the handoff they hold.

    :raises NoHandoffError: if that generation is not kept, or does not verify.
    :raises TransferRefusedError: if the newest generation has no seal (rebuilt, or an older version).
    """
    if generation is None:
        restored = store.restore()
        if restored.handoff.seal is None:
            msg = (
                f"generation {restored.generation} has no seal ({restored.source}); "
                "save it once to seal it, then hand it off"
            )
            raise TransferRefusedError(store.path, msg)
        generation = restored.generation
    for path in _candidates(store, generation):
        try:
            data, st = read_bytes(path, MAX_FILE_BYTES, follow_symlinks=False)
            handoff = decode(data, path, mtime=st.st_mtime)
        except HandoffError:
            continue
        if handoff.generation == generation and handoff.seal is not None:
            return data, handoff
    for entry, kept, document, _ in journal_saves(store, generation - 1):
        if entry.generation == generation and kept is not None and document is not None:
            return render(document, "json"), kept
    msg = f"generation {generation} is not kept in a form that verifies (history/ keeps the last {store.keep})"
    raise NoHandoffError(store.path, msg)


def _candidates(store: HandoffStore, generation: int) -> list[Path]:
    names = [f"{generation:08d}{suffix}" for suffix in (".json", ".yaml")]
    return [*(store.history_dir / name for name in names), store.primary]


def handoff_checkpoint(
    store: HandoffStore | str | os.PathLike[str],
    *,
    blobs: BlobStore,
    generation: int | None = None,
    to_agent: str | None = None,
    summary: str | None = None,
) -> Descriptor:
    """Export a sealed generation to *blobs* and return the descriptor another agent adopts it by.

    Copies no state to the receiver: the descriptor names the blob and its sha256. Records an
    "exported" line in the source thread's journal.

    :param generation: default: the newest verified generation.
    :param to_agent: the agent meant to adopt it, if known.
    :param summary: a line for the receiver; default: the narrative's first sentence and the next step.
    :raises HandoffError: if the generation cannot be read (see :func:`checkpoint_bytes`) or the
        blob store refuses (``BlobError``).
    """
    source = _store_of(store)
    if to_agent is not None:
        check_id(to_agent, "to_agent", source.path)
    data, handoff = checkpoint_bytes(source, generation)
    blob_id = _put(blobs, data)
    document = handoff.model_dump(mode="json")
    descriptor = Descriptor(
        descriptor_version=DESCRIPTOR_VERSION,
        source=f"{handoff.thread_id}:{handoff.generation}",
        agent_id=handoff.agent_id,
        thread_id=handoff.thread_id,
        generation=handoff.generation,
        checkpoint_id=str(handoff.seal),
        blob_id=blob_id,
        blob_sha256=sha256_hex(data),
        to_agent=to_agent,
        summary=(summary if summary is not None else summary_fields(document)["summary"])[:2000],
        created_at=now(),
    )
    source.record(
        "exported",
        generation=handoff.generation,
        seal=str(handoff.seal),
        summary=f"exported as blob {blob_id[:12]}…" + (f" for {to_agent}" if to_agent else ""),
        blob_id=blob_id,
        to_agent=to_agent,
    )
    return descriptor


def _put(blobs: BlobStore, data: bytes) -> str:
    try:
        return blobs.put(data)
    except HandoffError:
        raise
    except Exception as exc:  # a blob store of the caller's own: whatever it raises, say where
        msg = f"the blob store failed to store the checkpoint: {type(exc).__name__}: {exc}"
        raise BlobError(repr(blobs), msg) from exc


def _get(blobs: BlobStore, blob_id: str) -> bytes:
    try:
        data = blobs.get(blob_id)
    except HandoffError:
        raise
    except Exception as exc:  # never taken as empty: an unreadable store is an error
        msg = f"the blob store failed to return blob {blob_id}: {type(exc).__name__}: {exc}"
        raise BlobError(repr(blobs), msg) from exc
    if not isinstance(data, bytes | bytearray | memoryview):
        msg = f"the blob store returned {type(data).__name__}, not bytes, for blob {blob_id}"
        raise BlobError(repr(blobs), msg)
    return bytes(data)


def verify_checkpoint(descriptor: Descriptor | dict[str, Any] | str | bytes, *, blobs: BlobStore) -> Handoff:
    """Fetch the descriptor's blob and check it, writing nothing: what adoption checks before it writes.

    :returns: the verified handoff the blob holds.
    :raises DescriptorError, BlobNotFoundError, BlobError, BlobIntegrityError, HandoffError:
        as :func:`adopt_checkpoint` does.
    """
    wanted = parse_descriptor(descriptor)
    data = _get(blobs, wanted.blob_id)
    where = f"blob {wanted.blob_id}"
    actual = sha256_hex(data)
    if actual != wanted.blob_sha256:
        msg = f"sha256 is {actual}, but the descriptor says {wanted.blob_sha256}: refused, nothing written"
        raise BlobIntegrityError(where, msg)
    handoff = decode(data, where)
    named = (handoff.agent_id, handoff.thread_id, handoff.generation, str(handoff.seal))
    expected = (wanted.agent_id, wanted.thread_id, wanted.generation, wanted.checkpoint_id)
    if named != expected:
        msg = (
            f"holds {handoff.thread_id}:{handoff.generation} sealed {handoff.seal}, not the checkpoint the "
            f"descriptor names ({wanted.source}, {wanted.checkpoint_id}): refused, nothing written"
        )
        raise BlobIntegrityError(where, msg)
    return handoff


def adopt_checkpoint(
    descriptor: Descriptor | dict[str, Any] | str | bytes,
    new_thread_dir: str | os.PathLike[str],
    *,
    blobs: BlobStore,
    agent_id: str | None = None,
) -> AdoptResult:
    """Fetch the descriptor's blob, check its sha256 and seal, and only then write it as generation 1 of a new thread.

    The new generation records ``lineage.adopted_from`` (source agent, thread, generation, blob id
    and sha256). Nothing is written unless every check passes.

    :param descriptor: the :class:`Descriptor`, a dict, or its JSON text.
    :param new_thread_dir: an empty or missing directory; its name is the new thread's id.
    :param agent_id: the adopting agent (default: the directory name, as for any new thread).
    :raises DescriptorError: a malformed descriptor, one without a hash, or of an unknown version.
    :raises TransferRefusedError: the target already holds handoffs.
    :raises BlobNotFoundError, BlobError: the blob cannot be fetched (never taken as empty).
    :raises BlobIntegrityError: the blob's sha256 differs, or it is not the checkpoint named.
    :raises HandoffError: the blob is not a sealed handoff that verifies (as :func:`load` says).
    """
    wanted = parse_descriptor(descriptor)
    target = HandoffStore(new_thread_dir, agent_id=agent_id)
    held = target.holdings()
    if held:
        msg = f"already holds a thread ({', '.join(held)}); adopt into a new, empty directory"
        raise TransferRefusedError(target.path, msg)
    handoff = verify_checkpoint(wanted, blobs=blobs)
    receipt = target.adopt(
        handoff,
        {
            "agent_id": handoff.agent_id,
            "thread_id": handoff.thread_id,
            "generation": handoff.generation,
            "blob_id": wanted.blob_id,
            "blob_sha256": wanted.blob_sha256,
        },
    )
    # a new thread takes its id from its directory's name (the store refuses an invalid one)
    return AdoptResult(wanted.source, target.path.name, wanted.checkpoint_id, wanted.blob_id, True, receipt)


@dataclass(frozen=True, slots=True)
class TransferResult:
    """A finished transfer: the source is TRANSFERRED and points at *target*, which holds the adopted generation."""

    target: Path
    new_thread_id: str
    source_generation: int
    blob_sha256: str
    done: tuple[Phase, ...]  # the phases this call carried out (fewer when it resumed an interrupted one)


def transferred_to(store: HandoffStore | str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record a finished transfer left in the source thread (target, generation, blob), or None if it is live.

    :raises HandoffError: if the record exists but cannot be read.
    """
    source = _store_of(store)
    path = source.path / TRANSFERRED_NAME
    try:
        data, _ = read_bytes(path, 64 * 1024, follow_symlinks=False)
    except HandoffNotFoundError:
        return None
    try:
        record = json.loads(data)
    except ValueError as exc:
        msg = f"transfer record is not JSON: {exc}"
        raise HandoffError(path, msg) from exc
    if not isinstance(record, dict) or not isinstance(record.get("target"), str):
        msg = "transfer record has no target"
        raise HandoffError(path, msg)
    return record


def transfer(
    store: HandoffStore | str | os.PathLike[str],
    target_dir: str | os.PathLike[str],
    *,
    blobs: BlobStore,
    to_agent: str | None = None,
    summary: str | None = None,
    agent_id: str | None = None,
    on_phase: Callable[[Phase], None] | None = None,
) -> TransferResult:
    """Hand a whole thread to another agent: summarize, bootstrap, terminate — in that order.

    1. **summarized**: export the newest sealed generation to *blobs* (:func:`handoff_checkpoint`).
    2. **bootstrapped**: adopt it as generation 1 of *target_dir* (:func:`adopt_checkpoint`: hash
       and seal checked first).
    3. **terminated**: write ``transferred.json`` in the source (durably) and a "transferred"
       journal line; the source refuses saves from then on (``TransferRefusedError``).

    The source's writers' lock is held throughout, so no save can slip in after the export. A
    TRANSFERRED source always points at a target that exists. Killed between phases, calling
    ``transfer`` again with the same target finishes the job: an adoption of this source already
    in the target is recognised and the last phase completed.

    :param on_phase: called with each phase's name once it is done (progress; tests kill there).
    :raises TransferRefusedError: if the source was transferred elsewhere, or the target holds another thread.
    :raises HandoffError: as :func:`handoff_checkpoint` and :func:`adopt_checkpoint` do.
    """
    source = _store_of(store)
    target = Path(target_dir).absolute()
    done: list[Phase] = []
    source.init()
    with source._lock.held():
        record = transferred_to(source)
        if record is not None:
            if Path(record["target"]) != target:
                msg = f"was already transferred to {record['target']}; it is closed"
                raise TransferRefusedError(source.path, msg)
            return TransferResult(
                target, str(record["thread_id"]), int(record["generation"]), str(record["blob_sha256"]), ()
            )
        adopted = _adoption_of(source, target)
        if adopted is None:
            descriptor = handoff_checkpoint(source, blobs=blobs, to_agent=to_agent, summary=summary)
            done.append("summarized")
            _tell(on_phase, "summarized")
            result = adopt_checkpoint(descriptor, target, blobs=blobs, agent_id=agent_id)
            adopted = (result.new_thread_id, descriptor.generation, descriptor.blob_id, descriptor.blob_sha256)
            done.append("bootstrapped")
            _tell(on_phase, "bootstrapped")
        thread_id, generation, blob_id, blob_sha256 = adopted
        newest = source.restore()
        if newest.generation != generation:
            msg = (
                f"generation {newest.generation} is newer than generation {generation}, which {target} adopted; "
                "refusing to close the source on an older copy (adopt again into a new directory)"
            )
            raise TransferRefusedError(source.path, msg)
        at = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        record = {
            "target": str(target),
            "thread_id": thread_id,
            "generation": generation,
            "blob_id": blob_id,
            "blob_sha256": blob_sha256,
            "at": at,
        }
        # the marker first, then the journal line: the marker is what refuses further saves
        write_durable(source.path / TRANSFERRED_NAME, (json.dumps(record, indent=2) + "\n").encode())
        source.journal.append(
            "transferred",
            generation=generation,
            seal=str(newest.handoff.seal),
            summary=f"transferred to {target} (thread {thread_id}); this thread is closed",
            target=str(target),
        )
        done.append("terminated")
        _tell(on_phase, "terminated")
    return TransferResult(target, thread_id, generation, blob_sha256, tuple(done))


def _tell(on_phase: Callable[[Phase], None] | None, phase: Phase) -> None:
    if on_phase is not None:
        on_phase(phase)


def _adoption_of(source: HandoffStore, target: Path) -> tuple[str, int, str, str] | None:
    """If *target* already adopted the source's newest generation (an interrupted transfer), what it adopted."""
    store = HandoffStore(target)
    if not store.holdings():
        return None
    try:
        adopted = store.restore().handoff
    except HandoffError:
        return None  # let adopt_checkpoint refuse the occupied target with its own message
    lineage = adopted.lineage.adopted_from
    if lineage is None or (lineage.agent_id, lineage.thread_id) != _ids(source):
        return None
    return adopted.thread_id, lineage.generation, lineage.blob_id, lineage.blob_sha256


def _ids(source: HandoffStore) -> tuple[str, str]:
    handoff = source.restore().handoff
    return handoff.agent_id, handoff.thread_id
