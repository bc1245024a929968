"""The local blob store: a folder of content-addressed blobs, each written atomically and durably."""

from __future__ import annotations

import os
from pathlib import Path

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.atomic import fsync_dir, read_bytes
from handoff_files.foundation.errors import BlobError, BlobNotFoundError, HandoffError, HandoffNotFoundError
from handoff_files.foundation.names import check_folder_path
from handoff_files.foundation.shared_mode import check_shared, make_dir, write_durable_mode
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
    :param shared: group-shared mode, for agents running as different users in one group: folders it
        creates are 0770 with setgid (so blobs take the folder's group), blobs 0660, whatever the umask.
        It applies to what is created: a put into an existing folder narrower than that is refused,
        naming it and the ``chmod`` to run. Default: private, 0700 and 0600; never widened unasked.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        compress_over: int = COMPRESS_OVER,
        max_bytes: int = MAX_FILE_BYTES,
        shared: bool = False,
    ) -> None:
        check_folder_path(root, "a local blob store (an fsspec URL goes to open_blob_store)")
        self.root = Path(root).absolute()
        self.compress_over = compress_over
        self.max_bytes = max_bytes
        self.shared = shared

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"

    def _path(self, blob_id: str, suffix: str = "") -> Path:
        return self.root / f"{blob_path(check_blob_id(blob_id, str(self.root)))}{suffix}"

    def put(self, data: bytes) -> str:
        """Store *data* (compressed past ``compress_over``) durably; return its sha256.

        :raises BlobError: if the folder cannot be written, or (shared) is narrower than a shared store needs.
        """
        blob_id = sha256_hex(data)
        if self.exists(blob_id):
            return blob_id
        stored, suffix = pack(data, compress_over=self.compress_over)
        target = self._path(blob_id, suffix)
        if self.shared:
            self._check_shared(target.parent)
        try:
            self._make_dirs(target.parent)
            write_durable_mode(target, stored, shared=self.shared)
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
            make_dir(directory, shared=self.shared)
            # fsync the parent: a new folder's name is durable only with its parent's entry
            fsync_dir(directory.parent)

    def _check_shared(self, folder: Path) -> None:
        """Refuse to put into an existing folder of the store narrower than shared mode needs (never widened)."""
        while not folder.is_dir() and folder != self.root:
            folder = folder.parent
        # the folder written into, or the nearest of the store's that exists; one above the store is not ours
        try:
            check_shared(folder)
        except HandoffError as exc:
            raise BlobError(exc.path, exc.reason) from exc

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
