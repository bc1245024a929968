"""Where a saver on object storage keeps each checkpoint and write: keys under its ``s3://bucket/prefix``.

``<thread>/<namespace>/checkpoints/<checkpoint_id>.json`` holds one checkpoint;
``<thread>/<namespace>/writes/<checkpoint_id>/<task_id>.json`` the pending writes of one task. Each name is
kept as it is when it is letters, digits, ``-`` and ``_`` (a uuid, ``importer-fix``), starting with a
letter or digit; any other (the root namespace ``""``, ``child:…|…``) is ``_`` and the base32 of its
UTF-8 bytes, so every key is a storage key (:func:`~handoff_files.storage.seam.check_key`) and every
name reads back exactly from a listing. Checkpoint ids sort as LangGraph's do (by the id itself).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Final

import orjson

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.errors import HandoffError, HandoffValidationError

__all__ = [
    "KIND",
    "WRITE_KIND",
    "Found",
    "check_shape",
    "checked_size",
    "checkpoint_key",
    "encode_name",
    "parse_key",
    "sealed",
    "thread_prefix",
    "write_key",
    "writes_prefix",
]

#: What a checkpoint object says it is (a write object says ``…-write@1``).
KIND: Final = "handoff-files/langgraph-checkpoint@1"
WRITE_KIND: Final = "handoff-files/langgraph-write@1"

_RAW: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_ENCODED: Final = re.compile(r"_[a-z2-7]{0,127}")
# base32 turns 5 bytes into 8 characters: past this a name does not fit one part of a key
_MAX_ENCODED_BYTES: Final = 79
_CHECKPOINTS: Final = "checkpoints"
_WRITES: Final = "writes"


def encode_name(name: str, what: str, where: str) -> str:
    """*name* as one part of a key (see the module's docstring).

    :raises HandoffValidationError: naming *what* (``thread_id``) and *where*, for a name not a string, or too long.
    """
    if not isinstance(name, str):
        raise HandoffValidationError(where, f"{what} must be a string, not {type(name).__name__}")
    if _RAW.fullmatch(name):
        return name
    data = name.encode("utf-8", "surrogatepass")
    if len(data) > _MAX_ENCODED_BYTES:
        msg = (
            f"{what} {name[:40]!r}… is too long for a key on object storage: at most {_MAX_ENCODED_BYTES} bytes, "
            "or 128 letters, digits, '-' and '_'"
        )
        raise HandoffValidationError(where, msg)
    return "_" + base64.b32encode(data).decode("ascii").rstrip("=").lower()


def decode_name(part: str) -> str | None:
    """The name *part* encodes, or None if it is not a part :func:`encode_name` makes."""
    if _RAW.fullmatch(part):
        return part
    if not _ENCODED.fullmatch(part):
        return None
    body = part[1:].upper()
    try:
        name = base64.b32decode(body + "=" * (-len(body) % 8)).decode("utf-8", "surrogatepass")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    try:  # one name, one part: another spelling of it (padding bits set, a raw name encoded) is not this saver's
        return name if encode_name(name, "name", part) == part else None
    except HandoffValidationError:
        return None


def thread_prefix(thread: str, ns: str | None = None) -> str:
    """``<thread>/`` or ``<thread>/<ns>/`` (encoded parts)."""
    return f"{thread}/" if ns is None else f"{thread}/{ns}/"


def checkpoint_key(thread: str, ns: str, checkpoint: str) -> str:
    return f"{thread}/{ns}/{_CHECKPOINTS}/{checkpoint}.json"


def writes_prefix(thread: str, ns: str, checkpoint: str) -> str:
    return f"{thread}/{ns}/{_WRITES}/{checkpoint}/"


def write_key(thread: str, ns: str, checkpoint: str, task: str) -> str:
    """The object holding every pending write of one task for one checkpoint."""
    return f"{writes_prefix(thread, ns, checkpoint)}{task}.json"


@dataclass(frozen=True, slots=True)
class Found:
    """A key a listing found, read back: its thread, namespace and checkpoint (names, not parts), and the key."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    key: str
    write: bool


def parse_key(key: str) -> Found | None:
    """What *key* holds, or None for a key this saver does not write (another program's object: passed over)."""
    parts = key.split("/")
    if len(parts) == 4 and parts[2] == _CHECKPOINTS and parts[3].endswith(".json"):
        names = [decode_name(parts[0]), decode_name(parts[1]), decode_name(parts[3].removesuffix(".json"))]
        write = False
    elif len(parts) == 5 and parts[2] == _WRITES and parts[4].endswith(".json"):
        names = [decode_name(parts[0]), decode_name(parts[1]), decode_name(parts[3])]
        write = True
    else:
        return None
    thread_id, checkpoint_ns, checkpoint_id = names
    if thread_id is None or checkpoint_ns is None or checkpoint_id is None:
        return None
    return Found(thread_id, checkpoint_ns, checkpoint_id, key, write)


def check_shape(document: dict[str, Any], kind: str, named: str) -> None:
    """Check that *document* (sealed, of *kind*) has the fields this saver writes, of the types it writes.

    :raises HandoffError: naming *named*, if it does not (sealed by someone else's program, say).
    """
    if kind == KIND:
        ok = (
            isinstance(document.get("checkpoint"), dict)
            and isinstance(document.get("metadata"), dict)
            and isinstance(document.get("channel_values", {}), dict)
            and isinstance(document.get("parent_checkpoint_id"), str | None)
        )
    else:
        writes = document.get("writes")
        ok = (
            isinstance(writes, list)
            and isinstance(document.get("task_id"), str)
            and isinstance(document.get("task_path"), str)
            and all(_is_write(write) for write in writes)
        )
    if not ok:
        raise HandoffError(named, f"sealed, but not a {kind} object as this saver writes one (fields missing or odd)")


def _is_write(write: object) -> bool:
    return (
        isinstance(write, dict)
        and type(write.get("idx")) is int
        and isinstance(write.get("channel"), str)
        and isinstance(write.get("value"), dict)
    )


def checked_size(data: bytes, named: str) -> bytes:
    """*data*, if a reader will take it (at most :data:`~handoff_files.format.codec.MAX_FILE_BYTES`).

    :raises HandoffValidationError: naming *named*, if it is larger (nothing is written then).
    """
    if len(data) > MAX_FILE_BYTES:
        msg = (
            f"it would be {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for one record "
            "(values over 256 KiB each are objects of their own; this holds too many smaller ones): not written"
        )
        raise HandoffValidationError(named, msg)
    return data


def sealed(record: dict[str, Any]) -> bytes:
    """*record* with its seal (a digest over its canonical JSON), as indented JSON a person can read."""
    algorithm = sealing.DEFAULT_ALGORITHM
    seal = {"algorithm": algorithm, "digest": sealing.digest(sealing.canonical(record), algorithm)}
    return orjson.dumps({**record, "seal": seal}, option=orjson.OPT_INDENT_2) + b"\n"
