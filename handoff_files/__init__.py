"""handoff-files: sealed, versioned five-layer handoff files that let an agent survive restarts."""

from __future__ import annotations

from handoff_files.errors import (
    ChecksumMismatchError,
    HandoffError,
    HandoffLockedError,
    HandoffMigrationError,
    HandoffNotFoundError,
    HandoffParseError,
    HandoffTooLargeError,
    HandoffValidationError,
    HandoffWriteError,
    InvalidNameError,
    NoHandoffError,
    SealError,
    UnsealedEditError,
    UnsupportedVersionError,
)
from handoff_files.loader import load
from handoff_files.model import (
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
from handoff_files.results import HistoryEntry, MigrationReport, Restored, SaveReceipt
from handoff_files.store import Durability, HandoffStore

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "ChecksumMismatchError",
    "Context",
    "Decision",
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
    "Lineage",
    "Message",
    "MigrationReport",
    "NoHandoffError",
    "Priority",
    "Restored",
    "SaveReceipt",
    "Seal",
    "SealError",
    "State",
    "UnsealedEditError",
    "UnsupportedVersionError",
    "Warning",
    "__version__",
    "load",
]
