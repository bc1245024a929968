"""Adoption: a descriptor's blob fetched, its sha256 and seal checked, and only then written as a new thread."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    HandoffError,
    TransferRefusedError,
    UntrustedSignerError,
)
from handoff_files.thread.results import SaveReceipt
from handoff_files.thread.signatures import SignatureReport, SignerCheck, signer_report, verified
from handoff_files.thread.store import HandoffStore
from handoff_files.transfers.blob_layout import sha256_hex
from handoff_files.transfers.blobs import BlobStore
from handoff_files.transfers.descriptor import DESCRIPTOR_WHERE, Descriptor, parse_descriptor

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

__all__ = ["AdoptResult", "adopt_checkpoint", "descriptor_signer", "verify_checkpoint"]


@dataclass(frozen=True, slots=True)
class AdoptResult:
    """What :func:`adopt_checkpoint` did: which checkpoint, verified, became which new thread."""

    adopted_from: str  # the descriptor's source, "thread:generation"
    new_thread_id: str
    checkpoint_id: str  # the adopted generation's seal
    blob_id: str
    verified: bool  # the blob's sha256 and the handoff's seal (and signature, if any) checked: always True
    receipt: SaveReceipt  # generation 1 of the new thread
    #: who signed the adopted generation, as this user's allowed_signers sees it; None: unsigned
    signature: SignatureReport | None = None
    #: who signed the descriptor (1.1), verified; None: unsigned
    descriptor_signature: SignatureReport | None = None
    #: the agent the descriptor was addressed to (its ``to_agent``); None: it named none
    to_agent: str | None = None


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


def verify_checkpoint(
    descriptor: Descriptor | dict[str, Any] | str | bytes,
    *,
    blobs: BlobStore,
    require_signed: bool = False,
    allowed_signers: str | os.PathLike[str] | None = None,
    where: str | os.PathLike[str] = DESCRIPTOR_WHERE,
) -> Handoff:
    """Fetch the descriptor's blob and check it, writing nothing: what adoption checks before it writes.

    :param where: the file the descriptor was read from, which its errors name.
    :returns: the verified handoff the blob holds.
    :raises DescriptorError, BlobNotFoundError, BlobError, BlobIntegrityError, SignatureError,
        UntrustedSignerError, HandoffError: as :func:`adopt_checkpoint` does.
    """
    wanted = parse_descriptor(descriptor, where=where)
    data = _get(blobs, wanted.blob_id)
    blob = f"blob {wanted.blob_id}"
    actual = sha256_hex(data)
    if actual != wanted.blob_sha256:
        msg = f"sha256 is {actual}, but the descriptor says {wanted.blob_sha256}: refused, nothing written"
        raise BlobIntegrityError(blob, msg)
    handoff = decode(data, blob)
    named = (handoff.agent_id, handoff.thread_id, handoff.generation, str(handoff.seal))
    expected = (wanted.agent_id, wanted.thread_id, wanted.generation, wanted.checkpoint_id)
    if named != expected:
        msg = (
            f"holds {handoff.thread_id}:{handoff.generation} sealed {handoff.seal}, not the checkpoint the "
            f"descriptor names ({wanted.source}, {wanted.checkpoint_id}): refused, nothing written"
        )
        raise BlobIntegrityError(blob, msg)
    verified(handoff, blob)  # a signature that does not verify over the seal is damage
    if require_signed:
        report = signer_report(handoff, blob, allowed_signers=_path(allowed_signers))
        if report is None or not report.trusted:
            why = "unsigned" if report is None else report.distrust
            msg = f"{wanted.source} is not signed by a trusted key ({why}); signed checkpoints are required: refused"
            raise UntrustedSignerError(blob, msg + ", nothing written")
        sender = descriptor_signer(wanted, allowed_signers=allowed_signers, where=where)
        if sender is None or not sender.trusted:
            why = "unsigned" if sender is None else sender.distrust
            msg = f"the descriptor of {wanted.source} is not signed by a trusted key ({why}); signed descriptors are "
            raise UntrustedSignerError(where, msg + "required: refused, nothing written")
    return handoff


def descriptor_signer(
    descriptor: Descriptor,
    *,
    allowed_signers: str | os.PathLike[str] | None = None,
    where: str | os.PathLike[str] = DESCRIPTOR_WHERE,
) -> SignatureReport | None:
    """Who signed *descriptor* (its signature verified when it was parsed), at its ``created_at``; None if unsigned.

    :param where: the file the descriptor was read from, which an error names.
    """
    if descriptor.signature is None:
        return None
    return SignerCheck(_path(allowed_signers)).signer(descriptor.signature, descriptor.created_at, where)


def _path(name: str | os.PathLike[str] | None) -> Path | None:
    return None if name is None else Path(name)


def adopt_checkpoint(
    descriptor: Descriptor | dict[str, Any] | str | bytes,
    new_thread_dir: str | os.PathLike[str],
    *,
    blobs: BlobStore,
    agent_id: str | None = None,
    signing_key: KeyChoice = None,
    require_signed: bool = False,
    allowed_signers: str | os.PathLike[str] | None = None,
    where: str | os.PathLike[str] = DESCRIPTOR_WHERE,
) -> AdoptResult:
    """Fetch the descriptor's blob, check its sha256 and seal, and only then write it as generation 1 of a new thread.

    The new generation records ``lineage.adopted_from`` (source agent, thread, generation, blob id
    and sha256). Nothing is written unless every check passes.

    :param descriptor: the :class:`Descriptor`, a dict, or its JSON text.
    :param new_thread_dir: an empty or missing directory; its name is the new thread's id.
    :param agent_id: the adopting agent (default: the directory name, as for any new thread).
    :param signing_key: the key that signs the new generation, as :class:`HandoffStore` takes it.
    :param require_signed: refuse a checkpoint, or a descriptor, not signed by a key *allowed_signers*
        (default: the user's) trusts. Without it, who signed is checked all the same and reported.
    :param where: the file the descriptor was read from, which its errors name (default: none, ``<descriptor>``).
    :raises DescriptorError: a malformed descriptor, one without a hash, or of an unknown version.
    :raises TransferRefusedError: the target already holds handoffs.
    :raises BlobNotFoundError, BlobError: the blob cannot be fetched (never taken as empty).
    :raises BlobIntegrityError: the blob's sha256 differs, or it is not the checkpoint named.
    :raises SignatureError: the generation's signature does not verify over its seal (damaged or forged).
    :raises UntrustedSignerError: with *require_signed*, it is unsigned or its signer is not trusted.
    :raises HandoffError: the blob is not a sealed handoff that verifies (as :func:`load` says).
    """
    wanted = parse_descriptor(descriptor, where=where)
    target = HandoffStore(new_thread_dir, agent_id=agent_id, signing_key=signing_key)
    held = target.holdings()
    if held:
        msg = f"already holds a thread ({', '.join(held)}); adopt into a new, empty directory"
        raise TransferRefusedError(target.path, msg)
    handoff = verify_checkpoint(
        wanted, blobs=blobs, require_signed=require_signed, allowed_signers=allowed_signers, where=where
    )
    report = signer_report(handoff, f"blob {wanted.blob_id}", allowed_signers=_path(allowed_signers))
    sender = descriptor_signer(wanted, allowed_signers=allowed_signers, where=where)
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
    return AdoptResult(
        wanted.source,
        target.path.name,
        wanted.checkpoint_id,
        wanted.blob_id,
        True,
        receipt,
        report,
        sender,
        wanted.to_agent,
    )
