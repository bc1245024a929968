"""Handover: a whole thread handed to another agent (summarize, bootstrap, terminate), resumable if interrupted."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from handoff_files.format.codec import parse_json
from handoff_files.foundation.atomic import read_bytes, write_durable
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffParseError, TransferRefusedError
from handoff_files.thread.store import HandoffStore
from handoff_files.transfers.adopt import adopt_checkpoint
from handoff_files.transfers.blobs import BlobStore
from handoff_files.transfers.export import handoff_checkpoint, store_of

__all__ = ["PHASES", "Phase", "TransferResult", "transfer", "transferred_to"]

Phase = Literal["summarized", "bootstrapped", "terminated"]
#: A transfer's phases, in order; ``on_phase`` hears each name once it is durable.
PHASES: Final[tuple[Phase, ...]] = ("summarized", "bootstrapped", "terminated")
#: ``transferred.json`` is a few lines: past this it is refused unread.
_MAX_RECORD_BYTES: Final = 64 * 1024

#: What a target adopted: (thread id, generation, blob id, blob sha256).
_Adopted = tuple[str, int, str, str]


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

    :raises HandoffParseError: if the record exists but is not strict JSON.
    :raises HandoffError: if it cannot be read, or names no target.
    """
    path = store_of(store).layout.transferred
    try:
        data, _ = read_bytes(path, _MAX_RECORD_BYTES, follow_symlinks=False)
    except HandoffNotFoundError:
        return None
    try:
        record = parse_json(data, path, limit=_MAX_RECORD_BYTES)
    except HandoffParseError as exc:
        msg = f"transfer record is not JSON: {exc.reason}"
        raise HandoffParseError(path, msg) from exc
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

    1. **summarized**: export the newest sealed generation to *blobs*
       (:func:`~handoff_files.transfers.export.handoff_checkpoint`).
    2. **bootstrapped**: adopt it as generation 1 of *target_dir*
       (:func:`~handoff_files.transfers.adopt.adopt_checkpoint`: hash and seal checked first).
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
    source = store_of(store)
    target = Path(target_dir).absolute()
    done: list[Phase] = []
    source.init()
    with source.locked():
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
            _done(done, "summarized", on_phase)
            result = adopt_checkpoint(descriptor, target, blobs=blobs, agent_id=agent_id)
            adopted = (result.new_thread_id, descriptor.generation, descriptor.blob_id, descriptor.blob_sha256)
            _done(done, "bootstrapped", on_phase)
        _terminate(source, target, adopted)
        _done(done, "terminated", on_phase)
    thread_id, generation, _, blob_sha256 = adopted
    return TransferResult(target, thread_id, generation, blob_sha256, tuple(done))


def _terminate(source: HandoffStore, target: Path, adopted: _Adopted) -> None:
    """The last phase, under the source's lock: close the source on the generation *target* adopted."""
    thread_id, generation, blob_id, blob_sha256 = adopted
    newest = source.restore()
    if newest.generation != generation:
        msg = (
            f"generation {newest.generation} is newer than generation {generation}, which {target} adopted; "
            "refusing to close the source on an older copy (adopt again into a new directory)"
        )
        raise TransferRefusedError(source.path, msg)
    record = {
        "target": str(target),
        "thread_id": thread_id,
        "generation": generation,
        "blob_id": blob_id,
        "blob_sha256": blob_sha256,
        "at": iso_z(),
    }
    # the marker first, then the journal line: the marker is what refuses further saves
    write_durable(source.layout.transferred, (json.dumps(record, indent=2) + "\n").encode())
    source.journal.append(
        "transferred",
        generation=generation,
        seal=str(newest.handoff.seal),
        summary=f"transferred to {target} (thread {thread_id}); this thread is closed",
        target=str(target),
    )


def _done(done: list[Phase], phase: Phase, on_phase: Callable[[Phase], None] | None) -> None:
    done.append(phase)
    if on_phase is not None:
        on_phase(phase)


def _adoption_of(source: HandoffStore, target: Path) -> _Adopted | None:
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
