"""The local blob store: a folder of content-addressed blobs, each written atomically and durably."""

from __future__ import annotations

import os
from pathlib import Path

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.atomic import fsync_dir, read_bytes, write_durable
from handoff_files.foundation.errors import BlobError, BlobNotFoundError, HandoffError, HandoffNotFoundError
from handoff_files.transfers.blob_layout import (
    COMPRESS_OVER,
    SUFFIXES,
    blob_path,
    check_blob_id,
    pack,
    sha256_hex,
    unpack,
)

__all__ = ["LocalBlobStore"]


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
        for suffix in SUFFIXES:
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
        for suffix in SUFFIXES:
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
