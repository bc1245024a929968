"""Storage: the one seam between the layers that keep a thread and where its objects live (issue 23).

:func:`open_storage` gives a :class:`Storage` for a folder (:class:`LocalStorage`) or an
``s3://bucket/prefix`` URL (:class:`BucketStorage`, the ``[s3]`` extra); both offer the same five
operations with the same guarantees (see :mod:`~handoff_files.storage.seam`), checked by one suite
run on a folder and on a real object store (SeaweedFS) in the tests.
"""

from __future__ import annotations

import os

from handoff_files.foundation.errors import HandoffError
from handoff_files.storage.bucket import BucketStorage
from handoff_files.storage.local import LocalStorage
from handoff_files.storage.seam import Storage, Stored, check_key

__all__ = ["BucketStorage", "LocalStorage", "Storage", "Stored", "check_key", "is_url", "open_storage"]


def is_url(target: str | os.PathLike[str]) -> bool:
    """Whether *target* names a bucket (``s3://…``) rather than a folder."""
    return isinstance(target, str) and target.startswith("s3://")


def open_storage(target: str | os.PathLike[str]) -> Storage:
    """The storage *target* names: ``s3://bucket/prefix`` a bucket, anything else a local folder.

    :raises HandoffError: if the URL is not one (or carries credentials), or the ``[s3]`` extra is missing.
    """
    if is_url(target):
        return BucketStorage(os.fspath(target))
    if isinstance(target, str) and "://" in target:  # S3://, gs://, file://, http://: never a folder by accident
        scheme = target.partition("://")[0][:20]
        msg = f"only s3:// URLs name a store ({scheme}:// is not one yet); a folder is named by its path"
        if scheme.lower() == "s3":
            msg = f"write the scheme in lower case, s3://bucket/prefix ({scheme}:// is not read as s3://)"
        shown = f"{scheme}://…"  # the rest may hold a secret: never shown
        raise HandoffError(shown, msg)
    return LocalStorage(target)
