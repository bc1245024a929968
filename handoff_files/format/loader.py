"""The loader: read a handoff file strictly, check its version, validate it and verify its seal."""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pydantic

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, parse
from handoff_files.format.model import PARSED, SCHEMA_VERSION, Handoff
from handoff_files.format.versions import LEGACY_VERSIONS, check_version, migrate_document, verify_legacy_checksum
from handoff_files.foundation.atomic import Stamp, read_bytes
from handoff_files.foundation.collector import collector_paused
from handoff_files.foundation.errors import (
    ChecksumMismatchError,
    HandoffMigrationError,
    HandoffValidationError,
    UnsealedEditError,
)

__all__ = ["EDIT_SLACK_SECONDS", "decode", "load"]

#: A file rewritten more than this long after its ``created_at`` was edited after sealing; a
#: seal mismatch in a file nobody rewrote is corruption (bit rot changes bytes, not mtimes).
EDIT_SLACK_SECONDS: Final = 2.0

_HEX64: Final = re.compile(r"[0-9a-f]{64}")


def load(
    path: str | os.PathLike[str],
    *,
    assume_version: str | None = None,
    follow_symlinks: bool = True,
    written: Callable[[], Stamp | None] | None = None,
) -> Handoff:
    """Load one handoff file: parse strictly, check the version, verify, migrate, validate.

    A 0.8 or 1.0 file has its checksum over ``state`` verified, then is migrated to 2.0 in
    memory; the result is unsealed (``seal`` is None) and records ``lineage.migrated_from``.
    Never writes, never returns partial data.

    :param path: a ``.json`` or ``.yaml`` handoff (the format is told by content, not name).
    :param assume_version: the version of a file that does not say, as a person states it.
    :param written: when the file does not verify, gives its :data:`Stamp` as its writer left it
        (a thread's ``state.json`` records it): a file whose size or mtime differs was rewritten
        (an edit), one that still matches is corrupt. Without it, or when it gives None, a file
        rewritten more than :data:`EDIT_SLACK_SECONDS` after its ``created_at`` counts as edited.
    :returns: the verified handoff.
    :raises HandoffNotFoundError: no such file.
    :raises HandoffParseError: not strict JSON / safe YAML, or too large, deep or malformed.
    :raises UnsupportedVersionError: no ``schema_version``, a non-string one, or an unknown one.
    :raises HandoffValidationError: the document does not match the schema.
    :raises UnsealedEditError: valid, but edited after sealing (carries the parsed handoff).
    :raises ChecksumMismatchError: the content does not match its seal (or, for 0.8/1.0, its
        checksum) and nobody rewrote the file.
    :raises HandoffMigrationError: an older document could not be migrated.
    """
    target = Path(path)
    data, st = read_bytes(target, MAX_FILE_BYTES, follow_symlinks=follow_symlinks)
    stamp = (st.st_size, st.st_mtime_ns)
    return decode(data, target, mtime=st.st_mtime, assume_version=assume_version, stamp=stamp, written=written)


def decode(
    data: bytes,
    path: str | os.PathLike[str],
    *,
    mtime: float | None = None,
    assume_version: str | None = None,
    stamp: Stamp | None = None,
    written: Callable[[], Stamp | None] | None = None,
) -> Handoff:
    """Decode and verify handoff bytes as :func:`load` does (*path* is only named in errors).

    :param mtime: when the bytes were last written, if known; tells an edit from corruption.
    :param stamp: the file's size and mtime (ns) now, compared with *written* (see :func:`load`).
    """
    rewritten = functools.partial(_rewritten, mtime=mtime, stamp=stamp, written=written)
    with collector_paused():  # the p99 of a large load is the collector's (see foundation/collector.py)
        return _decode(data, path, rewritten=rewritten, assume_version=assume_version)


def _decode(
    data: bytes,
    path: str | os.PathLike[str],
    *,
    rewritten: Callable[[dict[str, Any]], tuple[bool, bool]],
    assume_version: str | None,
) -> Handoff:
    document = parse(data, path)
    assumed = assume_version is not None and "schema_version" not in document
    if assumed:
        document = {"schema_version": assume_version, **document}
    version = check_version(document, path)
    if version in LEGACY_VERSIONS:
        return _migrated(document, path, assumed=assumed)
    sealed = _seal_matches(document)
    try:
        handoff = Handoff.model_validate(document, context={PARSED: True})
    except pydantic.ValidationError as exc:
        problem = describe(exc)
        if sealed is not True and not rewritten(document)[0]:
            msg = f"content does not match its seal and is not a valid handoff: corrupt ({problem})"
            raise ChecksumMismatchError(path, msg) from exc
        msg = f"not a valid {SCHEMA_VERSION} handoff: {problem}"
        raise HandoffValidationError(path, msg) from exc
    if sealed:
        return handoff
    edited, exact = rewritten(document) if not sealed else (False, False)
    if sealed is None and edited and not exact:
        msg = "valid handoff with no seal (written or edited by hand); `handoff seal` accepts it"
        raise UnsealedEditError(path, msg, handoff)
    if sealed is None:
        # the store always writes a seal: a file of its with none was cut short, or replaced by hand
        why = "was rewritten without one (truncated?)" if exact else "was not rewritten after it was sealed"
        msg = (
            f"no seal, and the file {why}: corrupt (if you wrote it by hand, `handoff seal` shows it and asks "
            "before it accepts it)"
        )
        raise ChecksumMismatchError(path, msg)
    if edited:
        msg = "edited after sealing: the seal no longer matches; `handoff seal` accepts the edit"
        raise UnsealedEditError(path, msg, handoff)
    msg = (
        "content does not match its seal and the file was not rewritten after sealing: corrupt "
        "(if you edited it on purpose, `handoff seal` shows the change and asks before it accepts it)"
    )
    raise ChecksumMismatchError(path, msg)


def _migrated(document: dict[str, Any], path: str | os.PathLike[str], *, assumed: bool) -> Handoff:
    """Verify an older document's own checksum, migrate it in memory, validate the result."""
    verify_legacy_checksum(document, path)
    migrated = migrate_document(document, path, assumed=assumed)
    try:
        return Handoff.model_validate(migrated, context={PARSED: True})
    except pydantic.ValidationError as exc:
        msg = f"{document['schema_version']} handoff does not migrate to a valid {SCHEMA_VERSION} one: {describe(exc)}"
        raise HandoffMigrationError(path, msg) from exc


def _seal_matches(document: dict[str, Any]) -> bool | None:
    """True/False when the document carries a usable seal, None when it carries none."""
    seal = document.get("seal")
    if seal is None:
        return None
    if not isinstance(seal, dict):
        return False
    algorithm, expected = seal.get("algorithm"), seal.get("digest")
    if not isinstance(algorithm, str) or algorithm not in sealing.ALGORITHMS:
        return False
    if not isinstance(expected, str) or not _HEX64.fullmatch(expected):
        return False  # compare_digest takes only ASCII: a damaged digest is simply a mismatch
    return sealing.matches(sealing.canonical(document), algorithm, expected)


def _rewritten(
    document: dict[str, Any],
    *,
    mtime: float | None,
    stamp: Stamp | None,
    written: Callable[[], Stamp | None] | None,
) -> tuple[bool, bool]:
    """Whether the file was rewritten after its writer left it (an edit), not damaged in place, and
    whether that is known exactly (its writer's stamp was recorded) rather than guessed from times."""
    left = written() if written is not None and stamp is not None else None
    if left is not None:
        return stamp != left, True  # exact: an edit changes the size or mtime, bit rot neither
    if mtime is None:
        return False, False  # bytes with no file behind them: call a mismatch corruption, which hands out no data
    created = document.get("created_at")
    try:
        sealed_at = dt.datetime.fromisoformat(created).timestamp() if isinstance(created, str) else None
    except ValueError:
        sealed_at = None
    return sealed_at is None or mtime > sealed_at + EDIT_SLACK_SECONDS, False


def describe(exc: pydantic.ValidationError, *, limit: int = 3) -> str:
    """Summarise a pydantic error as ``field.path: message`` parts, at most *limit* of them."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "document"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)
