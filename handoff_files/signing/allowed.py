"""Who is trusted: an ``allowed_signers`` file in OpenSSH's format, and a list of revoked keys.

One entry per line, as ``ssh-keygen -Y verify -f allowed_signers`` reads it::

    alice@example.com,alice@laptop namespaces="git,handoff-files" ssh-ed25519 AAAAC3Nz… alice
    build-agent@ci valid-before="20270101Z" ssh-ed25519 AAAAC3Nz…
    build-agent@ci valid-after="20270101Z" ssh-ed25519 AAAAC3Nz…

- the principals: comma-separated, ``*`` and ``?`` as wildcards (nothing else is special), a
  leading ``!`` for "not"; in double quotes if they hold blank space;
- options (optional): ``namespaces="…"`` (the namespaces the key may sign in; patterns),
  ``valid-after="…"``, ``valid-before="…"`` (``YYYYMMDD[HHMM[SS]]``, then ``Z`` or ``UTC`` for
  UTC, else local time; after 1970; before after after), ``cert-authority`` (a CA for
  certificates: read, never matched, since handoffs are signed with plain keys). Values are in
  double quotes (``\\"`` for a quote); an option given twice is refused;
- the key, then a comment (anything). Blank lines and lines starting with ``#`` are skipped.
  Lines end at ``\\n`` alone; words are split at spaces and tabs alone.

Each rule is OpenSSH's (``sshsig.c``, ``misc.c``), checked against ``ssh-keygen -Y verify`` in the
tests. As there, a line that cannot be read trusts no one; :attr:`AllowedSigners.problems` tells it.

Rotation is a new line for the new key and ``valid-before`` on the old one. A signature is judged
at the time the signed generation says it was made (its ``created_at``, which the signature
covers): what the old key signed before stays valid, and a generation it signs later saying so is
refused. What ``valid-before`` cannot stop is a retired key still held by someone who writes an
earlier ``created_at``: a key that may be in the wrong hands is revoked, not retired.
Keys of other types (a team's file for git may list ``ssh-rsa`` ones) are read and never match.
The revoked-keys list holds public key lines, as the plain form of ``ssh-keygen -Y verify -r``
does; a binary KRL, or any line that cannot be read (a revocation, perhaps), refuses the list.

Both files are bounded (1 MiB, 10,000 lines, 8 KiB a line) before anything is parsed, and
refused unless they are this user's (or root's) and writable by their owner only: ssh's rule for
``authorized_keys``, since whoever can write them decides whom the library trusts.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from handoff_files.foundation.errors import HandoffNotFoundError, UntrustedSignerError
from handoff_files.signing.sshsig import NAMESPACE, Signed, parse_key_line
from handoff_files.signing.trustfile import BLANK, KEY_TYPES, MAX_LINE, read_trust_file

__all__ = ["ALLOWED_NAME", "Allowed", "AllowedSigners"]

#: The files' names in the configuration folder (:func:`~handoff_files.signing.keys.config_dir`).
ALLOWED_NAME: Final = "allowed_signers"


@dataclass(frozen=True, slots=True)
class Allowed:
    """One line of ``allowed_signers``."""

    principals: tuple[str, ...]
    key: bytes | None  # an Ed25519 key's wire blob; None for another key type (never matched)
    namespaces: tuple[str, ...] | None
    valid_after: dt.datetime | None
    valid_before: dt.datetime | None
    cert_authority: bool
    line: int

    @property
    def principal(self) -> str:
        """The principals as the file writes them (``ssh-keygen -Y find-principals`` prints this)."""
        return ",".join(self.principals)

    def allows(self, namespace: str) -> bool:
        """Whether the line lets its key sign in *namespace*."""
        return self.namespaces is None or _matches(namespace, self.namespaces)

    def matches(self, principal: str) -> bool:
        """Whether *principal* is one of the line's (patterns, negations honoured)."""
        return _matches(principal, self.principals)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    found = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _pattern(pattern[1:] if negated else pattern).fullmatch(name):
            if negated:
                return False
            found = True
    return found


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> re.Pattern[str]:
    """OpenSSH's ``match_pattern``: ``*`` any run, ``?`` one character, everything else itself (no ``[…]``)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), re.DOTALL)


class AllowedSigners:
    """The trusted keys of an ``allowed_signers`` file (empty when it does not exist)."""

    def __init__(self, entries: Iterable[Allowed], path: Path | None = None, problems: Iterable[str] = ()) -> None:
        self.entries = tuple(entries)
        #: the file read, named in errors (None: made in memory)
        self.path = path
        #: the lines passed over, each "line N: reason" (a line that cannot be read trusts no one)
        self.problems = tuple(problems)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, missing_ok: bool = False) -> AllowedSigners:
        """Read *path*; a line that cannot be read is passed over and told in :attr:`problems`.

        :param missing_ok: a missing file is an empty list (no one trusted), not an error.
        :raises HandoffNotFoundError: if it does not exist (without *missing_ok*).
        :raises HandoffParseError: if it is too large, has too many lines, or is not UTF-8.
        :raises HandoffError: if someone other than its owner may write it, or it is not a regular file.
        """
        target = Path(path)
        try:
            text = read_trust_file(target)  # read (and its owner and mode checked) every time
        except HandoffNotFoundError:
            if missing_ok:
                return cls((), target)
            raise
        return _parsed(text, os.fspath(target))

    @classmethod
    def parse(cls, text: str, where: str | os.PathLike[str]) -> AllowedSigners:
        """Read the lines of an ``allowed_signers`` file (*where* names it).

        As ``ssh-keygen`` does, a line that cannot be read is passed over (it trusts no one) and the
        others still count; each is told in :attr:`problems`. Lines end at ``\\n`` alone.
        """
        entries, problems = [], []
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.lstrip(BLANK)
            if not line.rstrip(BLANK + "\r") or line.startswith("#"):
                continue
            try:
                entries.append(_entry(line, number))
            except ValueError as exc:
                problems.append(f"line {number}: {exc}")
        return cls(entries, Path(where), problems)

    def signer_of(
        self,
        signed: Signed,
        *,
        at: dt.datetime,
        revoked: frozenset[bytes] = frozenset(),
        namespace: str = NAMESPACE,
        principal: str | None = None,
        where: str | os.PathLike[str] = "",
    ) -> str:
        """The principals trusted to have made *signed* at time *at* (a verified signature's key).

        :param principal: only lines naming this principal count (``ssh-keygen -Y verify -I``).
        :param where: the signed file, named in the error.
        :raises UntrustedSignerError: if the key is revoked, on no line, on lines that do not allow
            *namespace*, or on lines whose validity does not hold at *at* (each told apart).
        """
        place = where or (self.path or ALLOWED_NAME)
        if signed.key in revoked:
            msg = f"signed by {signed.fingerprint}, a revoked key"
            raise UntrustedSignerError(place, msg)
        lines = [entry for entry in self.entries if entry.key == signed.key and not entry.cert_authority]
        if principal is not None:
            lines = [entry for entry in lines if entry.matches(principal)]
        if not lines:
            whose = f" for {principal}" if principal is not None else ""
            msg = f"signed by {signed.fingerprint}, a key not in {self.path or ALLOWED_NAME}{whose}"
            raise UntrustedSignerError(place, msg)
        lines = [entry for entry in lines if entry.allows(namespace)]
        if not lines:
            msg = f"signed by {signed.fingerprint}, whose allowed_signers lines do not allow namespace {namespace!r}"
            raise UntrustedSignerError(place, msg)
        when = at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)
        for entry in lines:
            if (entry.valid_after is None or when >= entry.valid_after) and (
                entry.valid_before is None or when <= entry.valid_before
            ):
                return entry.principal
        windows = "; ".join(_window(entry) for entry in lines)
        msg = f"signed by {signed.fingerprint} at {when.isoformat()}, outside the time its key is trusted ({windows})"
        raise UntrustedSignerError(place, msg)


@functools.lru_cache(maxsize=16)
def _parsed(text: str, where: str) -> AllowedSigners:
    """:meth:`AllowedSigners.parse`, kept for the same text: a restore reads the file every time, but
    parses it (~13 µs a line) only when its text changed. The object is never changed after it is made."""
    return AllowedSigners.parse(text, where)


def _window(entry: Allowed) -> str:
    after = entry.valid_after.isoformat() if entry.valid_after else "any time"
    before = entry.valid_before.isoformat() if entry.valid_before else "any time"
    return f"{entry.principal}: from {after} to {before} (line {entry.line})"


def _next_token(line: str, at: int) -> tuple[str, int]:
    """The token at *at* (blank space outside double quotes ends it; ``\\"`` inside quotes is a quote),
    and where the next one starts. Raises ValueError for a quote not closed."""
    quoted = False
    index = at
    while index < len(line):
        char = line[index]
        if quoted and char == "\\" and line[index + 1 : index + 2] == '"':
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif not quoted and char in BLANK + "\r":
            break
        index += 1
    if quoted:
        msg = "a quote is not closed"
        raise ValueError(msg)
    token = line[at:index]
    while index < len(line) and line[index] in BLANK + "\r":
        index += 1
    return token, index


def _entry(line: str, number: int) -> Allowed:
    """One line: principals, options (when the next word is not a key type), the key; the rest is a comment."""
    if len(line) > MAX_LINE:
        msg = f"longer than {MAX_LINE:,} characters"
        raise ValueError(msg)
    first, at = _next_token(line, 0)
    principals = tuple(p for p in _unquoted(first).split(",") if p)
    if not principals or at >= len(line):
        msg = "expected: principals [options] key-type key [comment]"
        raise ValueError(msg)
    word, after = _next_token(line, at)
    options: dict[str, str | None] = {}
    if not KEY_TYPES.fullmatch(word):
        options = _options(word)
        at = after
    key_type, at = _next_token(line, at) if at < len(line) else ("", at)
    encoded = line[at:].split(None, 1)[0] if line[at:].strip() else ""
    if not KEY_TYPES.fullmatch(key_type) or not encoded:
        msg = f"no key after the principals and options (found {key_type or 'nothing'!r})"
        raise ValueError(msg)
    key = parse_key_line(f"{key_type} {encoded}")
    namespaces = options.get("namespaces")
    valid_after, valid_before = _time(options.get("valid-after")), _time(options.get("valid-before"))
    if valid_after is not None and valid_before is not None and valid_before <= valid_after:
        msg = "valid-before is not after valid-after"
        raise ValueError(msg)
    return Allowed(
        principals=principals,
        key=key,
        namespaces=tuple(n for n in namespaces.split(",") if n) if namespaces is not None else None,
        valid_after=valid_after,
        valid_before=valid_before,
        cert_authority="cert-authority" in options,
        line=number,
    )


def _unquoted(text: str) -> str:
    """A principals word: in quotes (which may hold blank space) or bare."""
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _options(text: str) -> dict[str, str | None]:
    """``name="value"`` and ``cert-authority``, comma-separated, as OpenSSH's ``sshsigopt_parse`` reads them."""
    found: dict[str, str | None] = {}
    at = 0
    while at < len(text):
        lowered = text[at:].lower()
        if lowered.startswith("cert-authority") and text[at + 14 : at + 15] in ("", ","):
            found["cert-authority"] = None
            at += 14
        else:
            name = next((n for n in ("namespaces", "valid-after", "valid-before") if lowered.startswith(n + "=")), None)
            if name is None:
                unknown = re.split("[,=]", text[at:], maxsplit=1)[0]
                msg = f"unknown option {unknown!r} (known: cert-authority, namespaces, valid-after, valid-before)"
                raise ValueError(msg)
            if name in found:
                msg = f"more than one {name} option"
                raise ValueError(msg)
            found[name], at = _dequote(text, at + len(name) + 1, name)
        if at < len(text):
            if text[at] != ",":
                msg = f"options must be separated by commas (found {text[at]!r})"
                raise ValueError(msg)
            at += 1
    return found


def _dequote(text: str, at: int, name: str) -> tuple[str, int]:
    """A quoted option value starting at *at* (``\\"`` is a quote), and where it ends."""
    if text[at : at + 1] != '"':
        msg = f"the value of {name} must be in double quotes"
        raise ValueError(msg)
    value: list[str] = []
    index = at + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1 : index + 2] == '"':
            value.append('"')
            index += 2
            continue
        if char == '"':
            return "".join(value), index + 1
        value.append(char)
        index += 1
    msg = f"the value of {name} has no closing quote"
    raise ValueError(msg)


def _time(text: str | None) -> dt.datetime | None:
    """``YYYYMMDD[HHMM[SS]]``, then ``Z`` or ``UTC`` for UTC, else local time, as OpenSSH's ``parse_absolute_time``.

    Kept as an aware datetime in UTC; a time at or before 1970 is refused, as OpenSSH refuses it.
    """
    if text is None:
        return None
    digits, utc = text, False
    for suffix in ("Z", "UTC"):
        if len(text) > len(suffix) and text.upper().endswith(suffix):
            digits, utc = text[: -len(suffix)], True
            break
    if not (digits.isascii() and digits.isdigit() and len(digits) in (8, 12, 14)):
        msg = f"a time written {text!r}: expected YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, then Z for UTC"
        raise ValueError(msg)
    try:
        moment = dt.datetime.strptime(digits.ljust(14, "0"), "%Y%m%d%H%M%S")
        seconds = calendar.timegm(moment.timetuple()) if utc else time.mktime(moment.timetuple())
    except (ValueError, OverflowError) as exc:
        msg = f"a time written {text!r} that is not a date: {exc}"
        raise ValueError(msg) from exc
    if seconds <= 0:
        msg = f"a time written {text!r} at or before 1970"
        raise ValueError(msg)
    try:
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    except OverflowError:  # local 9999-12-31 23:59:59 west of UTC is past what datetime holds: never reached
        return dt.datetime.max.replace(tzinfo=dt.UTC)
