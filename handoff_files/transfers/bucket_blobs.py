"""Blobs on object storage through the storage seam: ``open_blobs("s3://bucket/prefix")`` (issue 23).

The layout is every blob store's (``sha256/ab/<id>``, ``<id>.zz`` compressed: a folder's blobs copied
into the bucket are read as they are). A blob is created only if absent (``If-None-Match: *``): it is
content-addressed, so a second writer of the same bytes finds it there and is done. The endpoint and
credentials come from the AWS environment, as a thread's and an inbox's on a bucket do (one
object-store client for the project, obstore); other schemes (``gs://``, ``sftp://`` …) stay on
fsspec (:mod:`~handoff_files.transfers.remote`).
"""

from __future__ import annotations

import os
from typing import Final

from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.errors import (
    BlobError,
    BlobNotFoundError,
    HandoffError,
    HandoffNotFoundError,
    HandoffTooLargeError,
    ObjectExistsError,
)
from handoff_files.transfers.blob_layout import (
    COMPRESS_OVER,
    SUFFIXES,
    blob_path,
    check_blob_id,
    pack,
    sha256_hex,
    unpack,
)

__all__ = ["BucketBlobStore"]

_FSSPEC_ENDPOINT: Final = "FSSPEC_S3_ENDPOINT_URL"


class BucketBlobStore:
    """Blobs under ``s3://bucket/prefix``, on the storage seam (see the module's docstring).

    :param url: ``s3://bucket/prefix``.
    :param compress_over: store blobs larger than this compressed.
    :param max_bytes: the largest blob :meth:`get` downloads (told by its size, before its body) or inflates to.
    :raises BlobError: for a URL the store refuses, or an endpoint set only for fsspec.
    """

    def __init__(self, url: str, *, compress_over: int = COMPRESS_OVER, max_bytes: int = MAX_FILE_BYTES) -> None:
        from handoff_files.storage import open_storage  # noqa: PLC0415 -- obstore only for a bucket

        if os.environ.get(_FSSPEC_ENDPOINT) and not os.environ.get("AWS_ENDPOINT_URL"):
            msg = (
                f"{_FSSPEC_ENDPOINT} is set and AWS_ENDPOINT_URL is not: an s3:// blob store is opened as threads "
                "and inboxes on a bucket are, with the AWS environment; set AWS_ENDPOINT_URL to the same endpoint"
            )
            raise BlobError(url.split("://", 1)[0] + "://…", msg)
        try:
            self.storage = open_storage(url)
        except HandoffError as exc:
            raise BlobError(exc.path, exc.reason) from exc
        self.url = self.storage.where
        self.compress_over = compress_over
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"BucketBlobStore({self.url!r})"

    def put(self, data: bytes) -> str:
        """Store *data* (compressed past ``compress_over``) unless a blob of its id is there; return the id.

        :raises BlobError: if the store cannot be reached or written.
        """
        blob_id = sha256_hex(data)
        if self.exists(blob_id):
            return blob_id
        stored, suffix = pack(data, compress_over=self.compress_over)
        try:
            self.storage.create(blob_path(blob_id) + suffix, stored)
        except ObjectExistsError:
            pass  # another writer stored the same bytes first: content-addressed, so it is this blob
        except HandoffError as exc:
            raise BlobError(exc.path, f"cannot store blob {blob_id}: {exc.reason}") from exc
        return blob_id

    def get(self, blob_id: str) -> bytes:
        """The blob's bytes, its size checked before its body is read.

        :raises BlobNotFoundError: if no blob has that id (in either form).
        :raises BlobError: if the store cannot be reached or read, or the blob is past ``max_bytes`` (stored, inflated).
        """
        path = blob_path(check_blob_id(blob_id, self.url))
        for suffix in SUFFIXES:
            where = f"{self.url}/{path}{suffix}"
            try:
                stored = self.storage.read(path + suffix, limit=self.max_bytes)
            except HandoffNotFoundError:
                continue
            except HandoffTooLargeError as exc:
                raise BlobError(where, f"over the {self.max_bytes:,}-byte limit: refused before downloading") from exc
            except HandoffError as exc:
                raise BlobError(where, f"cannot read the blob: {exc.reason}") from exc
            return unpack(stored.data, suffix, max_bytes=self.max_bytes, where=where)
        raise BlobNotFoundError(self.url, f"no blob {blob_id} in this store")

    def exists(self, blob_id: str) -> bool:
        """Whether the blob is stored (either form): one listing.

        :raises BlobError: if the store cannot be reached (never taken as "absent").
        """
        path = blob_path(check_blob_id(blob_id, self.url))
        try:
            found = self.storage.list(path)
        except HandoffError as exc:
            raise BlobError(self.url, f"cannot look into the blob store: {exc.reason}") from exc
        return any(path + suffix in found for suffix in SUFFIXES)
