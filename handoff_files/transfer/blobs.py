"""Blob stores: content-addressed bytes (id = sha256), local and durable; large blobs stored compressed."""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.atomic import fsync_dir, read_bytes, write_durable
from handoff_files.foundation.errors import BlobError, BlobNotFoundError, HandoffError, HandoffNotFoundError

__all__ = [
    "COMPRESS_OVER",
    "BlobStore",
    "LocalBlobStore",
    "blob_path",
    "check_blob_id",
    "open_blobs",
    "pack",
    "sha256_hex",
    "unpack",
]

#: Blobs larger than this are stored zlib-compressed (a ``.zz`` suffix); ids stay the sha256 of the raw bytes.
COMPRESS_OVER: Final = 100 * 1024
#: The suffix of a compressed blob.
COMPRESSED_SUFFIX: Final = ".zz"
_BLOB_ID: Final = re.compile(r"[0-9a-f]{64}")
#: The environment variable naming the blob store when none is given (a folder or an fsspec URL).
BLOBS_ENV: Final = "HANDOFF_BLOBS"
_NO_STORE: Final = "<blobs>"


@runtime_checkable
class BlobStore(Protocol):
    """Where handoffs travel between agents: bytes in, an id out; the id is the sha256 of the bytes."""

    def put(self, data: bytes) -> str:
        """Store *data* durably; return its id. Storing the same bytes twice is harmless."""
        ...

    def get(self, blob_id: str) -> bytes:
        """Return the bytes stored under *blob_id*; raise ``BlobNotFoundError`` if there are none."""
        ...

    def exists(self, blob_id: str) -> bool:
        """Whether a blob with that id is stored."""
        ...


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


class LocalBlobStore:
    """A folder of blobs: ``<root>/sha256/ab/<id>`` (or ``<id>.zz``), each written atomically and durably.

    :param root: the folder (created on first put).
    :param compress_over: store blobs larger than this compressed.
    :param max_bytes: the largest blob :meth:`get` returns, compressed or not (default: a handoff's limit).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        compress_over: int = COMPRESS_OVER,
        max_bytes: int = MAX_FILE_BYTES,
    ) -> None:
        self.root = Path(root).absolute()
        self.compress_over = compress_over
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"

    def _path(self, blob_id: str, suffix: str = "") -> Path:
        return self.root / f"{blob_path(check_blob_id(blob_id, str(self.root)))}{suffix}"

    def put(self, data: bytes) -> str:
        """Store *data* (compressed past ``compress_over``) durably; return its sha256.

        :raises BlobError: if the folder cannot be written.
        """
        blob_id = sha256_hex(data)
        if self.exists(blob_id):
            return blob_id
        stored, suffix = pack(data, compress_over=self.compress_over)
        target = self._path(blob_id, suffix)
        try:
            self._make_dirs(target.parent)
            write_durable(target, stored)
        except (OSError, HandoffError) as exc:
            reason = exc.reason if isinstance(exc, HandoffError) else (exc.strerror or str(exc))
            msg = f"cannot store blob {blob_id}: {reason}"
            raise BlobError(self.root, msg) from exc
        return blob_id

    def _make_dirs(self, folder: Path) -> None:
        missing = []
        while not folder.is_dir():
            missing.append(folder)
            folder = folder.parent
        for directory in reversed(missing):
            directory.mkdir(mode=0o700, exist_ok=True)
            # fsync the parent: a new folder's name is durable only with its parent's entry
            fsync_dir(directory.parent)

    def get(self, blob_id: str) -> bytes:
        """Return the blob's bytes.

        :raises BlobNotFoundError: if no blob has that id.
        :raises BlobError: if it cannot be read, or inflates past ``max_bytes``.
        """
        for suffix in ("", COMPRESSED_SUFFIX):
            path = self._path(blob_id, suffix)
            try:
                stored, _ = read_bytes(path, self.max_bytes, follow_symlinks=False)
            except HandoffNotFoundError:
                continue
            except HandoffError as exc:
                raise BlobError(path, exc.reason) from exc
            return unpack(stored, suffix, max_bytes=self.max_bytes, where=str(path))
        msg = f"no blob {blob_id} in this store"
        raise BlobNotFoundError(self.root, msg)

    def exists(self, blob_id: str) -> bool:
        """Whether the blob is stored (either form).

        :raises BlobError: if the folder cannot be looked into (never taken as "absent").
        """
        for suffix in ("", COMPRESSED_SUFFIX):
            path = self._path(blob_id, suffix)
            try:
                os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:  # ENOTDIR, EACCES …: Path.exists() would call these "absent"
                msg = f"cannot look for blob {blob_id}: {exc.strerror or exc}"
                raise BlobError(self.root, msg) from exc
            return True
        return False


def open_blobs(location: str | os.PathLike[str] | None = None) -> BlobStore:
    """The blob store at *location*: a folder, or any fsspec URL (``s3://bucket/prefix``, ``gcs://…``).

    fsspec is imported only for a URL. Options for the remote filesystem come from fsspec's own
    configuration (for S3, the usual AWS variables, and ``FSSPEC_S3_ENDPOINT_URL`` for an S3-compatible server).

    :param location: default: the ``HANDOFF_BLOBS`` environment variable.
    :raises BlobError: if no location is given or set.
    """
    text = os.fspath(location) if location is not None else os.environ.get(BLOBS_ENV, "")
    if not text:
        msg = f"no blob store given: pass one (a folder or an fsspec URL) or set {BLOBS_ENV}"
        raise BlobError(_NO_STORE, msg)
    if "://" in text and not text.startswith("file://"):
        # imported here: only remote stores pay for fsspec
        from handoff_files.transfer.remote import FsspecBlobStore  # noqa: PLC0415

        return FsspecBlobStore(text)
    return LocalBlobStore(text.removeprefix("file://"))
