"""One handoff request: the record the inbox keeps, and the checks a requester's input passes before it is one."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from handoff_files.format.model import MAX_INT, MIN_INT, Id
from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.inbox.capabilities import CAPABILITY_PATTERN, check_capabilities
from handoff_files.inbox.status import HandoffStatus
from handoff_files.transfers.descriptor import Descriptor, parse_descriptor

__all__ = [
    "CAPABILITY_GATE",
    "DEFAULT_PRIORITY",
    "MAX_REASON",
    "MAX_TIMEOUT",
    "InboxRequest",
    "RefusedBy",
    "check_descriptor",
    "check_metadata",
    "check_priority",
    "check_required",
    "check_text",
    "check_timeout",
    "is_handoff_id",
    "urgency",
]

DEFAULT_PRIORITY: Final = 5
MAX_REASON: Final = 2000
#: The longest timeout a request may carry (about 31 years): beyond it, ``None`` says "no limit".
MAX_TIMEOUT: Final = 1e9

#: Who refused a request before anyone saw it. Only the capability gate does, today.
RefusedBy = Literal["capability-gate"]
#: :attr:`InboxRequest.refused_by` of a request the capability gate refused.
CAPABILITY_GATE: Final[RefusedBy] = "capability-gate"

_HANDOFF_ID: Final = r"^[0-9a-f]{32}$"


class InboxRequest(BaseModel):
    """One handoff request as the inbox holds it (a frozen copy: changing the inbox never changes it).

    ``priority``: lower is more urgent. ``descriptor``: the sealed checkpoint the receiver adopts
    (the context travels as a descriptor, never as inline bytes), or None. ``expires_at``: the
    request can no longer be accepted from then on (None: no limit). ``refused_by``: set on a
    REJECTED record the inbox itself refused before storing it (:data:`CAPABILITY_GATE`); None
    for every request an agent saw, whatever became of it. Decide on it, not on the reason's words.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    handoff_id: Annotated[str, StringConstraints(pattern=_HANDOFF_ID)]
    from_agent: Id
    to_agent: Id | None
    reason: Annotated[str, StringConstraints(max_length=MAX_REASON)]
    priority: Annotated[int, Field(ge=MIN_INT, le=MAX_INT)] = DEFAULT_PRIORITY
    capabilities_required: tuple[Annotated[str, StringConstraints(pattern=CAPABILITY_PATTERN)], ...] = ()
    descriptor: Descriptor | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    status: HandoffStatus
    rejection_reason: Annotated[str, StringConstraints(max_length=MAX_REASON)] | None = None
    accepted_at: AwareDatetime | None = None
    rejected_at: AwareDatetime | None = None
    completed_at: AwareDatetime | None = None
    refused_by: RefusedBy | None = None

    def as_of(self, now: dt.datetime) -> InboxRequest:
        """This request as it reads at *now*: a PENDING request past ``expires_at`` reads as EXPIRED."""
        if self.status is HandoffStatus.PENDING and self.expires_at is not None and now >= self.expires_at:
            return self.model_copy(update={"status": HandoffStatus.EXPIRED})
        return self


def is_handoff_id(text: object) -> bool:
    """Whether *text* is an id this inbox makes (a uuid4 in 32 lowercase hex digits)."""
    return isinstance(text, str) and re.fullmatch(_HANDOFF_ID, text) is not None


def urgency(record: InboxRequest) -> tuple[int, dt.datetime, str]:
    """The order requests are served in: most urgent (lowest priority) first, then oldest."""
    return (record.priority, record.created_at, record.handoff_id)


# -- a requester's input -------------------------------------------------------------------------
# each check names *where* (the inbox) in its HandoffValidationError


def check_timeout(timeout: object, where: str | os.PathLike[str]) -> float | None:
    """*timeout* as seconds (None: no limit), or :class:`HandoffValidationError` naming *where*."""
    if timeout is None:
        return None
    # `not 0 < t`: NaN is refused too; a bool is not a number of seconds
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        msg = f"timeout must be None or seconds, more than 0 and at most {MAX_TIMEOUT:g}, not {timeout!r}"
        raise HandoffValidationError(where, msg)
    return float(timeout)


def check_text(value: object, what: str, where: str | os.PathLike[str]) -> str:
    """*value* if it is a string of at most :data:`MAX_REASON` characters (*what* is named if not)."""
    if not isinstance(value, str) or len(value) > MAX_REASON:
        found = f"{len(value):,} characters" if isinstance(value, str) else type(value).__name__
        msg = f"{what} must be a string of at most {MAX_REASON:,} characters, not {found}"
        raise HandoffValidationError(where, msg)
    return value


def check_priority(priority: object, where: str | os.PathLike[str]) -> int:
    """*priority* if it is a 64-bit integer (lower is more urgent)."""
    if type(priority) is not int or not MIN_INT <= priority <= MAX_INT:
        msg = f"priority must be an integer (lower is more urgent; default {DEFAULT_PRIORITY}), not {priority!r}"
        raise HandoffValidationError(where, msg)
    return priority


def check_required(values: Iterable[str], where: str | os.PathLike[str]) -> tuple[str, ...]:
    """The capabilities a request requires, sorted and without repeats."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        msg = f"capabilities_required must be a list of capability names, not {type(values).__name__}"
        raise HandoffValidationError(where, msg)
    try:
        return check_capabilities(list(values), "capabilities_required", where)
    except HandoffError as exc:
        raise HandoffValidationError(where, exc.reason) from exc


def check_descriptor(
    descriptor: Descriptor | Mapping[str, Any] | str | bytes | None, where: str | os.PathLike[str]
) -> Descriptor | None:
    """*descriptor* parsed (strictly, when it is JSON text), or None."""
    if descriptor is None:
        return None
    try:
        return parse_descriptor(descriptor)
    except HandoffError as exc:
        raise HandoffValidationError(where, exc.reason) from exc


def check_metadata(metadata: Mapping[str, Any] | None, where: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON copy of *metadata* (an empty dict for None), refused unless it equals what was given."""
    if metadata is None:
        return {}
    try:
        copied = json.loads(json.dumps(metadata, allow_nan=False)) if isinstance(metadata, Mapping) else None
    except (TypeError, ValueError, RecursionError) as exc:
        msg = f"metadata must be a JSON object: {exc}"
        raise HandoffValidationError(where, msg) from exc
    # json.dumps turns 1 into "1" and a tuple into a list: the copy must equal what was given
    if not isinstance(copied, dict) or copied != metadata:
        msg = "metadata must be a JSON object (string keys; strings, numbers, booleans, null, lists, objects)"
        raise HandoffValidationError(where, msg)
    return copied
