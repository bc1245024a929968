"""The model: a five-layer handoff (state, narrative, decisions, priorities, warnings) and its envelope, schema 2.1.

2.1 is 2.0 with one optional field, ``seal.signature``; a 2.0 document is read as it stands
(its seal covers its own ``schema_version``), never rewritten to claim 2.1.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from handoff_files.foundation.names import ID_PATTERN

__all__ = [
    "ID_PATTERN",
    "INTEGER_PATHS",
    "NATIVE_VERSIONS",
    "RFC3339_PATTERN",
    "SCHEMA_VERSION",
    "SIGNATURE_PATTERN",
    "AdoptedFrom",
    "Context",
    "Decision",
    "Generation",
    "Handoff",
    "HandoffContent",
    "Lineage",
    "Message",
    "MigratedFrom",
    "Priority",
    "Seal",
    "State",
    "Timestamp",
    "Warning",
    "integral",
]

#: The schema version this library writes.
SCHEMA_VERSION: Final = "2.1"
#: The versions the model holds as they are, sealed (older ones are migrated in memory).
NATIVE_VERSIONS: Final = ("2.0", SCHEMA_VERSION)
#: An armored SSHSIG signature as ``ssh-keygen -Y sign`` writes it (the signing layer reads it whole).
SIGNATURE_PATTERN: Final = r"^-----BEGIN SSH SIGNATURE-----\n[A-Za-z0-9+/=\n]{1,4000}-----END SSH SIGNATURE-----\n?$"


# Bounds. A handoff is a working summary, not an archive: these keep one file small enough
# to read in a terminal and fast enough to load on restart.
MAX_SHORT: Final = 4_096  # one task, decision, reason, warning
MAX_NARRATIVE: Final = 65_536
MAX_MESSAGE: Final = 1_048_576
MAX_ITEMS: Final = 10_000
MAX_MESSAGES: Final = 100_000
MAX_MAP_KEYS: Final = 10_000
MAX_INT: Final = 2**63 - 1  # envelope and counters: signed 64-bit
MIN_INT: Final = -(2**63)
MAX_UINT: Final = 2**64 - 1  # free-form data: what the canonical encoder writes exactly (i64 and u64)

#: An RFC 3339 date-time with its offset, as the format writes it: ``T`` between date and time,
#: seconds always, at most six digits of fraction (what a time holds: no digit is dropped), real
#: months, hours and offsets. The pattern is the JSON Schema's too; the one rule it cannot say
#: (29 February of a year that has none) the library still refuses (docs/format.md).
RFC3339_PATTERN: Final = (
    r"^(?!0000)[0-9]{4}-"
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-9]))"
    r"[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
)
_RFC3339: Final = re.compile(RFC3339_PATTERN.removesuffix("$"))


def _rfc3339(value: object) -> object:
    # a number is not a time here (pydantic's lax mode reads 0 or "1704067200" as seconds since
    # 1970): text must be RFC 3339; a datetime a Python caller passes is taken as it is
    if isinstance(value, dt.datetime) or (isinstance(value, str) and _RFC3339.fullmatch(value)):
        return value
    kind, msg = "datetime_type", "expected an RFC 3339 date-time string"  # worded as a time in .wording
    raise PydanticCustomError(kind, msg)


#: A time with its offset: RFC 3339 text in a file (never a number), or an aware datetime from Python.
Timestamp = Annotated[
    AwareDatetime,
    Field(strict=False),
    BeforeValidator(_rfc3339),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN}),
]


def _integer(value: object) -> object:
    # JSON Schema's data model counts 2.0 and 1e3 as the integers 2 and 1000 and cannot tell them
    # apart, so the library reads them so too (docs/format.md, "Numbers"); 2.5 stays refused
    return int(value) if isinstance(value, float) and value.is_integer() else value


Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Short = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SHORT)]
Digest = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+:[0-9a-f]{16,128}$")]
# whole numbers, written 2 or (as JSON Schema allows) 2.0 or 2e0; the bounds sit inside the
# validator so the schema states them as minimum/maximum (outside, pydantic writes unknown keys)
Count = Annotated[int, Field(ge=0, le=MAX_INT), BeforeValidator(_integer)]
Generation = Annotated[int, Field(ge=1, le=MAX_INT), BeforeValidator(_integer)]
SessionNumber = Annotated[int, Field(ge=MIN_INT, le=MAX_UINT), BeforeValidator(_integer)]
MAX_DATA_DEPTH: Final = 48  # nesting inside one free-form tree (state.data, tool_state, metadata)
MAX_DEPTH: Final = 64  # nesting of a whole file: the deepest free-form tree plus the layers around it

#: Validation context key set by the loader: the value came from a strict JSON/YAML parse,
#: which already guarantees JSON types, finite floats, 64-bit integers and bounded depth.
PARSED: Final = "handoff_files.parsed"


def _check_json(value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    # free-form trees are typed Any and checked here: pydantic's JsonValue costs ~1.5 ms per MB,
    # and the loader's strict parse has already done this work (see PARSED)
    if not (info.context and info.context.get(PARSED)) and not _plain_json(value):
        _walk_json(value, 1)  # the slow walk finds what is wrong and says where
    return value


def _plain_json(value: dict[str, Any]) -> bool:
    """The fast check, in C: orjson encodes it and reads back an equal tree, within the depth limit.

    orjson refuses non-string keys, integers past 64 bits, lone surrogates and non-JSON types;
    NaN and Infinity encode as null and so read back unequal. About 5x faster than the walk.
    """
    try:
        encoded = orjson.dumps(value)
        if orjson.loads(encoded) != value:
            return False
    except (TypeError, ValueError, RecursionError):  # orjson's errors are TypeError/ValueError subclasses
        return False
    # too deep needs a non-empty container at depth MAX_DATA_DEPTH: that many bracket pairs and
    # an element, over 2 * MAX_DATA_DEPTH bytes; most trees (a message's metadata) are shorter
    return len(encoded) <= 2 * MAX_DATA_DEPTH or _shallow_enough(value, 1)


def _shallow_enough(value: dict[str, Any] | list[Any], depth: int) -> bool:
    children = value.values() if isinstance(value, dict) else value
    if not children:
        return True
    if depth + 1 > MAX_DATA_DEPTH:
        return False
    return all(_shallow_enough(child, depth + 1) for child in children if isinstance(child, dict | list))


def _walk_json(value: object, depth: int) -> None:  # noqa: PLR0912 -- one branch per JSON type reads best
    if depth > MAX_DATA_DEPTH:
        msg = f"nested deeper than {MAX_DATA_DEPTH} levels"
        raise ValueError(msg)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                msg = f"object keys must be strings, found {type(key).__name__}"
                raise ValueError(msg)  # noqa: TRY004 -- pydantic turns ValueError into a validation error
            _walk_json(key, depth)
            _walk_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk_json(item, depth + 1)
    elif isinstance(value, str):
        if not value.isascii():
            value.encode("utf-8")  # raises on a lone surrogate; UnicodeEncodeError is a ValueError
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not MIN_INT <= value <= MAX_UINT:
            msg = f"integer {value} does not fit in 64 bits"
            raise ValueError(msg)
    elif isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{value} is not a finite number (NaN and Infinity are not JSON)"
            raise ValueError(msg)
    else:
        msg = f"{type(value).__name__} is not a JSON value"
        raise ValueError(msg)


JsonMap = Annotated[dict[str, Any], Field(max_length=MAX_MAP_KEYS), AfterValidator(_check_json)]


class _Strict(BaseModel):
    # strict: no "1" for 1, no unknown keys, no NaN; frozen: callers get values, not live internals;
    # defer_build: a validator is built when first used, so an import builds none and a restore one
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class State(_Strict):
    """The facts: current values of the things that matter."""

    session_id: SessionNumber | Annotated[str, StringConstraints(max_length=256)] | None = None
    timestamp: Timestamp | None = None
    active_tasks: Annotated[list[Short], Field(max_length=MAX_ITEMS)] = []
    completed_tasks: Annotated[list[Short], Field(max_length=MAX_ITEMS)] = []
    blocked_tasks: Annotated[list[Short], Field(max_length=MAX_ITEMS)] = []
    environment: Annotated[
        dict[Short, Annotated[str, StringConstraints(max_length=MAX_SHORT)]], Field(max_length=MAX_MAP_KEYS)
    ] = {}
    error_count: Count = 0
    energy_level: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    data: JsonMap = {}


class Decision(_Strict):
    """What was decided, deferred or reversed, and why."""

    decision: Short
    reason: Short
    alternatives_considered: Annotated[list[Short], Field(max_length=100)] = []
    reversible: bool = True
    status: Literal["decided", "deferred", "reversed"] = "decided"


class Priority(_Strict):
    """One thing for the next session to do; the list order is the order to do them in."""

    task: Short
    urgency: Literal["first", "primary", "after_primary", "if_time_permits"]


class Warning(_Strict):  # noqa: A001 -- the layer's own name; the builtin is never needed here
    """Something that will bite the next session if nobody says it."""

    text: Short
    severity: Literal["info", "low", "medium", "high", "critical"] | None = None


class Message(_Strict):
    """One turn of conversation, in the SW4RM ``HandoffContext`` shape."""

    role: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    content: Annotated[str, StringConstraints(max_length=MAX_MESSAGE)]
    timestamp: Timestamp | None = None
    tool_call_id: Annotated[str, StringConstraints(max_length=256)] | None = None
    name: Annotated[str, StringConstraints(max_length=256)] | None = None
    metadata: JsonMap | None = None


class Context(_Strict):
    """Optional working context, compatible with SW4RM's ``HandoffContext``."""

    conversation_history: Annotated[list[Message], Field(max_length=MAX_MESSAGES)] = []
    tool_state: JsonMap = {}
    metadata: JsonMap = {}


class MigratedFrom(_Strict):
    """Where a migrated document came from, and every assumption the migration made."""

    schema_version: Annotated[str, StringConstraints(max_length=16)]
    checksum: Annotated[str, StringConstraints(max_length=256)] | None = None
    notes: Annotated[list[Short], Field(max_length=MAX_ITEMS)] = []


class AdoptedFrom(_Strict):
    """The thread and generation a handoff was adopted from, and the blob that carried it."""

    agent_id: Id
    thread_id: Id
    generation: Generation
    blob_id: Annotated[str, StringConstraints(max_length=256)]
    blob_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Lineage(_Strict):
    """Where this handoff came from, when not from an earlier generation of its own thread."""

    adopted_from: AdoptedFrom | None = None
    migrated_from: MigratedFrom | None = None


class Seal(_Strict):
    """A named digest over the canonical JSON of the document without its seal."""

    algorithm: Literal["blake3", "blake2b", "sha256"]
    digest: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    hmac: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None
    key_id: Annotated[str, StringConstraints(max_length=128)] | None = None
    #: 2.1: an SSHSIG signature (namespace ``handoff-files``) over :meth:`__str__`, armored; outside
    #: what the digest covers (the whole ``seal`` is), so signing never changes the seal.
    signature: Annotated[str, StringConstraints(max_length=4096, pattern=SIGNATURE_PATTERN)] | None = None

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.digest}"


# the defaults as the committed schema states them (a default_factory has none to show)
_STATE_DEFAULT: Final[dict[str, JsonValue]] = {
    "session_id": None,
    "timestamp": None,
    "active_tasks": [],
    "completed_tasks": [],
    "blocked_tasks": [],
    "environment": {},
    "error_count": 0,
    "energy_level": 1.0,
    "data": {},
}
_LINEAGE_DEFAULT: Final[dict[str, JsonValue]] = {"adopted_from": None, "migrated_from": None}


class HandoffContent(_Strict):
    """The five layers (and optional context): what an agent passes to ``save``."""

    # built on first use (defer_build), not at import: a restart pays only for the validator it runs
    state: State = Field(default_factory=State, json_schema_extra={"default": _STATE_DEFAULT})
    narrative: Annotated[str, StringConstraints(max_length=MAX_NARRATIVE)] = ""
    decisions: Annotated[list[Decision], Field(max_length=MAX_ITEMS)] = []
    priorities: Annotated[list[Priority], Field(max_length=MAX_ITEMS)] = []
    warnings: Annotated[list[Warning], Field(max_length=MAX_ITEMS)] = []
    context: Context | None = None


class Handoff(HandoffContent):
    """A sealed handoff: the envelope plus the five layers."""

    # a JSON Schema "if/then" says what the validator below says: a signature is 2.1's alone
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"schema_version": {"const": "2.0"}}},
            "then": {"properties": {"seal": {"anyOf": [{"type": "null"}, {"not": {"required": ["signature"]}}]}}},
        }
    )

    schema_version: Literal["2.0", "2.1"]
    agent_id: Id
    thread_id: Id
    generation: Generation
    created_at: Timestamp
    parent: Digest | None = None
    lineage: Lineage = Field(default_factory=Lineage, json_schema_extra={"default": _LINEAGE_DEFAULT})
    seal: Seal | None = None

    @model_validator(mode="after")
    def _signature_is_2_1(self) -> Handoff:
        if self.schema_version == "2.0" and self.seal is not None and "signature" in self.seal.model_fields_set:
            kind, msg = "signature_version", "seal.signature is a 2.1 field: a 2.0 handoff has none"
            raise PydanticCustomError(kind, msg)
        return self

    def content(self) -> HandoffContent:
        """Return the five layers alone, without the envelope."""
        return HandoffContent.model_validate({name: getattr(self, name) for name in HandoffContent.model_fields})


#: Where a handoff holds an integer (the schema's ``"type": "integer"``; a test keeps the two equal).
INTEGER_PATHS: Final = (
    ("generation",),
    ("state", "session_id"),
    ("state", "error_count"),
    ("lineage", "adopted_from", "generation"),
)


def integral(document: Mapping[str, Any]) -> dict[str, Any]:
    """*document* with each integer written with a fraction or exponent (``2.0``, ``1e3``) as the integer.

    The seal covers the values the model holds, and the model reads ``2.0`` as ``2``: the loader
    verifies a seal over this, so a sealed file is never handed out with values it was not sealed
    with. Only :data:`INTEGER_PATHS` change (free-form data keeps ``2.0``); the input is not changed.

    :param document: a parsed handoff (any shape: what is not where an integer belongs is left alone).
    :returns: a new dict (the mappings on the way to each integer copied, never shared changed).
    """
    result = dict(document)
    for path in INTEGER_PATHS:
        _integral_at(result, path)
    return result


def _integral_at(node: dict[str, Any], path: tuple[str, ...]) -> None:
    head, *rest = path
    value = node.get(head)
    if not rest:
        # past 64 bits it stays a float: no canonical form holds it, and the model refuses it anyway
        if isinstance(value, float) and value.is_integer() and MIN_INT <= value <= MAX_UINT:
            node[head] = int(value)
        return
    if isinstance(value, dict):
        node[head] = child = dict(value)  # a copy at each level: the caller's document stays as it was
        _integral_at(child, tuple(rest))
