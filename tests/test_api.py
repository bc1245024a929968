"""The public API: what handoff_files exports, and the shape of its errors."""

from __future__ import annotations

import pickle

import pytest

import handoff_files
from handoff_files import HandoffError

EXPECTED_ALL = [
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


def test_all_is_the_documented_snapshot_and_sorted() -> None:
    assert handoff_files.__all__ == EXPECTED_ALL
    for name in handoff_files.__all__:
        assert hasattr(handoff_files, name), name


@pytest.mark.parametrize(
    "cls",
    [getattr(handoff_files, n) for n in handoff_files.__all__ if n.endswith("Error")],
    ids=lambda c: c.__name__,
)
def test_every_error_is_a_handoff_error_that_names_its_path_and_pickles(cls: type[HandoffError]) -> None:
    assert issubclass(cls, HandoffError)
    error = cls("/some/thread/handoff.json", "what went wrong")
    assert str(error) == "/some/thread/handoff.json: what went wrong"
    clone = pickle.loads(pickle.dumps(error))
    assert (type(clone), clone.path, clone.reason) == (cls, error.path, error.reason)


def test_importing_the_package_does_not_import_watchdog_ruamel_or_fsspec() -> None:
    import subprocess
    import sys

    code = (
        "import sys, handoff_files; h = handoff_files.HandoffStore; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('watchdog', 'ruamel', 'fsspec', 's3fs')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
