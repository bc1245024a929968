"""A checkpoint file read the saver's way: parsed strictly, its seal verified, its record taken, in one pass.

The saver reads only the envelope's generation and the LangGraph record under
``state.data.langgraph``; building a whole :class:`~handoff_files.format.model.Handoff` for that
costs pydantic's validation of every layer (and, in a fresh process, building its validator: ~5 ms
of a first ``get_state``). So a checkpoint file whose bytes parse under the codec's strict rules,
whose seal matches its content (and whose signature, if it has one, verifies over the seal) and
whose generation and record have the shapes the saver needs is read from the parsed document
alone. Anything else goes through the loader, which says exactly what is wrong (or reads what it
can), so every refusal is the loader's (a signature that does not verify is ``SignatureError``).

What this passes over is only the layers' schema, which the saver never reads: the seal proves the
bytes are those its writer sealed (and the saver's own writer seals only validated handoffs), and
a writer who can forge a seal can forge a valid layer as easily (docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, parse_json
from handoff_files.format.loader import Origin, load
from handoff_files.format.model import MAX_INT, NATIVE_VERSIONS, integral
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import HandoffError, UnsupportedVersionError
from handoff_files.thread.signatures import seal_signature_damage, verified

__all__ = ["FORMAT", "CheckpointFile", "read_checkpoint", "record_in"]

#: The version of the LangGraph record inside a checkpoint file this release writes; a newer one is refused.
FORMAT: Final = 1


@dataclass(frozen=True, slots=True)
class CheckpointFile:
    """What the saver reads of one checkpoint file: its generation and its LangGraph record (a fresh dict)."""

    generation: int
    record: dict[str, Any]


def record_in(data: object, where: Path) -> dict[str, Any]:
    """The LangGraph record in a checkpoint's ``state.data`` (*data*).

    :raises HandoffError: if there is none.
    :raises UnsupportedVersionError: if it is of a newer format than this release reads.
    """
    record = data.get("langgraph") if isinstance(data, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("format"), int):
        msg = "a valid handoff, but not a LangGraph checkpoint (no state.data.langgraph record)"
        raise HandoffError(where, msg)
    if record["format"] > FORMAT:
        msg = f"LangGraph checkpoint format {record['format']} is newer than this release reads ({FORMAT}); upgrade"
        raise UnsupportedVersionError(where, msg)
    return record


def read_checkpoint(path: Path, *, origin: Origin = "store") -> CheckpointFile:
    """Read the checkpoint file at *path* (never through a symbolic link).

    :param origin: who may have written it, as the loader takes it: ``"store"`` for ``history/``,
        ``"file"`` for the primary a person may edit.
    :raises HandoffError: as :func:`~handoff_files.format.loader.load` does, and as :func:`record_in`.
    """
    data, _ = read_bytes(path, MAX_FILE_BYTES, follow_symlinks=False)
    found = _sealed_checkpoint(data, path)
    if found is not None:
        return found
    handoff = verified(load(path, follow_symlinks=False, origin=origin), path)  # says what is wrong, or reads it
    return CheckpointFile(handoff.generation, record_in(handoff.state.data, path))


def _sealed_checkpoint(data: bytes, path: Path) -> CheckpointFile | None:
    """The checkpoint in *data* when it parses, its seal matches and its shapes are the saver's; else None."""
    try:
        parsed = parse_json(data, path)
        if not isinstance(parsed, dict) or parsed.get("schema_version") not in NATIVE_VERSIONS:
            return None
        document = integral(parsed)  # the seal covers the values the model holds, as the loader's does
        if not _shaped(document):
            return None
        seal = document["seal"]
        if not sealing.matches(sealing.canonical(document), seal["algorithm"], seal["digest"]):
            return None
        signature = seal.get("signature")
        if signature is not None and seal_signature_damage(f"{seal['algorithm']}:{seal['digest']}", signature, path):
            return None  # a signature that does not verify is damage: the loader's path refuses it, saying why
        return CheckpointFile(document["generation"], record_in(document["state"].get("data"), path))
    except (HandoffError, ValueError):
        return None  # the loader says what is wrong


def _shaped(document: dict[str, Any]) -> bool:
    """Whether the seal, generation and state the saver reads have the shapes the format gives them."""
    seal, generation, state = document.get("seal"), document.get("generation"), document.get("state")
    return (
        isinstance(seal, dict)
        and isinstance(seal.get("algorithm"), str)
        and seal["algorithm"] in sealing.ALGORITHMS
        and isinstance(seal.get("digest"), str)
        and type(generation) is int
        and 1 <= generation <= MAX_INT
        and isinstance(state, dict)
    )
