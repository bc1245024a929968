"""Who is trusted: an ``allowed_signers`` file in OpenSSH's format, and a list of revoked keys.

One entry per line, as ``ssh-keygen -Y verify -f allowed_signers`` reads it::

    alice@example.com,alice@laptop namespaces="git,handoff-files" ssh-ed25519 AAAAC3Nz… alice
    build-agent@ci valid-before="20270101Z" ssh-ed25519 AAAAC3Nz…
    build-agent@ci valid-after="20270101Z" ssh-ed25519 AAAAC3Nz…

- the principals: comma-separated, ``*`` and ``?`` as wildcards, a leading ``!`` for "not";
- options (optional): ``namespaces="…"`` (the namespaces the key may sign in; patterns),
  ``valid-after="…"``, ``valid-before="…"`` (``YYYYMMDD[HHMM[SS]]``, UTC with a trailing ``Z``,
  else local time), ``cert-authority`` (a CA for certificates: read, never matched, since
  handoffs are signed with plain keys);
- the key, then a comment. Blank lines and lines starting with ``#`` are skipped.

Rotation is a new line for the new key and ``valid-before`` on the old one: a signature is judged
at the time the signed generation says it was made (its ``created_at``, which the signature
covers), so what the old key signed before stays valid and what it signs after does not.
Keys of other types (``ssh-rsa``, ``ecdsa-…``; a team's file for git may list them) are read and
never match. The revoked-keys list holds public key lines (``ssh-ed25519 AAAA…``), as the plain
form of ``ssh-keygen -Y verify -r`` does; a binary KRL is refused with a clear error.

Both files are bounded (1 MiB, 10,000 lines, 8 KiB a line) before anything is parsed, and
refused when writable by anyone but their owner (whoever can write them is trusted).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from handoff_files.foundation.atomic import read_bytes
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffParseError, UntrustedSignerError
from handoff_files.signing.sshsig import NAMESPACE, Signed, parse_key_line

__all__ = ["ALLOWED_NAME", "REVOKED_NAME", "Allowed", "AllowedSigners", "load_revoked"]

#: The files' names in the configuration folder (:func:`~handoff_files.signing.keys.config_dir`).
ALLOWED_NAME: Final = "allowed_signers"
REVOKED_NAME: Final = "revoked_keys"
_MAX_BYTES: Final = 1024 * 1024
_MAX_LINES: Final = 10_000
_MAX_LINE: Final = 8 * 1024
_KEY_TYPES: Final = re.compile(r"(ssh-|ecdsa-|sk-|rsa-sha2-)[a-z0-9@.\-]+")
_TIME: Final = re.compile(r"(\d{8})(\d{4}(\d{2})?)?(Z)?", re.IGNORECASE)


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
        if fnmatch.fnmatchcase(name, pattern[1:] if negated else pattern):
            if negated:
                return False
            found = True
    return found


class AllowedSigners:
    """The trusted keys of an ``allowed_signers`` file (empty when it does not exist)."""

    def __init__(self, entries: Iterable[Allowed], path: Path | None = None) -> None:
        self.entries = tuple(entries)
        #: the file read, named in errors (None: made in memory)
        self.path = path

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, missing_ok: bool = False) -> AllowedSigners:
        """Read *path*.

        :param missing_ok: a missing file is an empty list (no one trusted), not an error.
        :raises HandoffNotFoundError: if it does not exist (without *missing_ok*).
        :raises HandoffParseError: if it is too large or a line cannot be read (naming the line).
        :raises HandoffError: if it is writable by another user, or not a regular file.
        """
        target = Path(path)
        try:
            text = _read_bounded(target)
        except HandoffNotFoundError:
            if missing_ok:
                return cls((), target)
            raise
        return cls.parse(text, target)

    @classmethod
    def parse(cls, text: str, where: str | os.PathLike[str]) -> AllowedSigners:
        """Read the lines of an ``allowed_signers`` file (*where* is named in errors)."""
        entries = []
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                entries.append(_entry(line, number))
            except ValueError as exc:
                msg = f"line {number}: {exc}"
                raise HandoffParseError(where, msg) from exc
        return cls(entries, Path(where))

    def signer_of(
        self,
        signed: Signed,
        *,
        at: dt.datetime,
        revoked: frozenset[bytes] = frozenset(),
        namespace: str = NAMESPACE,
        where: str | os.PathLike[str] = "",
    ) -> str:
        """The principals trusted to have made *signed* at time *at* (a verified signature's key).

        :param where: the signed file, named in the error.
        :raises UntrustedSignerError: if the key is revoked, on no line, on lines that do not allow
            *namespace*, or on lines whose validity does not hold at *at* (each told apart).
        """
        place = where or (self.path or ALLOWED_NAME)
        if signed.key in revoked:
            msg = f"signed by {signed.fingerprint}, a revoked key"
            raise UntrustedSignerError(place, msg)
        lines = [entry for entry in self.entries if entry.key == signed.key and not entry.cert_authority]
        if not lines:
            msg = f"signed by {signed.fingerprint}, a key not in {self.path or ALLOWED_NAME}"
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


def _window(entry: Allowed) -> str:
    after = entry.valid_after.isoformat() if entry.valid_after else "any time"
    before = entry.valid_before.isoformat() if entry.valid_before else "any time"
    return f"{entry.principal}: from {after} to {before} (line {entry.line})"


def _split(text: str, at: str) -> list[str]:
    """Split *text* where *at* (blank space, or a comma) is outside double quotes; the quotes are kept."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if not quoted and (char.isspace() if at == " " else char == at):
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if quoted:
        msg = "a quote is not closed"
        raise ValueError(msg)
    parts.append("".join(current))
    return [part for part in parts if part] if at == " " else parts


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _entry(line: str, number: int) -> Allowed:
    if len(line) > _MAX_LINE:
        msg = f"longer than {_MAX_LINE:,} characters"
        raise ValueError(msg)
    tokens = _split(line, " ")
    if len(tokens) < 3:
        msg = "expected: principals [options] key-type key [comment]"
        raise ValueError(msg)
    principals = tuple(p for p in _unquoted(tokens[0]).split(",") if p)
    if not principals:
        msg = "no principal"
        raise ValueError(msg)
    options: dict[str, str | None] = {}
    rest = tokens[1:]
    if not _KEY_TYPES.fullmatch(rest[0]):
        options = _options(rest[0])
        rest = rest[1:]
    if len(rest) < 2 or not _KEY_TYPES.fullmatch(rest[0]):
        msg = f"no key after the principals and options (found {rest[0] if rest else 'nothing'!r})"
        raise ValueError(msg)
    key = parse_key_line(f"{rest[0]} {rest[1]}")
    namespaces = options.get("namespaces")
    return Allowed(
        principals=principals,
        key=key,
        namespaces=tuple(n for n in namespaces.split(",") if n) if namespaces is not None else None,
        valid_after=_time(options.get("valid-after")),
        valid_before=_time(options.get("valid-before")),
        cert_authority="cert-authority" in options,
        line=number,
    )


def _options(text: str) -> dict[str, str | None]:
    known = {"namespaces", "valid-after", "valid-before", "cert-authority"}
    found: dict[str, str | None] = {}
    for part in _split(text, ","):
        name, has_value, value = part.partition("=")
        value = _unquoted(value)
        name = name.strip().lower()
        if name not in known:
            msg = f"unknown option {name!r} (known: {', '.join(sorted(known))})"
            raise ValueError(msg)
        if (name == "cert-authority") == bool(has_value):
            msg = f"option {name!r} takes {'no value' if name == 'cert-authority' else 'a value'}"
            raise ValueError(msg)
        found[name] = value if has_value else None
    return found


def _time(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    match = _TIME.fullmatch(text)
    if not match:
        msg = f"a time written {text!r}: expected YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, Z for UTC"
        raise ValueError(msg)
    digits = match.group(1) + (match.group(2) or "0000") + ("" if match.group(3) else "00")
    try:
        moment = dt.datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError as exc:
        msg = f"a time written {text!r} that is not a date: {exc}"
        raise ValueError(msg) from exc
    return moment.replace(tzinfo=dt.UTC) if match.group(4) else moment.astimezone()


def load_revoked(path: str | os.PathLike[str], *, missing_ok: bool = False) -> frozenset[bytes]:
    """The Ed25519 keys a revoked-keys file lists (public key lines; comments and other key types skipped).

    :raises HandoffParseError: for a binary KRL, or a line that is not a key.
    :raises HandoffNotFoundError: if it does not exist (without *missing_ok*).
    """
    target = Path(path)
    try:
        text = _read_bounded(target)
    except HandoffNotFoundError:
        if missing_ok:
            return frozenset()
        raise
    keys = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        if not _KEY_TYPES.fullmatch(tokens[0]):
            msg = f"line {number}: not a public key line (expected ssh-ed25519 AAAA…)"
            raise HandoffParseError(target, msg)
        try:
            key = parse_key_line(line)
        except ValueError as exc:
            msg = f"line {number}: {exc}"
            raise HandoffParseError(target, msg) from exc
        if key is not None:
            keys.add(key)
    return frozenset(keys)


def _read_bounded(path: Path) -> str:
    data, st = read_bytes(path, _MAX_BYTES)
    if st.st_mode & 0o002 or (st.st_uid != os.getuid() and st.st_mode & 0o020):
        msg = (
            f"writable by others (mode {stat.S_IMODE(st.st_mode):04o}): whoever can write it decides whom "
            "handoff-files trusts; make it writable by its owner only"
        )
        raise HandoffError(path, msg)
    if data.startswith(b"SSHKRL"):
        msg = "a binary key revocation list (KRL) is not read here; list the revoked keys as public key lines"
        raise HandoffParseError(path, msg)
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text: {exc}"
        raise HandoffParseError(path, msg) from exc
    if text.count("\n") > _MAX_LINES:
        msg = f"over {_MAX_LINES:,} lines"
        raise HandoffParseError(path, msg)
    return text
