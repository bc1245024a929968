"""Large values of a saver on object storage, each an object of its own beside its checkpoint.

As on a folder (:mod:`~handoff_files.langgraph.blobs`), a stored value whose compact JSON is over
:data:`~handoff_files.langgraph.blobs.BLOB_THRESHOLD` is written as its own object, named by the
BLAKE3 digest of its bytes, and the checkpoint (or write) holds ``{"blob": "<digest>", "bytes": N}``
in its place, under the checkpoint's seal; so a checkpoint object stays small enough to read and a
state of many large values is not refused as one object past the file limit. The object is
``<thread>/<namespace>/blobs/<checkpoint_id>/<digest>.json``: kept under the checkpoint that names
it, so it goes when the checkpoint goes (with its writes), with no count of who else names it.

A value's object is created before the record naming it; one there already under its name is
checked against the digest and replaced if it is not those bytes (planted). It is read only
through a verified record, bounded by :data:`~handoff_files.langgraph.blobs.MAX_BLOB_BYTES`, and
only if its bytes hash to the digest named.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import blake3
import orjson

from handoff_files.format.codec import parse_json
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    ObjectExistsError,
)
from handoff_files.langgraph.blobs import BLOB_THRESHOLD, MAX_BLOB_BYTES

if TYPE_CHECKING:
    from handoff_files.storage import Storage

__all__ = ["BLOBS", "stash_value", "unstash_value", "values_prefix"]

#: The key part under a namespace that holds its checkpoints' large values.
BLOBS: Final = "blobs"
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def values_prefix(thread: str, ns: str, checkpoint: str) -> str:
    """``<thread>/<ns>/blobs/<checkpoint>/``: where a checkpoint's large values are (encoded parts)."""
    return f"{thread}/{ns}/{BLOBS}/{checkpoint}/"


def _is_ref(stored: Any) -> bool:
    return isinstance(stored, dict) and set(stored) == {"blob", "bytes"}


def stash_value(storage: Storage, prefix: str, stored: dict[str, Any]) -> dict[str, Any]:
    """*stored* itself if small, else a reference to its object under *prefix* (created first).

    :raises HandoffValidationError: if the value is over :data:`MAX_BLOB_BYTES` (nothing written).
    :raises HandoffError: if the store refuses it.
    """
    data = orjson.dumps(stored)
    if len(data) <= BLOB_THRESHOLD:
        return stored
    if len(data) > MAX_BLOB_BYTES:
        msg = f"a value of {len(data):,} bytes (as stored) is over the {MAX_BLOB_BYTES:,}-byte limit for one value"
        where = f"{storage.where}/{prefix}"
        raise HandoffValidationError(where, msg)
    digest = blake3.blake3(data).hexdigest()
    key = f"{prefix}{digest}.json"
    try:
        storage.create(key, data)
    except ObjectExistsError:  # written already for this checkpoint: the same bytes, unless planted
        there = storage.read(key, limit=MAX_BLOB_BYTES)
        if blake3.blake3(there.data).hexdigest() != digest:
            storage.replace(key, data, there.etag)
    return {"blob": digest, "bytes": len(data)}


def unstash_value(storage: Storage, prefix: str, stored: Any, named: str) -> Any:
    """The stored value a reference names (read, checked against its digest); anything else as it is.

    :raises HandoffError: naming the value's object, if it is missing, too large, not the bytes its
        digest names, or not JSON; naming *named* (the record), if the reference itself is malformed.
    """
    if not _is_ref(stored):
        return stored
    digest = stored["blob"]
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise HandoffError(named, f"a value reference names no BLAKE3 digest: {str(digest)[:80]}")
    key = f"{prefix}{digest}.json"
    where = f"{storage.where}/{key}"
    try:
        data = storage.read(key, limit=MAX_BLOB_BYTES).data
    except HandoffNotFoundError:
        raise HandoffError(where, f"missing: the value {named} names is not there") from None
    if blake3.blake3(data).hexdigest() != digest:
        raise HandoffError(where, f"damaged: its bytes do not hash to the digest in its name (a value of {named})")
    return parse_json(data, where, limit=MAX_BLOB_BYTES)
