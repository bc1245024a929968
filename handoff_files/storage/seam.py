"""The storage seam: the five operations every durable part of a thread needs, on a folder or a bucket.

A store holds objects by *key* (``history/00000003.json``: ``/``-separated names, no ``.`` or
``..``, no empty part) under its root. Its operations are those an object store with conditional
writes offers, and nothing else, so that the layers above can run on either without knowing which
(issue 23, Delta Lake's commit protocol applied to a thread):

- :meth:`Storage.read`: the object's bytes and its *etag* (a tag that changes with every write);
  :meth:`Storage.read_changed` the same only if it is no longer at a given etag (S3: a 304);
- :meth:`Storage.create`: write the object only if it does not exist (S3: ``If-None-Match: *``);
  exactly one of several writers racing to create one key wins, the others get
  :class:`~handoff_files.foundation.errors.ObjectExistsError`. This is the commit point;
- :meth:`Storage.replace`: write it only if it is still at *etag* (S3: ``If-Match``), else
  :class:`~handoff_files.foundation.errors.ObjectChangedError`; an older writer never overwrites a
  newer head;
- :meth:`Storage.list`: the keys under a prefix, in name order;
- :meth:`Storage.remove`: remove it (no error if it is gone).

Every read is bounded (*limit* bytes, checked before the body is read) and every key is checked
before any system call or request sees it: input from a folder or a bucket is hostile until verified.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from handoff_files.foundation.errors import HandoffError

__all__ = ["MAX_KEY", "MAX_LISTED", "Storage", "Stored", "check_data", "check_key"]

#: The longest key accepted (S3's own limit is 1,024 bytes).
MAX_KEY: Final = 512
#: The most keys one listing returns: past it, the listing is refused rather than cut short.
MAX_LISTED: Final = 100_000
_PART: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True, slots=True)
class Stored:
    """An object as read: its bytes and its etag (what :meth:`Storage.replace` is conditional on)."""

    data: bytes
    etag: str


@runtime_checkable
class Storage(Protocol):
    """Objects by key under one root: a local folder (:class:`~handoff_files.storage.local.LocalStorage`)
    or a bucket prefix (:class:`~handoff_files.storage.bucket.BucketStorage`)."""

    @property
    def where(self) -> str:
        """The root as a person names it (a path, or ``s3://bucket/prefix``; never a credential)."""
        ...

    def read(self, key: str, *, limit: int) -> Stored:
        """The object at *key*.

        :raises HandoffNotFoundError: if there is none.
        :raises HandoffTooLargeError: if it is larger than *limit* bytes (told before its body is read).
        :raises HandoffError: if it cannot be read (a link, not a regular file, the store unreachable).
        """
        ...

    def read_changed(self, key: str, etag: str, *, limit: int) -> Stored | None:
        """The object at *key* if it is no longer at *etag*; None if it still is (S3: a ``GET`` with
        ``If-None-Match``, answered 304 without the body). For a poller that reads only what changed.

        :raises HandoffNotFoundError, HandoffTooLargeError, HandoffError: as :meth:`read`.
        """
        ...

    def create(self, key: str, data: bytes) -> str:
        """Write *data* at *key* only if no object is there; its etag. Durable when it returns.

        :raises ObjectExistsError: if one is (another writer's create won).
        """
        ...

    def replace(self, key: str, data: bytes, etag: str) -> str:
        """Write *data* at *key* only if the object there is still at *etag*; the new etag.

        :raises ObjectChangedError: if it changed since, or is gone.
        """
        ...

    def list(self, prefix: str = "") -> list[str]:
        """The keys that start with *prefix* (a folder, ``history/``, or any start of a key), in name order.

        :raises HandoffError: past :data:`MAX_LISTED` keys.
        """
        ...

    def remove(self, key: str) -> None:
        """Remove the object at *key*; nothing if there is none."""
        ...


def check_key(key: str, where: str) -> str:
    """*key* if it is a key this library writes: parts of letters, digits, ``.``, ``_`` and ``-``
    joined by ``/``, no part empty or only dots, at most :data:`MAX_KEY` characters.

    :raises HandoffError: naming *where* and the key, if it is not.
    """
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY or not all(_part_ok(p) for p in key.split("/")):
        shown = repr(key)[:80]
        msg = (
            f"not a storage key: {shown} (parts joined by '/', each of letters, digits, '.', '_' and '-', starting "
            f"with a letter, digit or '_', at most 128 characters, not only dots; at most {MAX_KEY} in all)"
        )
        raise HandoffError(where, msg)
    return key


def check_data(data: object, where: str) -> bytes:
    """*data* if it is bytes (obstore would take a ``str`` for a file path to upload: never here).

    :raises HandoffError: if it is not.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise HandoffError(where, f"an object's data must be bytes, not {type(data).__name__}")
    return bytes(data)


def _part_ok(part: str) -> bool:
    return _PART.fullmatch(part) is not None and part.strip(".") != ""


def under(keys: Iterator[str], prefix: str) -> list[str]:
    """*keys* that start with *prefix*, sorted, refused past :data:`MAX_LISTED` (shared by both stores)."""
    found: list[str] = []
    for key in keys:
        if key.startswith(prefix):
            found.append(key)
            if len(found) > MAX_LISTED:
                msg = f"more than {MAX_LISTED} objects under {prefix!r}: refused rather than listed in part"
                raise HandoffError(prefix or "/", msg)
    return sorted(found)
