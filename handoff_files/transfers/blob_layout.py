"""Blob layout: a blob's id (the sha256 of its bytes), its path in a store, and how its bytes are packed."""

from __future__ import annotations

import hashlib
import re
import zlib
from typing import Final

from handoff_files.foundation.errors import BlobError

__all__ = [
    "COMPRESSED_SUFFIX",
    "COMPRESS_OVER",
    "SUFFIXES",
    "blob_path",
    "check_blob_id",
    "pack",
    "sha256_hex",
    "unpack",
]

#: Blobs larger than this are stored zlib-compressed (a ``.zz`` suffix); ids stay the sha256 of the raw bytes.
COMPRESS_OVER: Final = 100 * 1024
#: The suffix of a compressed blob.
COMPRESSED_SUFFIX: Final = ".zz"
#: The suffixes a stored blob may have, in the order stores look for them.
SUFFIXES: Final = ("", COMPRESSED_SUFFIX)
_BLOB_ID: Final = re.compile(r"[0-9a-f]{64}")


def sha256_hex(data: bytes) -> str:
    """The sha256 of *data*, in hex: a blob's id, and what a descriptor's ``blob_sha256`` holds."""
    return hashlib.sha256(data).hexdigest()


def check_blob_id(blob_id: object, where: str) -> str:
    """Refuse an id that is not 64 lowercase hex digits (ids name files: nothing else may reach a path)."""
    if not isinstance(blob_id, str) or not _BLOB_ID.fullmatch(blob_id):
        msg = f"blob id must be 64 lowercase hex digits (a sha256), not {str(blob_id)[:80]!r}"
        raise BlobError(where, msg)
    return blob_id


def blob_path(blob_id: str) -> str:
    """The relative path of a blob in a store: ``sha256/ab/abcdef…`` (fan-out keeps folders small)."""
    return f"sha256/{blob_id[:2]}/{blob_id}"


def pack(data: bytes, *, compress_over: int = COMPRESS_OVER) -> tuple[bytes, str]:
    """The bytes to store and the suffix that says how: raw, or zlib past *compress_over* bytes."""
    if len(data) > compress_over:
        return zlib.compress(data, 6), COMPRESSED_SUFFIX
    return data, ""


def unpack(stored: bytes, suffix: str, *, max_bytes: int, where: str) -> bytes:
    """Undo :func:`pack`, refusing to inflate past *max_bytes* (a decompression bomb stops there).

    :raises BlobError: if the compressed bytes are damaged or inflate past the cap.
    """
    if suffix != COMPRESSED_SUFFIX:
        return stored
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(stored, max_bytes + 1)
    except zlib.error as exc:
        msg = f"compressed blob is damaged: {exc}"
        raise BlobError(where, msg) from exc
    if len(data) > max_bytes or inflater.unconsumed_tail:
        msg = f"compressed blob inflates past the {max_bytes:,}-byte cap; refused (a decompression bomb?)"
        raise BlobError(where, msg)
    if not inflater.eof:
        msg = "compressed blob is truncated"
        raise BlobError(where, msg)
    return data
