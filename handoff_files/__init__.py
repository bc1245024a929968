"""handoff-files: sealed, versioned five-layer handoff files that let an agent survive restarts."""

from __future__ import annotations

import importlib

from handoff_files.foundation.version import __version__

# not typing's: `import handoff_files` (and `handoff --version`) import no typing, re or collections;
# type checkers treat any name TYPE_CHECKING as true
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

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
        AckKeyError,
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
        ObjectChangedError,
        ObjectExistsError,
        RollbackError,
        SealError,
        SignatureError,
        SigningKeyError,
        StorageConflictError,
        StorageUnavailableError,
        ThreadKindError,
        TransferRefusedError,
        UncertainWriteError,
        UnknownRequestError,
        UnsealedEditError,
        UnsupportedVersionError,
        UntrustedSignerError,
        WrongCodeError,
    )
    from handoff_files.inbox.capabilities import AgentRegistry
    from handoff_files.inbox.fallback import request_handoff_with_fallback
    from handoff_files.inbox.lifecycle import HandoffInbox
    from handoff_files.inbox.request import InboxRequest
    from handoff_files.inbox.serve import serve
    from handoff_files.inbox.status import HandoffStatus
    from handoff_files.langgraph.saver import HandoffSaver
    from handoff_files.run.killrun import Killer
    from handoff_files.run.supervise import RunResult, supervise
    from handoff_files.signing.keys import SigningKey, create_key, load_signing_key
    from handoff_files.storage import BucketStorage, LocalStorage, Storage, Stored, open_storage
    from handoff_files.thread.layout import ThreadDir
    from handoff_files.thread.objects import ObjectReceipt, ObjectRestored, ObjectThread
    from handoff_files.thread.results import Acknowledgement, HistoryEntry, MigrationReport, Restored, SaveReceipt
    from handoff_files.thread.retention import prune_history
    from handoff_files.thread.signatures import SignatureReport
    from handoff_files.thread.store import Durability, HandoffStore
    from handoff_files.thread.validate import Validation, validate
    from handoff_files.thread.verify import ThreadCheck, verify_thread
    from handoff_files.transfers.adopt import AdoptResult, adopt_checkpoint, verify_checkpoint
    from handoff_files.transfers.blobs import BlobStore, open_blobs
    from handoff_files.transfers.descriptor import Descriptor, parse_descriptor
    from handoff_files.transfers.export import handoff_checkpoint
    from handoff_files.transfers.handover import TransferResult, transfer
    from handoff_files.transfers.local_blobs import LocalBlobStore
    from handoff_files.transfers.remote import FsspecBlobStore
    from handoff_files.transfers.trim import trim_context
    from handoff_files.uptake.briefing import Briefing, brief, briefing_for
    from handoff_files.watchers.directory import DirectoryWatch, watch_directory
    from handoff_files.watchers.watcher import Watcher, watch

# every public name, and the module that defines it: imported on first use, so `import handoff_files`
# costs almost nothing and an agent's restart never pays for watchdog, ruamel.yaml, fsspec, LangGraph
# or the inbox
_EXPORTS: Final[dict[str, str]] = {
    "AckKeyError": "handoff_files.foundation.errors",
    "BlobError": "handoff_files.foundation.errors",
    "BlobIntegrityError": "handoff_files.foundation.errors",
    "BlobNotFoundError": "handoff_files.foundation.errors",
    "CapabilityError": "handoff_files.foundation.errors",
    "ChecksumMismatchError": "handoff_files.foundation.errors",
    "DescriptorError": "handoff_files.foundation.errors",
    "HandoffError": "handoff_files.foundation.errors",
    "HandoffLockedError": "handoff_files.foundation.errors",
    "HandoffMigrationError": "handoff_files.foundation.errors",
    "HandoffNotFoundError": "handoff_files.foundation.errors",
    "HandoffParseError": "handoff_files.foundation.errors",
    "HandoffTooLargeError": "handoff_files.foundation.errors",
    "HandoffValidationError": "handoff_files.foundation.errors",
    "HandoffWriteError": "handoff_files.foundation.errors",
    "InvalidNameError": "handoff_files.foundation.errors",
    "InvalidTransitionError": "handoff_files.foundation.errors",
    "NoHandoffError": "handoff_files.foundation.errors",
    "SealError": "handoff_files.foundation.errors",
    "SignatureError": "handoff_files.foundation.errors",
    "SigningKeyError": "handoff_files.foundation.errors",
    "ThreadKindError": "handoff_files.foundation.errors",
    "TransferRefusedError": "handoff_files.foundation.errors",
    "UncertainWriteError": "handoff_files.foundation.errors",
    "UnknownRequestError": "handoff_files.foundation.errors",
    "UnsealedEditError": "handoff_files.foundation.errors",
    "UnsupportedVersionError": "handoff_files.foundation.errors",
    "RollbackError": "handoff_files.foundation.errors",
    "StorageConflictError": "handoff_files.foundation.errors",
    "StorageUnavailableError": "handoff_files.foundation.errors",
    "ObjectExistsError": "handoff_files.foundation.errors",
    "ObjectChangedError": "handoff_files.foundation.errors",
    "Storage": "handoff_files.storage",
    "Stored": "handoff_files.storage",
    "LocalStorage": "handoff_files.storage",
    "BucketStorage": "handoff_files.storage",
    "open_storage": "handoff_files.storage",
    "ObjectThread": "handoff_files.thread.objects",
    "ObjectReceipt": "handoff_files.thread.objects",
    "ObjectRestored": "handoff_files.thread.objects",
    "UntrustedSignerError": "handoff_files.foundation.errors",
    "WrongCodeError": "handoff_files.foundation.errors",
    "Context": "handoff_files.format.model",
    "Decision": "handoff_files.format.model",
    "Handoff": "handoff_files.format.model",
    "HandoffContent": "handoff_files.format.model",
    "Lineage": "handoff_files.format.model",
    "Message": "handoff_files.format.model",
    "Priority": "handoff_files.format.model",
    "SCHEMA_VERSION": "handoff_files.format.model",
    "Seal": "handoff_files.format.model",
    "State": "handoff_files.format.model",
    "Warning": "handoff_files.format.model",
    "load": "handoff_files.format.loader",
    "prune_history": "handoff_files.thread.retention",
    "SigningKey": "handoff_files.signing.keys",
    "create_key": "handoff_files.signing.keys",
    "load_signing_key": "handoff_files.signing.keys",
    "SignatureReport": "handoff_files.thread.signatures",
    "Acknowledgement": "handoff_files.thread.results",
    "HistoryEntry": "handoff_files.thread.results",
    "MigrationReport": "handoff_files.thread.results",
    "Restored": "handoff_files.thread.results",
    "SaveReceipt": "handoff_files.thread.results",
    "Durability": "handoff_files.thread.store",
    "HandoffStore": "handoff_files.thread.store",
    "ThreadDir": "handoff_files.thread.layout",
    "Validation": "handoff_files.thread.validate",
    "validate": "handoff_files.thread.validate",
    "ThreadCheck": "handoff_files.thread.verify",
    "verify_thread": "handoff_files.thread.verify",
    "Briefing": "handoff_files.uptake.briefing",
    "brief": "handoff_files.uptake.briefing",
    "briefing_for": "handoff_files.uptake.briefing",
    "Watcher": "handoff_files.watchers.watcher",
    "watch": "handoff_files.watchers.watcher",
    "DirectoryWatch": "handoff_files.watchers.directory",
    "watch_directory": "handoff_files.watchers.directory",
    "BlobStore": "handoff_files.transfers.blobs",
    "open_blobs": "handoff_files.transfers.blobs",
    "LocalBlobStore": "handoff_files.transfers.local_blobs",
    "FsspecBlobStore": "handoff_files.transfers.remote",
    "Descriptor": "handoff_files.transfers.descriptor",
    "parse_descriptor": "handoff_files.transfers.descriptor",
    "handoff_checkpoint": "handoff_files.transfers.export",
    "AdoptResult": "handoff_files.transfers.adopt",
    "adopt_checkpoint": "handoff_files.transfers.adopt",
    "verify_checkpoint": "handoff_files.transfers.adopt",
    "TransferResult": "handoff_files.transfers.handover",
    "transfer": "handoff_files.transfers.handover",
    "trim_context": "handoff_files.transfers.trim",
    "HandoffSaver": "handoff_files.langgraph",
    "HandoffStatus": "handoff_files.inbox.status",
    "InboxRequest": "handoff_files.inbox.request",
    "HandoffInbox": "handoff_files.inbox.lifecycle",
    "AgentRegistry": "handoff_files.inbox.capabilities",
    "serve": "handoff_files.inbox.serve",
    "request_handoff_with_fallback": "handoff_files.inbox.fallback",
    "RunResult": "handoff_files.run.supervise",
    "supervise": "handoff_files.run.supervise",
    "Killer": "handoff_files.run.killrun",
}

__all__ = [
    "SCHEMA_VERSION",
    "AckKeyError",
    "Acknowledgement",
    "AdoptResult",
    "AgentRegistry",
    "BlobError",
    "BlobIntegrityError",
    "BlobNotFoundError",
    "BlobStore",
    "Briefing",
    "BucketStorage",
    "CapabilityError",
    "ChecksumMismatchError",
    "Context",
    "Decision",
    "Descriptor",
    "DescriptorError",
    "DirectoryWatch",
    "Durability",
    "FsspecBlobStore",
    "Handoff",
    "HandoffContent",
    "HandoffError",
    "HandoffInbox",
    "HandoffLockedError",
    "HandoffMigrationError",
    "HandoffNotFoundError",
    "HandoffParseError",
    "HandoffSaver",
    "HandoffStatus",
    "HandoffStore",
    "HandoffTooLargeError",
    "HandoffValidationError",
    "HandoffWriteError",
    "HistoryEntry",
    "InboxRequest",
    "InvalidNameError",
    "InvalidTransitionError",
    "Killer",
    "Lineage",
    "LocalBlobStore",
    "LocalStorage",
    "Message",
    "MigrationReport",
    "NoHandoffError",
    "ObjectChangedError",
    "ObjectExistsError",
    "ObjectReceipt",
    "ObjectRestored",
    "ObjectThread",
    "Priority",
    "Restored",
    "RollbackError",
    "RunResult",
    "SaveReceipt",
    "Seal",
    "SealError",
    "SignatureError",
    "SignatureReport",
    "SigningKey",
    "SigningKeyError",
    "State",
    "Storage",
    "StorageConflictError",
    "StorageUnavailableError",
    "Stored",
    "ThreadCheck",
    "ThreadDir",
    "ThreadKindError",
    "TransferRefusedError",
    "TransferResult",
    "UncertainWriteError",
    "UnknownRequestError",
    "UnsealedEditError",
    "UnsupportedVersionError",
    "UntrustedSignerError",
    "Validation",
    "Warning",
    "Watcher",
    "WrongCodeError",
    "__version__",
    "adopt_checkpoint",
    "brief",
    "briefing_for",
    "create_key",
    "handoff_checkpoint",
    "load",
    "load_signing_key",
    "open_blobs",
    "open_storage",
    "parse_descriptor",
    "prune_history",
    "request_handoff_with_fallback",
    "serve",
    "supervise",
    "transfer",
    "trim_context",
    "validate",
    "verify_checkpoint",
    "verify_thread",
    "watch",
    "watch_directory",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
