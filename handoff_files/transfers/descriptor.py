"""The descriptor: the small JSON one agent hands another, naming a sealed checkpoint in a blob store by its sha256."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, StringConstraints

from handoff_files.format import seal as sealing
from handoff_files.format.codec import parse_json
from handoff_files.format.loader import describe
from handoff_files.format.model import Generation, Id, Timestamp
from handoff_files.format.schema import SCHEMA_DIR, model_schema, render_schema
from handoff_files.foundation.errors import DescriptorError, HandoffParseError, HandoffTooLargeError, SignatureError

__all__ = [
    "DESCRIPTOR_SCHEMA_FILE",
    "DESCRIPTOR_VERSION",
    "DESCRIPTOR_VERSIONS",
    "DESCRIPTOR_WHERE",
    "UNSIGNED_VERSION",
    "Descriptor",
    "descriptor_schema",
    "parse_descriptor",
]

#: The newest version: what :func:`handoff_checkpoint` writes for a signed descriptor (an unsigned one is
#: written as 1.0, which every release reads).
DESCRIPTOR_VERSION: Final = "1.1"
#: The versions this library reads: 1.1 is 1.0 with an optional ``signature``.
DESCRIPTOR_VERSIONS: Final = ("1.0", "1.1")
#: The version of an unsigned descriptor.
UNSIGNED_VERSION: Final = "1.0"
#: A descriptor is small: past this many bytes of JSON it is refused unread.
MAX_DESCRIPTOR_BYTES: Final = 64 * 1024
#: Where the descriptor's schema lives in a source checkout.
DESCRIPTOR_SCHEMA_FILE: Final = SCHEMA_DIR / f"descriptor-{DESCRIPTOR_VERSION}.schema.json"

#: What a descriptor's errors name when it came with no file (as text, a mapping or the object).
DESCRIPTOR_WHERE: Final = "<descriptor>"
#: Why a 1.0 descriptor that carries a signature is refused.
_SIGNED_1_0: Final = (
    f"a {UNSIGNED_VERSION} descriptor has no signature; a signed descriptor is format {DESCRIPTOR_VERSION}"
)
_SHA256: Final = r"^[0-9a-f]{64}$"


class Descriptor(BaseModel):
    """A sealed checkpoint handed to another agent: where its bytes are, and the sha256 they must have.

    ``source`` is ``"<thread_id>:<generation>"``; ``checkpoint_id`` the seal of that generation
    (``algorithm:digest``); ``blob_id`` its id in the blob store and ``blob_sha256`` the sha256 of
    the blob's bytes, which the receiver recomputes before trusting anything. ``signature`` (1.1
    only): the exporter's SSHSIG signature over :meth:`signed_text`, verified whenever a
    descriptor is parsed (docs/signing.md).
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    descriptor_version: Literal["1.0", "1.1"]
    source: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}:[1-9][0-9]{0,18}$")]
    agent_id: Id
    thread_id: Id
    generation: Generation
    checkpoint_id: Annotated[str, StringConstraints(pattern=r"^(blake3|blake2b|sha256):[0-9a-f]{64}$")]
    blob_id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    blob_sha256: Annotated[str, StringConstraints(pattern=_SHA256)]
    to_agent: Id | None = None
    summary: Annotated[str, StringConstraints(max_length=2000)] | None = None
    created_at: Timestamp
    signature: Annotated[str, StringConstraints(max_length=4096)] | None = None

    def to_json(self) -> str:
        """The descriptor as one line of JSON (what ``handoff export`` prints)."""
        return self.model_dump_json()

    def signed_text(self) -> str:
        """``blake3:DIGEST`` of the descriptor's canonical JSON without its signature: what its signature signs."""
        document = self.model_dump(mode="json", exclude={"signature"})
        return f"blake3:{sealing.digest(sealing.canonical(document), 'blake3')}"

    @pydantic.model_serializer(mode="wrap")
    def _without_no_signature(self, handler: pydantic.SerializerFunctionWrapHandler) -> dict[str, Any]:
        # an unsigned descriptor is written as 1.0 has always been: no "signature" key (1.0 readers forbid it)
        document: dict[str, Any] = handler(self)
        if document.get("signature", 0) is None:
            del document["signature"]
        return document

    @pydantic.model_validator(mode="after")
    def _source_matches(self) -> Descriptor:
        if self.source != f"{self.thread_id}:{self.generation}":
            msg = f"source {self.source!r} does not name thread {self.thread_id!r} generation {self.generation}"
            raise ValueError(msg)
        if self.signature is not None and self.descriptor_version == UNSIGNED_VERSION:
            raise ValueError(_SIGNED_1_0)
        return self


def parse_descriptor(
    value: Descriptor | Mapping[str, Any] | str | bytes, *, where: str | os.PathLike[str] = DESCRIPTOR_WHERE
) -> Descriptor:
    """Accept a descriptor as the object, a mapping, or its JSON text (read strictly, as every byte from outside).

    :param where: the file it was read from, which its errors name (default :data:`DESCRIPTOR_WHERE`: no file).
    :raises DescriptorError: if it is not strict JSON (duplicate keys and NaN included), is larger
        than :data:`MAX_DESCRIPTOR_BYTES`, has no ``blob_sha256``, is of an unknown
        ``descriptor_version``, is 1.0 and signed, or is otherwise malformed; the message says which.
    :raises SignatureError: if it is signed and the signature does not verify (edited since).
    """
    if isinstance(value, Descriptor):
        return _verified(value, where)
    if isinstance(value, str | bytes):
        value = _read_json(value, where)
    if not isinstance(value, Mapping):
        msg = f"a descriptor is a JSON object, not {type(value).__name__}"
        raise DescriptorError(where, msg)
    version = value.get("descriptor_version")
    if version not in DESCRIPTOR_VERSIONS:
        msg = f"descriptor_version {version!r} is not one this library reads ({', '.join(DESCRIPTOR_VERSIONS)})"
        raise DescriptorError(where, msg)
    if version == UNSIGNED_VERSION and value.get("signature") is not None:
        raise DescriptorError(where, _SIGNED_1_0)
    if not value.get("blob_sha256"):
        msg = "descriptor has no blob_sha256: a blob whose hash cannot be checked is never adopted"
        raise DescriptorError(where, msg)
    try:
        descriptor = Descriptor.model_validate(dict(value))
    except pydantic.ValidationError as exc:
        msg = f"not a valid descriptor: {describe(exc)}"
        raise DescriptorError(where, msg) from exc
    return _verified(descriptor, where)


def _verified(descriptor: Descriptor, where: str | os.PathLike[str]) -> Descriptor:
    """*descriptor*, once its signature (if any) verifies over :meth:`Descriptor.signed_text`."""
    if descriptor.signature is None:
        return descriptor
    from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed descriptor loads the signing layer

    try:
        sshsig.verify(descriptor.signature, descriptor.signed_text().encode(), where)
    except SignatureError as exc:
        msg = f"the descriptor's signature does not verify over it (edited since it was signed): {exc.reason}"
        raise SignatureError(where, msg) from exc
    return descriptor


def _read_json(text: str | bytes, where: str | os.PathLike[str]) -> Any:
    """The descriptor's JSON, read by the one strict reader: another agent wrote it."""
    try:
        data = text.encode("utf-8") if isinstance(text, str) else text
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8, so no JSON
        msg = f"not a descriptor: invalid JSON: the text holds a lone surrogate at character {exc.start}"
        raise DescriptorError(where, msg) from exc
    try:
        return parse_json(data, where, limit=MAX_DESCRIPTOR_BYTES)
    except HandoffTooLargeError as exc:
        msg = f"descriptor is {len(data):,} bytes, over the {MAX_DESCRIPTOR_BYTES:,}-byte limit"
        raise DescriptorError(where, msg) from exc
    except HandoffParseError as exc:
        msg = f"not a descriptor: {exc.reason}"
        raise DescriptorError(where, msg) from exc


def descriptor_schema() -> dict[str, Any]:
    """Return the JSON Schema of a handoff descriptor of the current version."""
    return model_schema(Descriptor, "descriptor", DESCRIPTOR_VERSION)


if __name__ == "__main__":
    DESCRIPTOR_SCHEMA_FILE.write_text(render_schema(descriptor_schema()), encoding="utf-8")
    sys.stdout.write(f"wrote {DESCRIPTOR_SCHEMA_FILE}\n")
