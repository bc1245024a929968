"""handoff-files: sealed, versioned five-layer handoff files that let an agent survive restarts."""

from __future__ import annotations

from handoff_files.format.loader import load
from handoff_files.format.model import (
    SCHEMA_VERSION,
    Context,
    Decision,
    Handoff,
    HandoffContent,
    Lineage,
    Message,
    Priority,
    Seal,
    State,
    Warning,
)
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    BlobNotFoundError,
    CapabilityError,
    ChecksumMismatchError,
    DescriptorError,
    HandoffError,
    HandoffLockedError,
    HandoffMigrationError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffTooLargeError,
    HandoffValidationError,
    HandoffWriteError,
    InvalidNameError,
    InvalidTransitionError,
    NoHandoffError,
    SealError,
    TransferRefusedError,
    UnknownRequestError,
    UnsealedEditError,
    UnsupportedVersionError,
)
from handoff_files.thread.results import HistoryEntry, MigrationReport, Restored, SaveReceipt
from handoff_files.thread.store import Durability, HandoffStore
from handoff_files.transfer.blobs import BlobStore, LocalBlobStore
from handoff_files.transfer.checkpoint import (
    AdoptResult,
    TransferResult,
    adopt_checkpoint,
    handoff_checkpoint,
    transfer,
)
from handoff_files.transfer.descriptor import Descriptor
from handoff_files.transfer.trim import trim_context

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "AdoptResult",
    "BlobError",
    "BlobIntegrityError",
    "BlobNotFoundError",
    "BlobStore",
    "CapabilityError",
    "ChecksumMismatchError",
    "Context",
    "Decision",
    "Descriptor",
    "DescriptorError",
    "Durability",
    "Handoff",
    "HandoffContent",
    "HandoffError",
    "HandoffLockedError",
    "HandoffMigrationError",
    "HandoffNotFoundError",
    "HandoffParseError",
    "HandoffStore",
    "HandoffTooLargeError",
    "HandoffValidationError",
    "HandoffWriteError",
    "HistoryEntry",
    "InvalidNameError",
    "InvalidTransitionError",
    "Lineage",
    "LocalBlobStore",
    "Message",
    "MigrationReport",
    "NoHandoffError",
    "Priority",
    "Restored",
    "SaveReceipt",
    "Seal",
    "SealError",
    "State",
    "TransferRefusedError",
    "TransferResult",
    "UnknownRequestError",
    "UnsealedEditError",
    "UnsupportedVersionError",
    "Warning",
    "__version__",
    "adopt_checkpoint",
    "handoff_checkpoint",
    "load",
    "transfer",
    "trim_context",
]
