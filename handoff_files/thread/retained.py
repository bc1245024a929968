"""The retention record: a thread's signed word on which generations its saves removed, so loss is told from pruning.

A save keeps the newest ``keep`` generation files in ``history/`` and removes the rest; a person
or an attacker who removes generation files leaves the same holes. ``retention.json`` beside the
thread's files says what the writers removed on purpose::

    {"kind": "handoff-files/retention", "thread_id": …, "keep": 10, "kept_from": 31,
     "generation": 40, "seal": "blake3:…", "written_at": "…Z", "signature": "-----BEGIN SSH SIGNATURE-----…"}

Read: when generation *generation* (with seal *seal*) was the newest, every generation below
*kept_from* had been removed, and from then on each save keeps the newest *keep*. So, with *N*
the newest generation there is, each number below ``max(kept_from, N - keep + 1)`` is retention's
(:meth:`RetentionRecord.pruned_below`); a number at or above it with no file was lost or removed.

A store writes the record when it first removes a generation file, and again only when its
``keep`` differs from the record's or its thread, or its key, is not the record's; ``handoff
prune`` writes it too. It is made durable before the files it covers are removed. The signature
(SSHSIG, namespace ``handoff-files``) is over :meth:`RetentionRecord.message`, a text that starts
``handoff-files retention 1``, so it can never be taken for a generation's signature (whose
message is ``ALGORITHM:DIGEST``). ``handoff verify`` reads it: on a pinned thread only a record a
trusted key signed explains a hole.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from handoff_files.format.codec import parse_json
from handoff_files.foundation.atomic import read_bytes, write_durable
from handoff_files.foundation.clock import iso_z, utc_now
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffValidationError, SignatureError
from handoff_files.thread.layout import RETENTION_NAME, ThreadDir

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey

__all__ = [
    "MAX_RECORD_BYTES",
    "RETENTION_NAME",
    "RetentionRecord",
    "account_from",
    "decode_record",
    "encode_record",
    "keep_record",
    "new_record",
    "read_record",
    "write_record",
]

_KIND: Final = "handoff-files/retention"
_HEAD: Final = "handoff-files retention 1"
#: The most a record may be (it is ~0.5 KB; a signature ~0.3 KB).
MAX_RECORD_BYTES: Final = 16 * 1024
_MAX_ARMORED: Final = 4096
_REMEMBERED: Final = 4096
# per record file: its identity when this process last found it covering a store, and what it covered
_KNOWN: dict[str, tuple[tuple[int, int, int], str, int, str | None]] = {}
_FIELDS: Final = frozenset(
    {"kind", "thread_id", "keep", "kept_from", "generation", "seal", "written_at", "unaccounted_below", "signature"}
)


@dataclass(frozen=True, slots=True)
class RetentionRecord:
    """What ``retention.json`` says (its signature verified, if it has one)."""

    thread_id: str
    keep: int
    kept_from: int
    generation: int
    seal: str
    written_at: dt.datetime
    signature: str | None = None
    #: generations below this were already gone when the thread's first record was written (an
    #: earlier release pruned them, or they were lost, or the record was removed): not accounted for
    unaccounted_below: int | None = None

    def message(self) -> bytes:
        """The text the signature is over: every field but the signature, one per line."""
        lines = [
            _HEAD,
            f"thread {self.thread_id}",
            f"keep {self.keep}",
            f"kept-from {self.kept_from}",
            f"at {self.generation} {self.seal}",
            f"written {iso_z(self.written_at)}",
        ]
        if self.unaccounted_below is not None:  # a seventh line only then: records without it sign as before
            lines.append(f"unaccounted-below {self.unaccounted_below}")
        return "\n".join(lines).encode()

    def pruned_below(self, newest: int) -> int:
        """Every generation below this number was removed by the writers, *newest* being the newest there is."""
        return max(self.kept_from, newest - self.keep + 1)

    def covers(self, thread_id: str, keep: int, key: SigningKey | None) -> bool:
        """Whether a store of *thread_id* keeping *keep*, signing with *key*, needs no new record."""
        return self.thread_id == thread_id and self.keep == keep and self.signed_with(key)

    def signed_with(self, key: SigningKey | None) -> bool:
        """Whether *key* made the record's signature (None: whether it is unsigned)."""
        if key is None:
            return self.signature is None
        from handoff_files.signing import sshsig  # noqa: PLC0415 -- a signed record loads the signing layer

        signed = None if self.signature is None else sshsig.parse(self.signature, RETENTION_NAME)
        return signed is not None and signed.fingerprint == key.fingerprint


def write_record(
    layout: ThreadDir,
    *,
    thread_id: str,
    keep: int,
    kept_from: int,
    generation: int,
    seal: str,
    key: SigningKey | None,
    unaccounted_below: int | None = None,
) -> RetentionRecord:
    """Write ``retention.json`` durably (call under the writers' lock, before removing what it covers).

    :param unaccounted_below: generations below it were gone before any record said why (None: none were).
    :raises HandoffWriteError: if it cannot be written (the caller then removes nothing).
    """
    record = new_record(
        thread_id=thread_id,
        keep=keep,
        kept_from=kept_from,
        generation=generation,
        seal=seal,
        key=key,
        unaccounted_below=unaccounted_below,
    )
    write_durable(layout.path / RETENTION_NAME, encode_record(record))
    return record


def new_record(
    *,
    thread_id: str,
    keep: int,
    kept_from: int,
    generation: int,
    seal: str,
    key: SigningKey | None,
    unaccounted_below: int | None = None,
) -> RetentionRecord:
    """A record written now, signed with *key* if there is one (where it is kept is the caller's)."""
    now = utc_now().replace(microsecond=0)
    below = unaccounted_below if unaccounted_below is not None and unaccounted_below > 1 else None
    record = RetentionRecord(thread_id, keep, kept_from, generation, seal, now, unaccounted_below=below)
    return record if key is None else replace(record, signature=key.sign(record.message()))


def encode_record(record: RetentionRecord) -> bytes:
    """The record's bytes: indented JSON a person can read."""
    fields: dict[str, Any] = {
        "kind": _KIND,
        "thread_id": record.thread_id,
        "keep": record.keep,
        "kept_from": record.kept_from,
        "generation": record.generation,
        "seal": record.seal,
        "written_at": iso_z(record.written_at),
    }
    if record.unaccounted_below is not None:
        fields["unaccounted_below"] = record.unaccounted_below
    if record.signature is not None:
        fields["signature"] = record.signature
    return orjson.dumps(fields, option=orjson.OPT_INDENT_2) + b"\n"


def keep_record(
    layout: ThreadDir,
    *,
    thread_id: str,
    keep: int,
    kept_from: int,
    generation: int,
    seal: str,
    key: SigningKey | None,
    oldest: int,
) -> None:
    """Make ``retention.json`` cover a removal of every generation below *kept_from* (call under the lock, before it).

    Nothing is written when the record already covers this store (its thread, its ``keep``, its
    key): a save that prunes costs one ``stat`` here once this process has read the record. A
    record written where none of this thread could be read says that the generations below
    *oldest* (the oldest there is now) were gone before it: it never vouches for their pruning.

    :raises HandoffWriteError: if a record is needed and cannot be written (remove nothing then).
    """
    path = layout.path / RETENTION_NAME
    fingerprint = None if key is None else key.fingerprint
    try:
        st = path.lstat()
    except OSError:
        st = None
    before = oldest  # with no record of this thread, what is gone already is not accounted for
    if st is not None:
        identity = (st.st_ino, st.st_mtime_ns, st.st_size)
        if _KNOWN.get(os.fspath(path)) == (identity, thread_id, keep, fingerprint):
            return
        try:
            record = read_record(layout)
        except HandoffError:
            record = None  # damaged, or not a record: written anew
        account = account_from(record, thread_id=thread_id, keep=keep, key=key, oldest=oldest)
        if account is None:
            _remember(path, identity, thread_id, keep, fingerprint)
            return
        before = account
    write_record(
        layout,
        thread_id=thread_id,
        keep=keep,
        kept_from=kept_from,
        generation=generation,
        seal=seal,
        key=key,
        unaccounted_below=before,
    )
    try:
        st = path.lstat()
    except OSError:
        return
    _remember(path, (st.st_ino, st.st_mtime_ns, st.st_size), thread_id, keep, fingerprint)


def account_from(
    record: RetentionRecord | None, *, thread_id: str, keep: int, key: SigningKey | None, oldest: int
) -> int | None:
    """None when *record* already covers a store of *thread_id* keeping *keep* with *key*; else the
    ``unaccounted_below`` a new record is to carry: the old record's when this key made it (its own word
    carries over), else *oldest* (what is gone already is not accounted for)."""
    if record is not None and record.covers(thread_id, keep, key):
        return None
    if record is not None and record.thread_id == thread_id and record.signed_with(key):
        return record.unaccounted_below or 1
    return oldest


def _remember(path: Path, identity: tuple[int, int, int], thread_id: str, keep: int, fingerprint: str | None) -> None:
    if len(_KNOWN) >= _REMEMBERED:
        _KNOWN.clear()
    _KNOWN[os.fspath(path)] = (identity, thread_id, keep, fingerprint)


def read_record(layout: ThreadDir) -> RetentionRecord | None:
    """The thread's retention record, its signature verified; None if it has none.

    :raises HandoffValidationError: if the file is not a retention record (a field missing or wrong).
    :raises SignatureError: if its signature is malformed or does not verify over it (edited since).
    :raises HandoffParseError, HandoffTooLargeError, HandoffError: if it cannot be read as JSON.
    """
    path = layout.path / RETENTION_NAME
    try:
        data, _ = read_bytes(path, MAX_RECORD_BYTES, follow_symlinks=False)
    except HandoffNotFoundError:
        return None
    return decode_record(data, path)


def decode_record(data: bytes, path: str | os.PathLike[str]) -> RetentionRecord:
    """The record in *data* (the bytes of *path*, a file or an object), every field checked, its signature verified.

    :raises HandoffValidationError, SignatureError, HandoffParseError: as :func:`read_record`.
    """
    document = parse_json(data, path, limit=MAX_RECORD_BYTES)
    record = _record(document, path)
    if record.signature is not None:
        from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed record loads the signing layer

        try:
            sshsig.verify(record.signature, record.message(), path)
        except SignatureError as exc:
            msg = f"its signature does not verify over what it says (edited since it was signed): {exc.reason}"
            raise SignatureError(path, msg) from exc
    return record


def _record(document: Any, path: str | os.PathLike[str]) -> RetentionRecord:
    """The record in *document*, every field checked."""
    if not isinstance(document, dict) or document.get("kind") != _KIND:
        msg = f'not a retention record: "kind" is not "{_KIND}"'
        raise HandoffValidationError(path, msg)
    extra = sorted(set(document) - _FIELDS)
    if extra:
        msg = f"not a retention record: unknown field(s) {', '.join(extra)}"
        raise HandoffValidationError(path, msg)
    numbers: dict[str, int] = {}
    for name in ("keep", "kept_from", "generation"):
        value = document.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            msg = f'"{name}" must be a whole number, 1 or more, not {value!r}'
            raise HandoffValidationError(path, msg)
        numbers[name] = value
    texts = {name: document.get(name) for name in ("thread_id", "seal", "written_at")}
    for name, value in texts.items():
        if not isinstance(value, str) or not value or len(value) > 512 or "\n" in value:
            msg = f'"{name}" must be a one-line text'
            raise HandoffValidationError(path, msg)
    below = document.get("unaccounted_below")
    if below is not None and (isinstance(below, bool) or not isinstance(below, int) or below < 2):
        msg = f'"unaccounted_below" must be a whole number, 2 or more, not {below!r}'
        raise HandoffValidationError(path, msg)
    signature = document.get("signature")
    if signature is not None and (not isinstance(signature, str) or len(signature) > _MAX_ARMORED):
        msg = '"signature" is not an armored SSH signature'
        raise SignatureError(path, msg)
    try:
        written_at = dt.datetime.fromisoformat(str(texts["written_at"]))
    except ValueError as exc:
        msg = f'"written_at" is not a time: {exc}'
        raise HandoffValidationError(path, msg) from exc
    if written_at.tzinfo is None:
        msg = '"written_at" has no time zone'
        raise HandoffValidationError(path, msg)
    return RetentionRecord(
        str(texts["thread_id"]),
        numbers["keep"],
        numbers["kept_from"],
        numbers["generation"],
        str(texts["seal"]),
        written_at,
        signature,
        below,
    )
