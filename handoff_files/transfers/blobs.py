"""Blob stores: the protocol every store meets, and opening one by location (a folder or an fsspec URL).

The stores themselves live in :mod:`~handoff_files.transfers.local_blobs` and
:mod:`~handoff_files.transfers.remote`, the layout and packing they share in
:mod:`~handoff_files.transfers.blob_layout`; their public names are re-exported here.
"""

from __future__ import annotations

import os
from typing import Final, Protocol, runtime_checkable

from handoff_files.foundation.errors import BlobError
from handoff_files.transfers.blob_layout import (
    COMPRESS_OVER,
    COMPRESSED_SUFFIX,
    blob_path,
    check_blob_id,
    pack,
    sha256_hex,
    unpack,
)
from handoff_files.transfers.local_blobs import LocalBlobStore

__all__ = [
    "BLOBS_ENV",
    "COMPRESSED_SUFFIX",
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


def open_blobs(location: str | os.PathLike[str] | None = None, *, shared: bool = False) -> BlobStore:
    """The blob store at *location*: a folder, ``s3://bucket/prefix``, or another fsspec URL (``gcs://…``).

    ``s3://`` is on the storage seam (:class:`~handoff_files.transfers.bucket_blobs.BucketBlobStore`: the
    ``[s3]`` extra, the AWS environment, ``AWS_ENDPOINT_URL`` for an S3-compatible server, as threads on a
    bucket). fsspec is imported only for another URL; its options come from fsspec's own configuration.

    :param location: default: the ``HANDOFF_BLOBS`` environment variable.
    :param shared: for a folder, group-shared mode (see :class:`LocalBlobStore`); a URL's permissions
        are the remote store's own, and this changes nothing there.
    :raises BlobError: if no location is given or set, or a URL is given without fsspec installed.
    """
    text = os.fspath(location) if location is not None else os.environ.get(BLOBS_ENV, "")
    if not text:
        msg = f"no blob store given: pass one (a folder or an fsspec URL) or set {BLOBS_ENV}"
        raise BlobError(_NO_STORE, msg)
    if text.startswith("s3://"):  # on the storage seam, as threads and inboxes on a bucket are
        from handoff_files.transfers.bucket_blobs import BucketBlobStore  # noqa: PLC0415 -- obstore only for a bucket

        return BucketBlobStore(text)
    if "://" in text and not text.startswith("file://"):
        try:
            from handoff_files.transfers.remote import FsspecBlobStore  # noqa: PLC0415 -- only remote stores pay for fsspec
        except ImportError as exc:  # the scheme alone names it: the rest of a URL may hold credentials
            scheme = f"{text.split('://', 1)[0]}://…"
            raise BlobError(scheme, str(exc)) from None
        return FsspecBlobStore(text)
    return LocalBlobStore(text.removeprefix("file://"), shared=shared)
