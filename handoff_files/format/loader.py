"""The loader: read a handoff file strictly, check its version, validate it and verify its seal."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal, NoReturn

import pydantic

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, detect_format, parse, parse_json
from handoff_files.format.model import NATIVE_VERSIONS, PARSED, SCHEMA_VERSION, Handoff, integral
from handoff_files.format.versions import LEGACY_VERSIONS, check_version, migrate_document, verify_legacy_checksum
from handoff_files.format.wording import describe_errors
from handoff_files.foundation.atomic import Stamp, read_bytes
from handoff_files.foundation.collector import collector_paused
from handoff_files.foundation.errors import (
    ChecksumMismatchError,
    HandoffMigrationError,
    HandoffParseError,
    HandoffValidationError,
    UnsealedEditError,
)

__all__ = ["Origin", "decode", "load"]

#: Who may have written a file's bytes, which decides what a seal that does not match means
#: (the rule is in docs/format.md, "When the seal does not match: edit or damage"):
#:
#: - ``"file"``: a handoff file as a person may hold it. With the thread's record of its primary
#:   (``written``), that record tells exactly; without one, its content alone decides, never its
#:   file times: a mismatch is damage; a valid document with no seal, holding its layers, was
#:   written by hand.
#: - ``"store"``: a copy only the library writes (``history/``, a journal line, a rendering checked
#:   before it is written): nobody edits those, so any mismatch is damage.
#: - ``"edit"``: bytes a person edited on purpose (an edit's private copy, or a primary they said is
#:   theirs): a valid document that does not match its seal is their edit.
Origin = Literal["file", "store", "edit"]

#: The layers: a store's file holds every one after its seal; a file with none holds only the envelope.
_LAYERS: Final = ("narrative", "warnings", "priorities", "state", "decisions", "context")
#: A digest this close to the content's own (in hex digits) was damaged itself: an edit changes them all.
_NEAR_DIGITS: Final = 2

_HEX64: Final = re.compile(r"[0-9a-f]{64}")

#: How the bytes came to differ from what was sealed: rewritten by a person, damaged, or not known.
_Cause = Literal["edited", "damaged", "unknown"]


def load(
    path: str | os.PathLike[str],
    *,
    assume_version: str | None = None,
    follow_symlinks: bool = True,
    written: Callable[[], Stamp | None] | None = None,
    origin: Origin = "file",
    sealing: Callable[[], str | None] | None = None,
    cache: bool = False,
) -> Handoff:
    """Load one handoff file: parse strictly, check the version, verify, migrate, validate.

    A 0.8 or 1.0 file has its checksum over ``state`` verified, then is migrated to the current version in
    memory; the result is unsealed (``seal`` is None) and records ``lineage.migrated_from``.
    Never writes, never returns partial data.

    :param path: a ``.json`` or ``.yaml`` handoff (the format is told by content, not name).
    :param assume_version: the version of a file that does not say, as a person states it.
    :param written: when the file does not verify, gives its :data:`Stamp` as its writer left it
        (a thread's ``state.json`` records it for the primary): a file whose size or mtime differs
        was rewritten (an edit), one that still matches is damaged. Without it, or when it gives
        None, the content alone decides (see :data:`Origin`).
    :param origin: who may have written the file (see :data:`Origin`).
    :param sealing: when the file does not verify, gives what accepts a person's change in place of
        ``handoff seal`` (a thread whose generations only its program writes refuses it), or None
        for ``handoff seal``; called only then.
    :param cache: keep the verified handoff, and return that same object while the file is
        unchanged (same device, inode, size and times): a repeat load is an ``open`` and an
        ``fstat``. The object is shared: treat it as read-only (see :mod:`~handoff_files.format.loadcache`).
    :returns: the verified handoff.
    :raises HandoffNotFoundError: no such file.
    :raises HandoffParseError: not strict JSON / safe YAML, or too large, deep or malformed.
    :raises UnsupportedVersionError: no ``schema_version``, a non-string one, or an unknown one.
    :raises HandoffValidationError: the document does not match the schema.
    :raises UnsealedEditError: valid, but edited by a person after sealing, or written by hand with
        no seal (carries the parsed handoff).
    :raises ChecksumMismatchError: the content does not match its seal (or, for 0.8/1.0, its
        checksum) and is not known to be a person's edit: damage.
    :raises HandoffMigrationError: an older document could not be migrated.
    """

    def decoded(data: bytes, st: os.stat_result) -> Handoff:
        stamp = (st.st_size, st.st_mtime_ns)
        return decode(
            data,
            Path(path),
            assume_version=assume_version,
            stamp=stamp,
            written=written,
            origin=origin,
            sealing=sealing,
        )

    if cache:  # a hit builds no Path: at ~1 µs an open, that is a third of it
        from handoff_files.format.loadcache import CACHE  # noqa: PLC0415 -- a command's start needs none of it

        return CACHE.load(
            os.fspath(path),
            limit=MAX_FILE_BYTES,
            follow_symlinks=follow_symlinks,
            assume_version=assume_version,
            decode=decoded,
        )
    return decoded(*read_bytes(Path(path), MAX_FILE_BYTES, follow_symlinks=follow_symlinks))


def decode(
    data: bytes,
    path: str | os.PathLike[str],
    *,
    mtime: float | None = None,  # accepted from older callers: file times decide nothing
    assume_version: str | None = None,
    stamp: Stamp | None = None,
    written: Callable[[], Stamp | None] | None = None,
    origin: Origin = "file",
    sealing: Callable[[], str | None] | None = None,
) -> Handoff:
    """Decode and verify handoff bytes as :func:`load` does (*path* is only named in errors).

    :param mtime: ignored: a file's times do not tell an edit from damage (a copy or a checkout
        gives every file a new one); kept so callers that pass it still work.
    :param stamp: the file's size and mtime (ns) now, compared with *written* (see :func:`load`).
    :param origin: who may have written the bytes (see :data:`Origin`).
    :param sealing: what accepts a person's change instead of ``handoff seal`` (see :func:`load`).
    """
    cause = functools.partial(_cause, origin=origin, stamp=stamp, written=written)
    advice = functools.partial(_advice, sealing)
    with collector_paused():  # the p99 of a large load is the collector's (see foundation/collector.py)
        return _decode(data, path, cause=cause, origin=origin, assume_version=assume_version, advice=advice)


def _decode(
    data: bytes,
    path: str | os.PathLike[str],
    *,
    cause: Callable[[], _Cause],
    origin: Origin,
    assume_version: str | None,
    advice: Callable[[str], str],
) -> Handoff:
    document = _parse_named(data, path)
    assumed = assume_version is not None and "schema_version" not in document
    if assumed:
        document = {"schema_version": assume_version, **document}
    version = check_version(document, path)
    if version in LEGACY_VERSIONS:
        return _migrated(document, path, assumed=assumed)
    # the seal covers the values the model holds: an integer written 2.0 is sealed as 2
    document = integral(document)
    sealed = _seal_matches(document)
    try:
        handoff = Handoff.model_validate(document, context={PARSED: True})
    except pydantic.ValidationError as exc:
        problem = describe(exc)
        how = cause() if sealed is not True else "edited"
        # a seal that does not match a document that does not validate: damage, unless a person
        # rewrote it (their mistake to mend), or wrote it by hand with no seal at all
        if how == "damaged" or (how == "unknown" and sealed is False):
            msg = f"content does not match its seal and is not a valid handoff: corrupt ({problem})"
            raise ChecksumMismatchError(path, msg) from exc
        msg = f"not a valid {version if version in NATIVE_VERSIONS else SCHEMA_VERSION} handoff: {problem}"
        raise HandoffValidationError(path, msg) from exc
    if sealed:
        return handoff
    how = cause()
    if sealed is None:
        _refuse_unsealed(document, path, handoff, how=how, origin=origin, advice=advice)
    if how == "edited":
        msg = f"edited after sealing: the seal no longer matches; {advice('`handoff seal` accepts the edit')}"
        raise UnsealedEditError(path, msg, handoff)
    raise ChecksumMismatchError(path, _damage(document, how=how, origin=origin, advice=advice))


def _parse_named(data: bytes, path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`parse` *data*; a file named ``.json`` that parses as neither is told as invalid JSON first.

    The codec tells the format by content, so damage to a JSON file's first ``{`` reads as YAML:
    for a ``.json`` file the reason gives JSON's error, then YAML's.
    """
    try:
        return parse(data, path)
    except HandoffParseError as exc:
        if (
            not os.fspath(path).endswith(".json")
            or detect_format(data) == "json"
            or not exc.reason.startswith("invalid YAML")
        ):
            raise
        try:
            parse_json(data, path)
        except HandoffParseError as json_exc:
            msg = f"{json_exc.reason} (nor is it YAML: {exc.reason.removeprefix('invalid YAML: ')})"
            raise HandoffParseError(path, msg) from exc
        raise  # JSON after all (a document that is not a mapping): YAML's reason stands


def _advice(sealing: Callable[[], str | None] | None, default: str) -> str:
    """What accepts a person's change: *default* (``handoff seal`` …), or what *sealing* gives instead."""
    instead = sealing() if sealing is not None else None
    return instead or default


def _refuse_unsealed(
    document: dict[str, Any],
    path: str | os.PathLike[str],
    handoff: Handoff,
    *,
    how: _Cause,
    origin: Origin,
    advice: Callable[[str], str],
) -> NoReturn:
    """Refuse a valid document with no seal: written by hand (an edit), or a store's file cut short (damage)."""
    if (how == "edited" and origin == "edit") or (how == "unknown" and any(key in document for key in _LAYERS)):
        msg = f"valid handoff with no seal (written or edited by hand); {advice('`handoff seal` accepts it')}"
        raise UnsealedEditError(path, msg, handoff)
    if origin == "store":
        msg = "no seal, in a copy only handoff writes (it always seals them): corrupt"
        raise ChecksumMismatchError(path, msg)
    if how == "unknown":
        # the store writes the envelope, then the seal, then the layers: an envelope alone was cut short
        why = "and no layers: only the envelope a store writes before its seal, so it was cut short"
    else:  # the thread's record of its primary: the store always writes a seal there
        why = "and the file was " + ("rewritten without one (truncated?)" if how == "edited" else "not rewritten")
    by_hand = advice("if you wrote it by hand, `handoff seal` shows it and asks before it accepts it")
    msg = f"no seal, {why}: corrupt ({by_hand})"
    raise ChecksumMismatchError(path, msg)


def _damage(document: dict[str, Any], *, how: _Cause, origin: Origin, advice: Callable[[str], str]) -> str:
    """Why a document whose seal does not match is damaged, and what to do (a message)."""
    if origin == "store":
        head, why = "content does not match its seal", "a copy only handoff writes, never a person: damaged, not edited"
    elif how == "damaged":
        head = "content does not match its seal and the file was not rewritten after sealing"
        why = advice("if you edited it on purpose, `handoff seal` shows the change and asks before it accepts it")
    else:
        head = "content does not match its seal"
        told = advice("a change to a thread's primary is told exactly: `handoff seal THREAD` shows it and asks")
        why = f"a file on its own keeps no record of its writing, so a mismatch is never taken for an edit; {told}"
    seal_hurt = _seal_damage(document)
    return f"{head}: corrupt ({seal_hurt + '; ' if seal_hurt else ''}{why})"


def _seal_damage(document: dict[str, Any]) -> str:
    """What is wrong with the seal itself, if that is what the damage hit (empty if not told)."""
    seal = document.get("seal")
    if not isinstance(seal, dict):
        return "its seal is not a mapping"
    algorithm, recorded = seal.get("algorithm"), seal.get("digest")
    if not isinstance(algorithm, str) or algorithm not in sealing.ALGORITHMS:
        return f"its seal names no known algorithm ({algorithm!r})"
    if not isinstance(recorded, str) or not _HEX64.fullmatch(recorded):
        return "its seal's digest is not 64 hex digits"
    try:
        actual = sealing.digest(sealing.canonical(document), algorithm)
    except ValueError:
        return ""
    differing = sum(a != b for a, b in zip(actual, recorded, strict=True))
    if differing <= _NEAR_DIGITS:
        return f"the seal itself is damaged: {differing} of its digest's 64 hex digits differ from the content's"
    return ""


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


def _cause(
    *,
    origin: Origin,
    stamp: Stamp | None,
    written: Callable[[], Stamp | None] | None,
) -> _Cause:
    """How bytes that do not match their seal came to differ: never told from file times alone."""
    if origin == "store":
        return "damaged"  # nobody edits history/ or a journal line: whatever changed them is damage
    if origin == "edit":
        return "edited"
    left = written() if written is not None and stamp is not None else None
    if left is not None:
        return "edited" if stamp != left else "damaged"  # exact: an edit changes the size or mtime, bit rot neither
    return "unknown"


def describe(exc: pydantic.ValidationError, *, limit: int = 3) -> str:
    """Summarise a pydantic error in our own words (``where: expected …, found …``), at most *limit* parts.

    One wording for every reader of a file, a request, a descriptor or a context: :mod:`.wording`.
    """
    return describe_errors(exc, limit=limit)
