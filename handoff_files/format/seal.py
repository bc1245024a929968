"""The seal: a named digest over the canonical JSON of a document without its seal."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import blake3
import orjson

__all__ = ["ALGORITHMS", "DEFAULT_ALGORITHM", "canonical", "digest", "matches", "self_check"]

Algorithm = Literal["blake3", "blake2b", "sha256"]

#: Chosen by measurement (bench/bench_hash.py): blake3 hashes a 1 MB handoff ~5x faster than
#: sha256 on this machine, even with SHA extensions. sha256 and blake2b stay readable.
DEFAULT_ALGORITHM: Final[Algorithm] = "blake3"


def _blake2b(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _blake3(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


ALGORITHMS: Final[Mapping[str, Callable[[bytes], str]]] = {
    "blake3": _blake3,
    "blake2b": _blake2b,
    "sha256": _sha256,
}


def canonical(document: Mapping[str, Any], *, without: str = "seal") -> bytes:
    """Encode *document* without its ``seal`` key (or the key named by *without*) as canonical JSON.

    Canonical means: keys sorted, compact separators, UTF-8, no NaN or Infinity (callers pass
    validated JSON-mode data, so none can occur), numbers as orjson writes them.

    :param document: a JSON-mode mapping (strings, numbers, booleans, null, lists, mappings).
    :returns: the bytes the seal is computed over.
    :raises ValueError: if a value has no canonical form (a lone surrogate, an integer past 64 bits).
    """
    body = {key: value for key, value in document.items() if key != without}
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        msg = f"no canonical JSON form: {exc}"
        raise ValueError(msg) from exc


def digest(data: bytes, algorithm: str = DEFAULT_ALGORITHM) -> str:
    """Return the hex digest of *data* under *algorithm*.

    :raises KeyError: if the algorithm is not one of :data:`ALGORITHMS`.
    """
    return ALGORITHMS[algorithm](data)


def matches(data: bytes, algorithm: str, expected: str) -> bool:
    """Tell whether *data* hashes to *expected* under *algorithm* (constant-time compare)."""
    return hmac.compare_digest(digest(data, algorithm), expected)


def self_check(fields: Mapping[str, Any]) -> str:
    """The sha256 of *fields* without their ``check`` key, in canonical JSON: how state.json and
    each journal line check themselves (sha256 always: these small files are not a hot path).

    :raises ValueError: as :func:`canonical` does.
    """
    return hashlib.sha256(canonical(fields, without="check")).hexdigest()
