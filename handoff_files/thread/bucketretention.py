"""The retention record on a bucket: ``retention.json`` under the thread's prefix, so pruning is told from loss.

The record is a folder's (:mod:`~handoff_files.thread.retained`: the same bytes, the same signature
over the same message); only where it is kept differs. A writer makes sure it covers its removal
before it removes a generation object: created if there is none, replaced at the ETag read when it
is another ``keep``'s, another thread's or another key's (a lost race is read again). A process
that found it covering remembers its ETag and asks again only whether it changed (a conditional
GET, answered 304 with no body): every save past ``keep`` prunes, and a record another writer
replaced or removed meanwhile is read (and made to cover again) before anything more goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, StorageConflictError
from handoff_files.thread.retained import (
    MAX_RECORD_BYTES,
    RETENTION_NAME,
    RetentionRecord,
    account_from,
    decode_record,
    encode_record,
    new_record,
)

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey
    from handoff_files.storage import Storage

__all__ = ["keep_bucket_record", "read_bucket_record"]

_TRIES: Final = 8
_REMEMBERED: Final = 4096
# per store: the thread, keep and key this process found (or made) the record cover, and its ETag then
_KNOWN: dict[str, tuple[tuple[str, int, str | None], str]] = {}


def read_bucket_record(storage: Storage) -> RetentionRecord | None:
    """The thread's retention record, its signature verified; None if there is none.

    :raises HandoffError: if it is not a record, or its signature does not verify (naming the object).
    """
    try:
        stored = storage.read(RETENTION_NAME, limit=MAX_RECORD_BYTES)
    except HandoffNotFoundError:
        return None
    return decode_record(stored.data, f"{storage.where}/{RETENTION_NAME}")


def keep_bucket_record(
    storage: Storage,
    *,
    thread_id: str,
    keep: int,
    kept_from: int,
    generation: int,
    seal: str,
    key: SigningKey | None,
    oldest: int,
) -> None:
    """Make ``retention.json`` cover a removal of every generation below *kept_from* (call before it).

    A record written where none of this thread could be read says that the generations below
    *oldest* were gone before it (it never vouches for their pruning), as on a folder.

    :raises HandoffError: if a record is needed and cannot be written (remove nothing then).
    """
    covers = (thread_id, keep, None if key is None else key.fingerprint)
    known = _KNOWN.get(storage.where)
    if known is not None and known[0] == covers and _unchanged(storage, known[1]):
        return
    named = f"{storage.where}/{RETENTION_NAME}"
    for _ in range(_TRIES):
        try:
            stored = storage.read(RETENTION_NAME, limit=MAX_RECORD_BYTES)
        except HandoffNotFoundError:
            stored = None
        record: RetentionRecord | None = None
        if stored is not None:
            try:
                record = decode_record(stored.data, named)
            except HandoffError:
                record = None  # damaged, or not a record: written anew
        before = account_from(record, thread_id=thread_id, keep=keep, key=key, oldest=oldest)
        if before is None and stored is not None:  # only a record read can cover
            _remember(storage.where, covers, stored.etag)
            return
        data = encode_record(
            new_record(
                thread_id=thread_id,
                keep=keep,
                kept_from=kept_from,
                generation=generation,
                seal=seal,
                key=key,
                unaccounted_below=before,
            )
        )
        try:
            if stored is None:
                etag = storage.create(RETENTION_NAME, data)
            else:
                etag = storage.replace(RETENTION_NAME, data, stored.etag)
        except StorageConflictError:
            continue  # another writer wrote it meanwhile: read it again
        _remember(storage.where, covers, etag)
        return
    raise StorageConflictError(named, f"other writers kept replacing it ({_TRIES} tries); nothing was removed")


def _unchanged(storage: Storage, etag: str) -> bool:
    """Whether the record is still the one at *etag* (one conditional GET); False if changed or gone."""
    try:
        return storage.read_changed(RETENTION_NAME, etag, limit=MAX_RECORD_BYTES) is None
    except HandoffNotFoundError:
        return False


def _remember(where: str, covers: tuple[str, int, str | None], etag: str) -> None:
    if len(_KNOWN) >= _REMEMBERED:
        _KNOWN.clear()
    _KNOWN[where] = (covers, etag)
