"""Export: a sealed generation's exact bytes put in a blob store, and the descriptor another agent adopts it by."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from handoff_files.format.codec import MAX_FILE_BYTES, render
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.clock import utc_now
from handoff_files.foundation.errors import BlobError, HandoffError, NoHandoffError, TransferRefusedError
from handoff_files.foundation.names import check_id
from handoff_files.thread.layout import EXTENSIONS
from handoff_files.thread.recovery import journal_saves, summary_fields
from handoff_files.thread.signatures import KeySource
from handoff_files.thread.store import HandoffStore
from handoff_files.transfers.blob_layout import sha256_hex
from handoff_files.transfers.blobs import BlobStore
from handoff_files.transfers.descriptor import DESCRIPTOR_VERSION, UNSIGNED_VERSION, Descriptor

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

__all__ = ["checkpoint_bytes", "handoff_checkpoint"]


def store_of(store: HandoffStore | str | os.PathLike[str]) -> HandoffStore:
    """*store* itself, or a :class:`HandoffStore` on that thread directory."""
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
    layout = store.layout
    return [*(layout.generation_file(generation, fmt) for fmt in EXTENSIONS), store.primary]


def handoff_checkpoint(
    store: HandoffStore | str | os.PathLike[str],
    *,
    blobs: BlobStore,
    generation: int | None = None,
    to_agent: str | None = None,
    summary: str | None = None,
    signing_key: KeyChoice = None,
) -> Descriptor:
    """Export a sealed generation to *blobs* and return the descriptor another agent adopts it by.

    Copies no state to the receiver: the descriptor names the blob and its sha256. Records an
    "exported" line in the source thread's journal.

    :param generation: default: the newest verified generation.
    :param to_agent: the agent meant to adopt it, if known.
    :param summary: a line for the receiver; default: the narrative's first sentence and the next step.
    :param signing_key: signs the descriptor (version 1.1), as :class:`HandoffStore` takes a key
        (None: the configured one, if any; False: none, a 1.0 descriptor).
    :raises SigningKeyError: if the key cannot be used.
    :raises HandoffError: if the generation cannot be read (see :func:`checkpoint_bytes`) or the
        blob store refuses (``BlobError``).
    """
    source = store_of(store)
    key = KeySource(signing_key, source.path).key()
    if to_agent is not None:
        check_id(to_agent, "to_agent", source.path)
    data, handoff = checkpoint_bytes(source, generation)
    blob_id = _put(blobs, data)
    document = handoff.model_dump(mode="json")
    descriptor = Descriptor(
        descriptor_version=UNSIGNED_VERSION if key is None else DESCRIPTOR_VERSION,
        source=f"{handoff.thread_id}:{handoff.generation}",
        agent_id=handoff.agent_id,
        thread_id=handoff.thread_id,
        generation=handoff.generation,
        checkpoint_id=str(handoff.seal),
        blob_id=blob_id,
        blob_sha256=sha256_hex(data),
        to_agent=to_agent,
        summary=(summary if summary is not None else summary_fields(document)["summary"])[:2000],
        created_at=utc_now(),
    )
    if key is not None:
        descriptor = descriptor.model_copy(update={"signature": key.sign(descriptor.signed_text().encode())})
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
