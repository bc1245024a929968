"""The loader: read a handoff file strictly, check its version, validate it and verify its seal."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, Final

import pydantic

from handoff_files import seal as sealing
from handoff_files.atomic import read_bytes
from handoff_files.codec import MAX_FILE_BYTES, parse
from handoff_files.errors import (
    ChecksumMismatchError,
    HandoffValidationError,
    UnsealedEditError,
    UnsupportedVersionError,
)
from handoff_files.model import PARSED, SCHEMA_VERSION, Handoff

__all__ = ["EDIT_SLACK_SECONDS", "KNOWN_VERSIONS", "decode", "load"]

#: Versions this library reads, oldest first.
KNOWN_VERSIONS: Final = (SCHEMA_VERSION,)

#: A file rewritten more than this long after its ``created_at`` was edited after sealing; a
#: seal mismatch in a file nobody rewrote is corruption (bit rot changes bytes, not mtimes).
EDIT_SLACK_SECONDS: Final = 2.0


def load(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> Handoff:
    """Load one handoff file: parse strictly, check the version, validate, verify the seal.

    Never writes, never returns partial data.

    :param path: a ``.json`` or ``.yaml`` handoff (the format is told by content, not name).
    :returns: the verified handoff.
    :raises HandoffNotFoundError: no such file.
    :raises HandoffParseError: not strict JSON / safe YAML, or too large, deep or malformed.
    :raises UnsupportedVersionError: no ``schema_version``, a non-string one, or an unknown one.
    :raises HandoffValidationError: the document does not match the schema.
    :raises UnsealedEditError: valid, but edited after sealing (carries the parsed handoff).
    :raises ChecksumMismatchError: the content does not match its seal and nobody rewrote the file.
    """
    target = Path(path)
    data, st = read_bytes(target, MAX_FILE_BYTES, follow_symlinks=follow_symlinks)
    return decode(data, target, mtime=st.st_mtime)


def decode(data: bytes, path: str | os.PathLike[str], *, mtime: float | None = None) -> Handoff:
    """Decode and verify handoff bytes as :func:`load` does (*path* is only named in errors).

    :param mtime: when the bytes were last written, if known; tells an edit from corruption.
    """
    document = parse(data, path)
    check_version(document, path)
    sealed = _seal_matches(document)
    try:
        handoff = Handoff.model_validate(document, context={PARSED: True})
    except pydantic.ValidationError as exc:
        problem = describe(exc)
        if sealed is not True and not _rewritten(document, mtime):
            msg = f"content does not match its seal and is not a valid handoff: corrupt ({problem})"
            raise ChecksumMismatchError(path, msg) from exc
        msg = f"not a valid {SCHEMA_VERSION} handoff: {problem}"
        raise HandoffValidationError(path, msg) from exc
    if sealed:
        return handoff
    if sealed is None and _rewritten(document, mtime):
        msg = "valid handoff with no seal (written or edited by hand); `handoff seal` accepts it"
        raise UnsealedEditError(path, msg, handoff)
    if sealed is None:
        msg = "no seal, and the file was not rewritten after it was sealed: truncated or corrupt"
        raise ChecksumMismatchError(path, msg)
    if _rewritten(document, mtime):
        msg = "edited after sealing: the seal no longer matches; `handoff seal` accepts the edit"
        raise UnsealedEditError(path, msg, handoff)
    msg = (
        "content does not match its seal and the file was not rewritten after sealing: corrupt "
        "(if you did edit it on purpose, `handoff seal` accepts the edit)"
    )
    raise ChecksumMismatchError(path, msg)


def check_version(document: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """Return the document's ``schema_version`` if this library reads it.

    :raises UnsupportedVersionError: missing, not a string, or unknown (older or newer).
    """
    if "schema_version" not in document:
        msg = f"no schema_version: refusing to guess the format (this library reads {', '.join(KNOWN_VERSIONS)})"
        raise UnsupportedVersionError(path, msg)
    version = document["schema_version"]
    if not isinstance(version, str):
        msg = f"schema_version must be a string such as {SCHEMA_VERSION!r}, found {version!r}"
        raise UnsupportedVersionError(path, msg)
    if version in KNOWN_VERSIONS:
        return version
    if _newer(version, KNOWN_VERSIONS[-1]):
        msg = (
            f"schema_version {version!r} is newer than {KNOWN_VERSIONS[-1]!r}, the newest this library reads; "
            "upgrade handoff-files"
        )
    else:
        msg = f"schema_version {version!r} is not one this library reads ({', '.join(KNOWN_VERSIONS)})"
    raise UnsupportedVersionError(path, msg)


def _newer(version: str, than: str) -> bool:
    def key(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    try:
        return key(version) > key(than)
    except ValueError:
        return False


def _seal_matches(document: dict[str, Any]) -> bool | None:
    """True/False when the document carries a usable seal, None when it carries none."""
    seal = document.get("seal")
    if seal is None:
        return None
    if not isinstance(seal, dict):
        return False
    algorithm, expected = seal.get("algorithm"), seal.get("digest")
    if not isinstance(algorithm, str) or algorithm not in sealing.ALGORITHMS or not isinstance(expected, str):
        return False
    return sealing.matches(sealing.canonical(document), algorithm, expected)


def _rewritten(document: dict[str, Any], mtime: float | None) -> bool:
    """Whether the file was written well after the moment it was sealed (an edit)."""
    if mtime is None:
        return False  # bytes with no file behind them: call a mismatch corruption, which hands out no data
    created = document.get("created_at")
    try:
        sealed_at = dt.datetime.fromisoformat(created).timestamp() if isinstance(created, str) else None
    except ValueError:
        sealed_at = None
    return sealed_at is None or mtime > sealed_at + EDIT_SLACK_SECONDS


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
