"""One handoff request: the record the inbox keeps, and the checks a requester's input passes before it is one."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from handoff_files.format.model import MAX_DATA_DEPTH, MAX_INT, MAX_UINT, MIN_INT, Id
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError, HandoffValidationError, InvalidNameError, UntrustedSignerError
from handoff_files.inbox.capabilities import CAPABILITY_PATTERN, check_capabilities
from handoff_files.inbox.status import HandoffStatus
from handoff_files.thread.signatures import SignatureReport
from handoff_files.transfers.descriptor import Descriptor, parse_descriptor

__all__ = [
    "CAPABILITY_GATE",
    "DEFAULT_PRIORITY",
    "MAX_REASON",
    "MAX_TIMEOUT",
    "InboxRequest",
    "RefusedBy",
    "RequestSignature",
    "check_descriptor",
    "check_handoff_id",
    "check_metadata",
    "check_priority",
    "check_required",
    "check_text",
    "check_timeout",
    "is_handoff_id",
    "problem_kind",
    "refusal",
    "since",
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


# A request file is parsed once, by the strict reader, and the value validated (not its bytes again,
# by pydantic's JSON mode). Strict Python mode wants datetime, enum and tuple objects where JSON has
# text and lists: those fields take the JSON forms, and nothing else the JSON mode refused.
def _only(*kinds: type) -> BeforeValidator:
    names = " or ".join("JSON text" if kind is str else kind.__name__ for kind in kinds)

    def check(value: object) -> object:
        if not isinstance(value, kinds):
            msg = f"expected {names}, found {type(value).__name__}"
            raise ValueError(msg)  # noqa: TRY004 -- pydantic turns ValueError into a validation error
        return value

    return BeforeValidator(check)


_STATUS: Final = _only(str, HandoffStatus)
_LIST: Final = _only(list, tuple)
#: A moment in a request: an aware datetime, in a file ISO 8601 text with its zone (no bare number).
Moment = Annotated[AwareDatetime, Field(strict=False), _only(str, dt.datetime)]


class RequestSignature(BaseModel):
    """A signature on a request file, verified, and who made it as this user's ``allowed_signers`` sees it.

    ``signature``: the SSHSIG signature as the file holds it (armored). ``fingerprint``: its key's,
    ``SHA256:…``. ``principal``: the name ``allowed_signers`` gives the key; None when the key is not
    trusted, and ``problem`` says why (not listed, outside its validity window, revoked, no file).
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    signature: str
    fingerprint: str
    principal: str | None
    problem: str | None

    @property
    def trusted(self) -> bool:
        """True when ``allowed_signers`` trusts the key for handoffs at the moment it signed."""
        return self.principal is not None

    def describe(self) -> str:
        """One line: ``signed by alice@example.com (SHA256:…)``, or ``not trusted: `` and why."""
        return SignatureReport(self.fingerprint, self.principal, self.problem, Path()).describe()


class InboxRequest(BaseModel):
    """One handoff request as the inbox holds it (a frozen copy: changing the inbox never changes it).

    ``priority``: lower is more urgent. ``descriptor``: the sealed checkpoint the receiver adopts
    (the context travels as a descriptor, never as inline bytes), or None. ``expires_at``: the
    request can no longer be accepted from then on (None: no limit). ``refused_by``: set on a
    REJECTED record the inbox itself refused before storing it (:data:`CAPABILITY_GATE`); None
    for every request an agent saw, whatever became of it. Decide on it, not on the reason's words.
    ``request_signature``: the requester's signature over what it asked (every field it set), verified
    when read; ``change_signature``: the signature of whoever wrote the file last (the requester, or
    the agent that accepted, rejected, completed it or recorded its expiry) over the whole file. None:
    unsigned (see docs/signing.md, "Signed requests"). Neither is a field of the file's request: the
    inbox fills them in from the file's ``signatures`` when it reads one.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    handoff_id: Annotated[str, StringConstraints(pattern=_HANDOFF_ID)]
    from_agent: Id
    to_agent: Id | None
    reason: Annotated[str, StringConstraints(max_length=MAX_REASON)]
    priority: Annotated[int, Field(ge=MIN_INT, le=MAX_INT)] = DEFAULT_PRIORITY
    capabilities_required: Annotated[
        tuple[Annotated[str, StringConstraints(pattern=CAPABILITY_PATTERN)], ...], Field(strict=False), _LIST
    ] = ()
    descriptor: Descriptor | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: Moment
    expires_at: Moment | None = None
    status: Annotated[HandoffStatus, Field(strict=False), _STATUS]
    rejection_reason: Annotated[str, StringConstraints(max_length=MAX_REASON)] | None = None
    accepted_at: Moment | None = None
    rejected_at: Moment | None = None
    completed_at: Moment | None = None
    refused_by: RefusedBy | None = None
    request_signature: RequestSignature | None = None
    change_signature: RequestSignature | None = None

    def as_of(self, now: dt.datetime) -> InboxRequest:
        """This request as it reads at *now*: a PENDING request past ``expires_at`` reads as EXPIRED."""
        if self.status is HandoffStatus.PENDING and self.expires_at is not None and now >= self.expires_at:
            return self.model_copy(update={"status": HandoffStatus.EXPIRED})
        return self


def is_handoff_id(text: object) -> bool:
    """Whether *text* is an id this inbox makes (a uuid4 in 32 lowercase hex digits)."""
    return isinstance(text, str) and re.fullmatch(_HANDOFF_ID, text) is not None


def check_handoff_id(handoff_id: object, where: str) -> str:
    """*handoff_id* if :func:`is_handoff_id`, else :class:`InvalidNameError` naming the inbox, *where*."""
    if not is_handoff_id(handoff_id):
        msg = f"handoff id {str(handoff_id)[:80]!r} is not one this inbox makes (32 lowercase hex digits)"
        raise InvalidNameError(where, msg)
    return str(handoff_id)


def problem_kind(problem: object) -> str:
    """``a damaged``, or ``an untrusted`` for a request refused for its signer (``require_signed``): how a
    listing names a request it skipped."""
    return "an untrusted" if isinstance(problem, UntrustedSignerError) else "a damaged"


def since(record: InboxRequest) -> str:
    """`` (since 2026-12-05T13:00:00Z)``: when *record* took its settled status; empty for a PENDING one."""
    # a settled status has its `<status>_at` field; an expired request's moment is expires_at
    expired = record.status is HandoffStatus.EXPIRED
    at = record.expires_at if expired else getattr(record, f"{record.status.value.lower()}_at", None)
    return "" if at is None else f" (since {iso_z(at, timespec='seconds')})"


def refusal(seen: InboxRequest, verb: str, allowed: HandoffStatus, change: Mapping[str, Any]) -> str:
    """Why *seen* cannot take *change*: its status, since when, and who changed it last when that is known."""
    needed = f"{'an' if allowed.value[0] in 'AEIOU' else 'a'} {allowed.value}"
    signed = seen.change_signature
    settled = signed is not None and seen.status is not HandoffStatus.PENDING
    by = f" by {signed.principal or signed.fingerprint}" if signed is not None and settled else ""
    return (
        f"cannot {verb} handoff {seen.handoff_id}: it is {seen.status.value}{since(seen)}{by}, not in "
        f"{allowed.value} status; only {needed} request can become {change['status'].value}"
    )


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
    """A JSON copy of *metadata* (an empty dict for None), refused unless a request file holds it exactly.

    :raises HandoffValidationError: naming the value at fault (``metadata.plan[2]``) and why: a key
        that is not a string; an integer past 64 bits; NaN or Infinity; a lone surrogate; nesting
        past :data:`~handoff_files.format.model.MAX_DATA_DEPTH`; anything not a JSON value (bytes,
        a set, a tuple, an object).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        msg = f"metadata must be a JSON object (a mapping with string keys), not {type(metadata).__name__}"
        raise HandoffValidationError(where, msg)
    plain = dict(metadata)
    fault = _json_fault(plain, "metadata", 1)
    if fault is not None:
        msg = f"{fault}; a request file holds JSON values only (strings, numbers, booleans, null, lists, objects)"
        raise HandoffValidationError(where, msg)
    copied: dict[str, Any] = json.loads(json.dumps(plain))  # checked first, so the copy is exact
    return copied


def _json_fault(value: object, at: str, depth: int) -> str | None:  # noqa: PLR0911 -- one return per JSON type
    """Where and why *value* is not a JSON value the request file holds exactly, or None if it is."""
    if depth > MAX_DATA_DEPTH:
        return f"{at} is nested deeper than {MAX_DATA_DEPTH} levels"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{at} has a key that is not a string but a {type(key).__name__}"
            fault = _json_fault(key, f"{at} key {key[:40]!r}", depth)
            if fault is None:
                fault = _json_fault(item, f"{at}.{key[:40]}", depth + 1)
            if fault is not None:
                return fault
        return None
    if isinstance(value, list):
        return next((f for i, item in enumerate(value) if (f := _json_fault(item, f"{at}[{i}]", depth + 1))), None)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{at} holds a lone surrogate, which UTF-8 cannot encode"
        return None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{at} is {value}, not a finite number (NaN and Infinity are not JSON)"
    if isinstance(value, int):
        # the value itself is not shown: a huge integer has more digits than str() will write
        fits = MIN_INT <= value <= MAX_UINT
        return None if fits else f"{at} is an integer of {value.bit_length()} bits, which does not fit in 64 bits"
    return f"{at} is a {type(value).__name__}, not a JSON value"
