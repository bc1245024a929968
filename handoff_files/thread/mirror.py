"""The mirror: ``state.json``, the state layer and running totals of the generation it mirrors.

A store with a signing key signs what a save puts in it (:func:`state_message`: the generation,
its seal, the ids, the time and a digest of the state layer), not the totals an acknowledgement
rewrites: the signature travels unchanged through those rewrites, and a thread rebuilt from
``state.json`` alone says who vouched for its state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from handoff_files.format import seal as sealing
from handoff_files.format.codec import parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import HandoffError, SignatureError
from handoff_files.thread.layout import MIRROR_NAME

__all__ = [
    "MIRROR_NAME",
    "Mirror",
    "mirror_bytes",
    "mirror_of",
    "primary_stamp",
    "read_mirror",
    "state_message",
    "verify_mirror",
]

_KIND: Final = "handoff-files/state"
_STATE_HEAD: Final = "handoff-files state 1"
_MAX_ARMORED: Final = 4096
_MAX_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Mirror:
    """What ``state.json`` says: the generation and seal it mirrors, its state layer, and totals."""

    generation: int
    seal: str
    agent_id: str
    thread_id: str
    created_at: str
    state: dict[str, Any]
    saves: int
    last_restore: dict[str, Any] | None
    primary_written: tuple[int, int] | None = None  # the primary as its writer left it: size, mtime (ns)
    signature: str | None = None  # the saver's SSHSIG over state_message(), or None: unsigned

    def saved(self) -> dict[str, Any]:
        """What the save wrote and its signature covers (not the totals): :func:`state_message`'s keywords."""
        return {
            "generation": self.generation,
            "seal": self.seal,
            "agent_id": self.agent_id,
            "thread_id": self.thread_id,
            "created_at": self.created_at,
            "state": self.state,
        }


def state_message(
    *, generation: int, seal: str, agent_id: str, thread_id: str, created_at: str, state: dict[str, Any]
) -> bytes:
    """What a signature on ``state.json`` is over: six lines, the last a BLAKE3 digest of the state's canonical JSON.

    The first line, ``handoff-files state 1``, keeps it from ever being taken for a generation's
    signed message (``ALGORITHM:DIGEST``).

    :raises ValueError: if the state has no canonical JSON form.
    """
    state_digest = sealing.digest(sealing.canonical(state, without=""), "blake3")
    lines = (
        _STATE_HEAD,
        f"thread {thread_id}",
        f"agent {agent_id}",
        f"at {generation} {seal}",
        f"created {created_at}",
        f"state blake3:{state_digest}",
    )
    return "\n".join(lines).encode()


def verify_mirror(mirror: Mirror, path: Path) -> str | None:
    """*mirror*'s signature once it verifies over what it says (None: unsigned).

    :raises SignatureError: if it does not (the state or its ids edited since it was signed).
    """
    if mirror.signature is None:
        return None
    from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed state.json loads the signing layer

    message = state_message(**mirror.saved())
    try:
        sshsig.verify(mirror.signature, message, path)
    except SignatureError as exc:
        msg = f"its signature does not verify over its state (edited since it was signed): {exc.reason}"
        raise SignatureError(path, msg) from exc
    return mirror.signature


def mirror_bytes(
    *,
    generation: int,
    seal: str,
    agent_id: str,
    thread_id: str,
    created_at: str,
    state: dict[str, Any],
    saves: int,
    last_restore: dict[str, Any] | None,
    primary_written: tuple[int, int] | None = None,
    signature: str | None = None,
) -> bytes:
    """Render ``state.json``: readable, self-checking (sha256 over its canonical JSON without ``check``).

    :param signature: the signature over :func:`state_message` of these fields, kept as it is.
    """
    fields: dict[str, Any] = {
        "kind": _KIND,
        "generation": generation,
        "seal": seal,
        "agent_id": agent_id,
        "thread_id": thread_id,
        "created_at": created_at,
        "tasks": {
            "active": len(state.get("active_tasks", [])),
            "blocked": len(state.get("blocked_tasks", [])),
            "completed": len(state.get("completed_tasks", [])),
        },
        "saves": saves,
        "last_restore": last_restore,
        # the primary as the writer left it: a file that no longer has this size and mtime was
        # rewritten since (an edit); one that still has them but does not verify is corrupt
        "primary": None if primary_written is None else {"size": primary_written[0], "mtime_ns": primary_written[1]},
        "state": state,
    }
    if signature is not None:
        fields["signature"] = signature
    fields["check"] = self_check(fields)
    return orjson.dumps(fields, option=orjson.OPT_INDENT_2) + b"\n"


def read_mirror(path: Path) -> Mirror:
    """Read and verify ``state.json``.

    :raises HandoffNotFoundError: if it is missing.
    :raises HandoffParseError: if it is not strict JSON (a duplicated key, NaN …; see
        :func:`~handoff_files.format.codec.parse_json`), or is too large.
    :raises HandoffError: if it is not a ``state.json``, or its check does not match.
    """
    data, _ = read_bytes(path, _MAX_BYTES, follow_symlinks=False)
    return mirror_of(data, path)


def mirror_of(data: bytes, path: Path | str) -> Mirror:
    """``state.json``'s bytes *data* (read from *path*, or an object's URL), verified.

    :raises HandoffParseError: if it is not strict JSON, or is too large.
    :raises HandoffError: if it is not a ``state.json``, or its check does not match.
    """
    fields = parse_json(data, path, limit=_MAX_BYTES)
    if not isinstance(fields, dict) or fields.get("kind") != _KIND:
        msg = f"not a handoff-files {MIRROR_NAME}"
        raise HandoffError(path, msg)
    if fields.get("check") != self_check(fields):
        msg = "its check does not match its content: damaged"
        raise HandoffError(path, msg)
    try:
        return Mirror(
            int(fields["generation"]),
            str(fields["seal"]),
            str(fields["agent_id"]),
            str(fields["thread_id"]),
            str(fields["created_at"]),
            dict(fields["state"]),
            int(fields["saves"]),
            fields.get("last_restore"),
            _written(fields.get("primary")),
            _signature(fields.get("signature"), path),
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"missing or malformed field: {exc}"
        raise HandoffError(path, msg) from exc


def _signature(field: Any, path: Path | str) -> str | None:
    """The armored signature ``state.json`` carries, or None (checked for shape only; see :func:`verify_mirror`)."""
    if field is None:
        return None
    if not isinstance(field, str) or len(field) > _MAX_ARMORED:
        msg = '"signature" is not an armored SSH signature'
        raise SignatureError(path, msg)
    return field


def _written(field: Any) -> tuple[int, int] | None:
    """The primary's stamp as ``state.json`` records it (None: not recorded, as before it was)."""
    if not isinstance(field, dict):
        return None
    size, mtime = field.get("size"), field.get("mtime_ns")
    if isinstance(size, int) and isinstance(mtime, int) and not isinstance(size, bool) and not isinstance(mtime, bool):
        return (size, mtime)
    return None


def primary_stamp(path: Path) -> Callable[[], tuple[int, int] | None]:
    """A lookup of the primary's stamp in the ``state.json`` at *path*, made only when asked.

    The loader asks only when a primary does not verify, to tell a person's edit (the file was
    rewritten: its size or mtime differs from the writer's) from corruption (it was not).
    """

    def lookup() -> tuple[int, int] | None:
        try:
            return read_mirror(path).primary_written
        except HandoffError:
            return None

    return lookup
