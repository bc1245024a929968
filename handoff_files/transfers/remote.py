"""Blob stores on any fsspec filesystem (S3, GCS, SFTP …): the one module that imports fsspec."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from typing import Any, Final

try:
    import fsspec
    from fsspec.implementations.local import LocalFileSystem
except ImportError as exc:  # the message is the point: one line naming what to install
    msg = "a remote blob store needs fsspec: pip install 'handoff-files[remote]' (and the filesystem's package)"
    raise ImportError(msg) from exc

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.atomic import TEMP_SUFFIX
from handoff_files.foundation.errors import BlobError, BlobNotFoundError
from handoff_files.transfers.blob_layout import (
    COMPRESS_OVER,
    SUFFIXES,
    blob_path,
    check_blob_id,
    pack,
    sha256_hex,
    unpack,
)
from handoff_files.transfers.local_blobs import LocalBlobStore

__all__ = ["OBJECT_STORES", "FsspecBlobStore", "redact_url"]

#: Protocols of object stores, where one upload is atomic: the object appears whole when the PUT (or a
#: multipart upload's completion) succeeds, or not at all. Every other filesystem writes a temp name, then moves it.
OBJECT_STORES: Final = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "oss"})
_USERINFO: Final = re.compile(r"//[^/?#@]*@")
_QUERY: Final = re.compile(r"[?#].*?(?=::|$)")


def redact_url(url: str) -> str:
    """*url* without what may hold credentials: the ``user:password@`` part and any query string."""
    return _QUERY.sub("", _USERINFO.sub("//", url))


class FsspecBlobStore:
    """Blobs on any fsspec filesystem, laid out and packed as a :class:`.local_blobs.LocalBlobStore` lays them out.

    ``<url>/sha256/ab/<id>`` (or ``<id>.zz`` past ``compress_over``): a blob one store type wrote is
    read by the other when the url is a local path. Every failure of the filesystem is a
    ``BlobError``; a store that cannot be reached or read is never taken as empty.

    :param url: an fsspec URL (``s3://bucket/prefix``, ``gs://…``, ``sftp://host/path``, ``file:///…``)
        or a local path.
    :param compress_over: store blobs larger than this compressed.
    :param max_bytes: the largest blob :meth:`get` downloads (checked before downloading) or inflates to.
    :param storage_options: passed to the filesystem (credentials, ``client_kwargs``, ``config_kwargs`` …).
    :raises BlobError: if fsspec knows no such filesystem, or its package is not installed.
    """

    def __init__(
        self,
        url: str | os.PathLike[str],
        *,
        compress_over: int = COMPRESS_OVER,
        max_bytes: int = MAX_FILE_BYTES,
        **storage_options: Any,
    ) -> None:
        #: the store's URL without credentials (what errors and ``repr`` name)
        self.url = redact_url(os.fspath(url))
        self.compress_over = compress_over
        self.max_bytes = max_bytes
        try:
            fs, root = fsspec.core.url_to_fs(url, **storage_options)
        except Exception as exc:  # fsspec raises ValueError, ImportError or the backend's own: say which
            msg = f"cannot open this blob store: {type(exc).__name__}: {exc}"
            raise BlobError(self.url, msg) from exc
        self._fs = fs
        self._root = str(root).rstrip("/")
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        self._one_put = bool(protocols & OBJECT_STORES)
        # fsspec's local filesystem never fsyncs: a local store writes as LocalBlobStore does, durably
        self._local = (
            LocalBlobStore(self._root or "/", compress_over=compress_over, max_bytes=max_bytes)
            if isinstance(fs, LocalFileSystem)
            else None
        )

    def __repr__(self) -> str:
        return f"FsspecBlobStore({self.url!r})"

    def _path(self, blob_id: str, suffix: str = "") -> str:
        return f"{self._root}/{blob_path(check_blob_id(blob_id, self.url))}{suffix}"

    def _where(self, blob_id: str, suffix: str = "") -> str:
        return f"{self.url.rstrip('/')}/{blob_path(blob_id)}{suffix}"

    def put(self, data: bytes) -> str:
        """Store *data* (compressed past ``compress_over``); return its sha256. A stored blob is not written again.

        A reader never sees part of a blob: an object store's upload is atomic; other filesystems
        write a temp name and move it into place; a local path is written durably (fsync, rename,
        directory fsync).

        :raises BlobError: if the store cannot be reached or written.
        """
        if self._local is not None:
            return self._local.put(data)
        blob_id = sha256_hex(data)
        if self.exists(blob_id):
            return blob_id
        stored, suffix = pack(data, compress_over=self.compress_over)
        target = self._path(blob_id, suffix)
        try:
            if self._one_put:
                # one PUT, not temp + move: an object store's move is a copy and a delete, neither atomic nor cheap
                self._fs.pipe_file(target, stored)
            else:
                self._put_by_move(target, stored)
        except Exception as exc:  # the backend's exceptions (botocore, paramiko, OSError …) never escape
            msg = f"cannot store blob {blob_id}: {type(exc).__name__}: {exc}"
            raise BlobError(self._where(blob_id, suffix), msg) from exc
        return blob_id

    def _put_by_move(self, target: str, stored: bytes) -> None:
        folder, _, name = target.rpartition("/")
        # a dot name with the temp suffix: get() and exists() look up exact names, so they never see it
        temp = f"{folder}/.{name}.{secrets.token_hex(8)}{TEMP_SUFFIX}"
        self._fs.makedirs(folder, exist_ok=True)
        try:
            self._fs.pipe_file(temp, stored)
            self._fs.mv(temp, target)
        except Exception:
            with contextlib.suppress(Exception):
                self._fs.rm_file(temp)
            # a concurrent put of the same blob may have moved first (SFTP's rename never replaces): that is success
            with contextlib.suppress(BlobError):
                if self._stat(target, target) is not None:
                    return
            raise

    def get(self, blob_id: str) -> bytes:
        """Return the blob's bytes, after checking its size before downloading it.

        :raises BlobNotFoundError: if no blob has that id (in either form).
        :raises BlobError: if the store cannot be reached or read, or the blob is larger than
            ``max_bytes`` (stored or inflated).
        """
        for suffix in SUFFIXES:
            path = self._path(blob_id, suffix)
            where = self._where(blob_id, suffix)
            info = self._stat(path, where)
            if info is not None:
                return unpack(self._read(path, info, where), suffix, max_bytes=self.max_bytes, where=where)
        msg = f"no blob {blob_id} in this store"
        raise BlobNotFoundError(self.url, msg)

    def _read(self, path: str, info: dict[str, Any], where: str) -> bytes:
        if info.get("type") != "file":
            msg = f"is not a regular file ({info.get('type')}): not a blob"
            raise BlobError(where, msg)
        size = info.get("size")
        if isinstance(size, int) and size > self.max_bytes:
            msg = f"is {size:,} bytes, over the {self.max_bytes:,}-byte limit: refused before downloading"
            raise BlobError(where, msg)
        if size == 0:
            return b""  # a range read of an empty object is an error on S3 (416)
        try:
            # a ranged read bounds the download even if the object grew after info() looked
            stored = bytes(self._fs.cat_file(path, start=0, end=self.max_bytes + 1))
        except FileNotFoundError as exc:
            msg = f"vanished while being read: {exc}"
            raise BlobNotFoundError(where, msg) from exc
        except Exception as exc:  # the backend's exceptions never escape
            msg = f"cannot read the blob: {type(exc).__name__}: {exc}"
            raise BlobError(where, msg) from exc
        if len(stored) > self.max_bytes:
            msg = f"is over the {self.max_bytes:,}-byte limit: refused"
            raise BlobError(where, msg)
        return stored

    def exists(self, blob_id: str) -> bool:
        """Whether the blob is stored (either form).

        :raises BlobError: if the store cannot be reached or looked into (never taken as "absent").
        """
        return any(
            self._stat(self._path(blob_id, suffix), self._where(blob_id, suffix)) is not None for suffix in SUFFIXES
        )

    def _stat(self, path: str, where: str) -> dict[str, Any] | None:
        """The entry's info, or None if there is none; never fsspec's ``exists``, which takes any error as "absent"."""
        try:
            # forget listings this process cached: another writer may have added or removed the blob since
            self._fs.invalidate_cache(path)
            return dict(self._fs.info(path))
        except FileNotFoundError:
            return None
        except Exception as exc:  # the backend's exceptions never escape
            msg = f"cannot look into the blob store: {type(exc).__name__}: {exc}"
            raise BlobError(where, msg) from exc
