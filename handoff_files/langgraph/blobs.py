"""Large channel values and writes, each in a file of its own: ``blobs/<BLAKE3 of its bytes>.json``.

A checkpoint's file stays small and readable whatever its state weighs: a stored value (see
:mod:`~handoff_files.langgraph.values`) whose compact JSON is over :data:`BLOB_THRESHOLD` is written
once, as one line of compact JSON named by its digest, and the checkpoint (or write) holds
``{"blob": "<digest>", "bytes": N}`` in its place, under the checkpoint's seal. An unchanged value is
written once for every checkpoint that holds it, as a database stores a channel's blob per version.

A blob is written durably before the checkpoint that names it, under the writers' lock; it is read
only through a verified checkpoint that names it, bounded by :data:`MAX_BLOB_BYTES`, and only if its
bytes hash to the digest named. Blobs no checkpoint or write names any more are removed with them.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import blake3
import orjson

from handoff_files.format.codec import parse_json
from handoff_files.foundation.atomic import write_durable
from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.foundation.safe_paths import open_dir_under
from handoff_files.thread.tail import read_whole

__all__ = ["BLOBS_DIR", "BLOB_THRESHOLD", "MAX_BLOB_BYTES", "blob_refs", "collect", "copy_blobs", "stash", "unstash"]

BLOBS_DIR: Final = "blobs"
#: A stored value whose compact JSON is larger goes to a blob of its own (a checkpoint file stays readable).
BLOB_THRESHOLD: Final = 256 * 1024
#: The largest value a checkpoint or write may hold, as its compact JSON (base64 for typed bytes):
#: read whole into memory, so bounded like every file here; SqliteSaver's 40 MB states fit.
MAX_BLOB_BYTES: Final = 256 * 1024 * 1024
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def _is_ref(stored: Any) -> bool:
    return isinstance(stored, dict) and set(stored) == {"blob", "bytes"}


def stash(root: Path, ns_dir: Path, stored: dict[str, Any]) -> dict[str, Any]:
    """*stored* itself if small, else a reference to its blob (written durably first, once). Call under the lock.

    :raises HandoffValidationError: if the value is over :data:`MAX_BLOB_BYTES`.
    :raises InvalidNameError: for a link planted in ``blobs/``' place.
    :raises HandoffWriteError: if the disk refuses.
    """
    data = orjson.dumps(stored)
    if len(data) <= BLOB_THRESHOLD:
        return stored
    if len(data) > MAX_BLOB_BYTES:
        msg = f"a value of {len(data):,} bytes (as stored) is over the {MAX_BLOB_BYTES:,}-byte limit for one value"
        raise HandoffValidationError(ns_dir, msg)
    digest = blake3.blake3(data).hexdigest()
    _write(root, ns_dir, digest, data)
    return {"blob": digest, "bytes": len(data)}


def _write(root: Path, ns_dir: Path, digest: str, data: bytes) -> None:
    """Write the blob *digest* names durably, unless it is there already (its name is its content's digest)."""
    with open_dir_under(root, ns_dir / BLOBS_DIR, create=True) as folder:
        assert folder is not None  # noqa: S101 -- made if missing
        try:
            os.lstat(f"{digest}.json", dir_fd=folder)
        except FileNotFoundError:
            write_durable(ns_dir / BLOBS_DIR / f"{digest}.json", data)


def unstash(ns_dir: Path, stored: Any, where: Path) -> Any:
    """The stored value a reference names (read and checked against its digest); anything else as it is.

    :raises HandoffError: naming the blob, if it is missing, too large, not the bytes its digest
        names, or not JSON; and *where* (the checkpoint), if the reference itself is malformed.
    """
    if not _is_ref(stored):
        return stored
    path = ns_dir / BLOBS_DIR / f"{stored['blob']}.json"
    return parse_json(_read(ns_dir, stored["blob"], where), path, limit=MAX_BLOB_BYTES)


def _read(ns_dir: Path, digest: Any, where: Path) -> bytes:
    """The bytes of the blob *digest* names, read bounded and checked against it (*where*: who names it)."""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        msg = f"a blob reference names no BLAKE3 digest: {str(digest)[:80]}"
        raise HandoffError(where, msg)
    path = ns_dir / BLOBS_DIR / f"{digest}.json"
    try:
        data = read_whole(path, max_bytes=MAX_BLOB_BYTES)
    except HandoffError as exc:
        msg = f"the value {where.name} names is unreadable: {exc.reason}"
        raise HandoffError(path, msg) from exc
    if blake3.blake3(data).hexdigest() != digest:
        msg = f"damaged: its bytes do not hash to the digest in its name (the value of {where.name})"
        raise HandoffError(path, msg)
    return data


def blob_refs(values: Iterable[Any]) -> frozenset[str]:
    """The digests the stored *values* name."""
    return frozenset(str(value["blob"]) for value in values if _is_ref(value))


def copy_blobs(root: Path, source: Path, target: Path, digests: Iterable[str]) -> None:
    """Copy the blobs *digests* names from one namespace folder to another (a thread's copy); each checked."""
    for digest in digests:
        _write(root, target, digest, _read(source, digest, source))  # checked, then copied as it is


def collect(ns_dir: Path, named: frozenset[str]) -> None:
    """Remove the blobs nothing names any more (call under the lock). Housekeeping: a failure leaves them."""
    with contextlib.suppress(OSError, HandoffError), open_dir_under(ns_dir, ns_dir / BLOBS_DIR) as folder:
        for name in os.listdir(folder) if folder is not None else []:
            stem, _, suffix = name.partition(".")
            if suffix == "json" and _DIGEST.fullmatch(stem) and stem not in named:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=folder)
