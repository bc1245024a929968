"""Errors: one root, ``HandoffError(path, reason)``, and a subclass for each thing callers handle differently."""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from handoff_files.format.model import Handoff

__all__ = [
    "AckKeyError",
    "BlobError",
    "BlobIntegrityError",
    "BlobNotFoundError",
    "CapabilityError",
    "ChecksumMismatchError",
    "DescriptorError",
    "HandoffError",
    "HandoffLockedError",
    "HandoffMigrationError",
    "HandoffNotFoundError",
    "HandoffParseError",
    "HandoffTooLargeError",
    "HandoffValidationError",
    "HandoffWriteError",
    "InvalidNameError",
    "InvalidTransitionError",
    "NoHandoffError",
    "ObjectChangedError",
    "ObjectExistsError",
    "RollbackError",
    "SealError",
    "SignatureError",
    "SigningKeyError",
    "StorageConflictError",
    "StorageUnavailableError",
    "ThreadKindError",
    "TransferRefusedError",
    "UncertainWriteError",
    "UnknownRequestError",
    "UnsealedEditError",
    "UnsupportedVersionError",
    "UntrustedSignerError",
    "WrongCodeError",
]


class HandoffError(Exception):
    """Root of every error the library raises; ``str()`` reads ``path: reason``.

    :param path: the file or directory the error is about.
    :param reason: what was expected, what was found, and what to do.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        # pass the arguments on so the error pickles and reprs with its context
        super().__init__(os.fspath(path), reason)
        self.path = os.fspath(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self) -> tuple[type[HandoffError], tuple[object, ...]]:
        # rebuild from our own arguments (OSError's default reduce would pass errno and filename)
        return (type(self), self.args)


class HandoffNotFoundError(HandoffError, FileNotFoundError):
    """The file or thread directory does not exist (also a ``FileNotFoundError``, errno ``ENOENT``)."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(path, reason)
        # OSError took (path, reason) as (errno, strerror): set the fields callers of OSError read
        self.errno = errno.ENOENT
        self.strerror = reason
        self.filename = os.fspath(path)


class NoHandoffError(HandoffError):
    """The thread exists but holds no handoff that could be restored."""


class HandoffParseError(HandoffError):
    """The bytes are not strict JSON or safe YAML (syntax, duplicate keys, NaN, tags, depth, UTF-8)."""


class HandoffTooLargeError(HandoffParseError):
    """The file is larger than the loader's size limit."""


class HandoffValidationError(HandoffError):
    """The document parsed but does not match the schema."""


class InvalidNameError(HandoffValidationError):
    """An agent or thread id breaks the naming rule, or a path escapes its root."""


class SealError(HandoffError):
    """The content does not match its seal (base of the two cases below)."""


class ChecksumMismatchError(SealError):
    """The seal does not match the content and nothing rewrote the file: it is corrupt."""


class UnsealedEditError(SealError):
    """A valid document whose seal no longer matches and that was rewritten after sealing: a human edit.

    :ivar handoff: the parsed, validated (but unsealed) handoff, so a caller may choose to accept it.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str, handoff: Handoff | None = None) -> None:
        super().__init__(path, reason)
        self.args = (os.fspath(path), reason, handoff)
        self.handoff = handoff


class ThreadKindError(HandoffError):
    """A write refused: the thread is a LangGraph checkpointer's, and this writer is not its saver."""


class UnsupportedVersionError(HandoffError):
    """The document's ``schema_version`` is missing, of the wrong type, or not one this library reads."""


class HandoffMigrationError(HandoffError):
    """An older document could not be migrated to the current version."""


class HandoffLockedError(HandoffError):
    """Another writer held the thread's lock for longer than the timeout."""


class HandoffWriteError(HandoffError):
    """A write failed (disk full, I/O error, read-only file system); nothing already saved was changed."""


class UncertainWriteError(HandoffWriteError):
    """A write reached its place but its flush failed: readers see it, a crash may lose it.

    Raised for a save's commit point: the generation may be restorable now and gone after a power
    loss. Restore, and save again only if the generation is not there.
    """


class DescriptorError(HandoffError):
    """A handoff descriptor is malformed, has no hash, or is of a version this library does not read."""


class BlobError(HandoffError):
    """A blob store could not be read or written (never taken as empty)."""


class BlobNotFoundError(BlobError):
    """The blob store holds no blob with that id."""


class BlobIntegrityError(SealError):
    """A fetched blob's sha256 differs from the descriptor's, or it is not the checkpoint it names."""


class TransferRefusedError(HandoffError):
    """A handoff cannot be adopted or transferred here: the target thread already has handoffs, or the source ended."""


class InvalidTransitionError(HandoffError, ValueError):
    """A handoff request cannot move to that status from the one it is in (the message names it).

    A ``ValueError`` too, as SW4RM's client raises, so code written for it keeps working.
    """


class UnknownRequestError(HandoffError, ValueError):
    """No handoff request has that id (a ``ValueError`` too, as in SW4RM)."""


class CapabilityError(HandoffError):
    """The agent registry cannot be read, or names an agent or capability wrongly."""


class WrongCodeError(HandoffError):
    """An acknowledgement code that is not the current generation's briefing's (journaled as such)."""


class AckKeyError(HandoffError):
    """The acknowledgement key cannot be made or read, or is not a key the user alone can read."""


class SigningKeyError(HandoffError):
    """A signing key file cannot be used: missing, not Ed25519, passphrase-protected, malformed, or open to others."""


class SignatureError(HandoffError):
    """A signature is malformed, is for another namespace, or does not verify over what it signs."""


class UntrustedSignerError(SignatureError):
    """A signature verifies, but its key is not trusted for it: not in ``allowed_signers`` (for that
    namespace, at that time), or revoked."""


class RollbackError(HandoffError):
    """The thread is older than what this user saved or restored in it (newer generations removed, or one
    replaced): a rollback, refused unless accepted (``accept_rollback=True``, ``handoff trust --reset``)."""


class StorageConflictError(HandoffError):
    """A conditional write lost: another writer created or changed the object first (the path names it)."""


class ObjectExistsError(StorageConflictError):
    """A create-if-absent found the object already there (S3's 412 to ``If-None-Match: *``)."""


class StorageUnavailableError(HandoffError):
    """A request to the object store failed (unreachable, a server error, refused credentials): nothing is
    known about the object then, so a reader never takes it for damage nor for "nothing saved"."""


class ObjectChangedError(StorageConflictError):
    """A replace-if-unchanged found another version than the one named (S3's 412 to ``If-Match``), or none."""
