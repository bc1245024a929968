"""Signatures on a thread's generations: which key signs a save, and what a restore says of the signer.

A generation's signature (format 2.1, ``seal.signature``) is an SSHSIG signature over its seal's
text ``ALGORITHM:DIGEST`` (docs/signing.md). Two questions are kept apart:

- **Does it verify?** A signature that does not verify over its own seal with the key it names is
  damage, as a digest that does not match is: the recovery ladder passes the copy over
  (:func:`signature_damage`). Nothing outside the file is needed to tell.
- **Who made it, and is that key trusted?** The key is looked up in ``allowed_signers`` (and the
  revoked list) outside the thread (:func:`signer_report`); the answer is reported with the
  restore, never hidden.

``cryptography`` and the signing modules are imported only when a key signs or a signature is
checked: an unsigned thread's restore never loads them.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from handoff_files.foundation.errors import HandoffError, HandoffValidationError, SignatureError, SigningKeyError

if TYPE_CHECKING:
    from typing import TypeAlias

    from handoff_files.format.model import Handoff
    from handoff_files.signing.allowed import AllowedSigners
    from handoff_files.signing.keys import SigningKey

    #: Which key signs a store's saves: a key file's path or a loaded key; None: the one the user's
    #: configuration names (:func:`~handoff_files.signing.keys.configured_key`), if any; False: none.
    KeyChoice: TypeAlias = str | os.PathLike[str] | SigningKey | Literal[False] | None

__all__ = [
    "ALLOWED_SIGNERS_ENV",
    "KeySource",
    "SignatureReport",
    "SignerCheck",
    "checked_signer",
    "default_allowed_signers",
    "seal_signature_damage",
    "sign_document",
    "signature_damage",
    "signer_report",
    "untrusted",
    "verified",
]

#: A path naming another ``allowed_signers`` file than the one in the user's configuration folder.
ALLOWED_SIGNERS_ENV: Final = "HANDOFF_FILES_ALLOWED_SIGNERS"


def default_allowed_signers() -> Path:
    """``$HANDOFF_FILES_ALLOWED_SIGNERS``, else ``allowed_signers`` in the configuration folder
    (``$XDG_CONFIG_HOME/handoff-files/``, default ``~/.config/handoff-files/``)."""
    named = os.environ.get(ALLOWED_SIGNERS_ENV)
    if named:
        return Path(named).expanduser()
    from handoff_files.signing.keys import config_dir  # noqa: PLC0415 -- signing is loaded only when asked

    return config_dir() / "allowed_signers"


class KeySource:
    """The key a store signs with, found once: an explicit key is read at once (a bad one is an
    error when the store is made); the configured one at the first save that needs it.

    :param choice: see :data:`KeyChoice`.
    :param where: the thread, named in errors.
    :raises SigningKeyError: if an explicit key file cannot be used.
    :raises HandoffValidationError: if *choice* is not a path, a key, False or None.
    """

    def __init__(self, choice: KeyChoice, where: str | os.PathLike[str]) -> None:
        self._where = where
        self._resolved = choice is False
        self._key: SigningKey | None = None
        if choice is None or choice is False:
            return
        if isinstance(choice, str | os.PathLike) and not os.fspath(choice):
            msg = "signing_key is an empty path: name the key file (or False for none)"
            raise HandoffValidationError(where, msg)
        from handoff_files.signing.keys import SigningKey, load_signing_key  # noqa: PLC0415 -- only when signing

        if isinstance(choice, SigningKey):
            self._key = choice
        elif isinstance(choice, str | os.PathLike):
            self._key = load_signing_key(choice)
        else:
            msg = f"signing_key must be a key file's path, a SigningKey, False or None, not {type(choice).__name__}"
            raise HandoffValidationError(where, msg)
        self._resolved = True

    def key(self) -> SigningKey | None:
        """The key to sign with, or None; the configured one is looked for once.

        :raises SigningKeyError: if the configured key file cannot be used (never silently unsigned).
        :raises HandoffParseError: if the configuration file cannot be read.
        """
        if not self._resolved:
            from handoff_files.signing.keys import configured_key, load_signing_key  # noqa: PLC0415 -- lazy

            path = configured_key()
            try:
                self._key = load_signing_key(path) if path is not None else None
            except SigningKeyError as exc:  # say which setting named it, and the way to save unsigned
                raise SigningKeyError(exc.path, f"{exc.reason}; {_origin(path)}") from exc
            self._resolved = True
        return self._key


def _origin(path: Path | None) -> str:
    """Which setting named the configured key *path*, and how to save without it."""
    from handoff_files.signing.keys import CONFIG_NAME, KEY_ENV, config_dir, default_key_path  # noqa: PLC0415

    if os.environ.get(KEY_ENV):
        where = f"${KEY_ENV} names it"
    elif path == default_key_path():
        where = "it is the default signing key"
    else:
        where = f"signing_key in {config_dir() / CONFIG_NAME} names it"
    return f"{where} (--no-sign or signing_key=False saves unsigned)"


def sign_document(document: dict[str, Any], key: SigningKey) -> None:
    """Sign a sealed document in place: ``seal.signature`` over the seal's text (outside what the digest covers)."""
    seal = document["seal"]
    seal["signature"] = key.sign(f"{seal['algorithm']}:{seal['digest']}".encode())


def signature_damage(handoff: Handoff, where: str | os.PathLike[str]) -> str | None:
    """Why *handoff*'s signature does not verify over its seal (damage), or None (unsigned, or it verifies)."""
    seal = handoff.seal
    if seal is None or seal.signature is None:
        return None
    return seal_signature_damage(str(seal), seal.signature, where)


def seal_signature_damage(seal: str, signature: object, where: str | os.PathLike[str]) -> str | None:
    """Why *signature* (a file's ``seal.signature``) does not verify over the seal's text *seal*; None if it does."""
    if not isinstance(signature, str):
        return "its signature is not an armored SSH signature"
    from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed generation loads it

    try:
        sshsig.verify(signature, seal.encode(), where)
    except SignatureError as exc:
        return f"its signature does not verify over its seal: {exc.reason}"
    return None


def untrusted(report: SignatureReport | None) -> str:
    """Why a generation with *report* (None: unsigned) is not one a trusted key signed."""
    return "unsigned" if report is None else report.distrust


def verified(handoff: Handoff, where: str | os.PathLike[str]) -> Handoff:
    """*handoff*, once its signature (if any) verifies over its seal: what a thread's reader checks after load().

    :raises SignatureError: if it does not (damage, as a digest that does not match is).
    """
    bad = signature_damage(handoff, where)
    if bad is not None:
        raise SignatureError(where, bad)
    return handoff


@dataclass(frozen=True, slots=True)
class SignatureReport:
    """Who signed a generation, as this user's ``allowed_signers`` sees it.

    ``principal`` is the name the file gives the key (None: not trusted, ``problem`` says why: a
    key not listed, listed for another namespace or outside its ``valid-after``/``valid-before``
    window at the generation's time, or revoked). ``fingerprint`` is the key's, ``SHA256:…``.
    """

    fingerprint: str
    principal: str | None
    problem: str | None
    allowed_signers: Path

    @property
    def trusted(self) -> bool:
        """True when ``allowed_signers`` trusts the key for handoffs at the generation's time."""
        return self.principal is not None

    @property
    def distrust(self) -> str:
        """Why the signer is not trusted, naming its key: ``signed by SHA256:…, a key not in …``."""
        problem = self.problem or "no reason given"
        return problem if self.fingerprint in problem else f"signed by {self.fingerprint}: {problem}"

    def describe(self) -> str:
        """One line: ``signed by alice@example.com (SHA256:…)``, or ``not trusted: `` and why."""
        if self.principal is not None:
            return f"signed by {self.principal} ({self.fingerprint})"
        return f"not trusted: {self.distrust}"


class SignerCheck:
    """Who signed each of a thread's generations: ``allowed_signers`` and ``revoked_keys`` are read once,
    at the first signed generation (an unsigned thread never reads them, nor loads the signing layer).

    :param allowed_signers: the file (default: :func:`default_allowed_signers`); ``revoked_keys``
        beside it is read too. A missing file trusts no one.
    """

    def __init__(self, allowed_signers: Path | None = None) -> None:
        self._path = allowed_signers
        # (allowed, revoked keys, None) once read, or (None, None, why no one is trusted)
        self._trust: tuple[AllowedSigners | None, frozenset[bytes], str | None] | None = None

    def report(self, handoff: Handoff, where: str | os.PathLike[str]) -> SignatureReport | None:
        """Who signed *handoff*, looked up in ``allowed_signers`` at its ``created_at``; None if unsigned.

        The signature is taken as verified (see :func:`signature_damage`; restore passes over a copy
        whose signature does not). A trust file that cannot be read (too large, open to others'
        writes) trusts no one, and the report says why: the generation is never hidden for it.
        """
        seal = handoff.seal
        if seal is None or seal.signature is None:
            return None
        return self.signer(seal.signature, handoff.created_at, where)

    def signer(self, armored: str, at: dt.datetime, where: str | os.PathLike[str]) -> SignatureReport:
        """Who made the (verified) signature *armored*, looked up in ``allowed_signers`` at the moment *at*.

        :raises SignatureError: if *armored* is not an SSHSIG signature.
        """
        from handoff_files.signing import sshsig  # noqa: PLC0415 -- only a signed generation loads it

        signed = sshsig.parse(armored, where)
        try:
            path = self._path if self._path is not None else default_allowed_signers()
        except RuntimeError as exc:  # a "~" that cannot be expanded, or no home directory
            return SignatureReport(signed.fingerprint, None, f"no allowed_signers can be found: {exc}", Path())
        trusted, revoked, unreadable = self._files(path)
        if trusted is None:
            return SignatureReport(signed.fingerprint, None, unreadable, path)
        at = at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)
        try:
            principal = trusted.signer_of(signed, at=at, revoked=revoked, where=where)
        except HandoffError as exc:
            return SignatureReport(signed.fingerprint, None, exc.reason + _unread(trusted), path)
        return SignatureReport(signed.fingerprint, principal, None, path)

    def _files(self, path: Path) -> tuple[AllowedSigners | None, frozenset[bytes], str | None]:
        if self._trust is None:
            from handoff_files.signing.allowed import AllowedSigners  # noqa: PLC0415 -- only when signed
            from handoff_files.signing.revoked import REVOKED_NAME, load_revoked  # noqa: PLC0415

            try:  # read every time (a file edited in place is never missed), parsed once per text
                self._trust = (
                    AllowedSigners.load(path, missing_ok=True),
                    load_revoked(path.parent / REVOKED_NAME, missing_ok=True),
                    None,
                )
            except HandoffError as exc:
                self._trust = (None, frozenset(), str(exc))
        return self._trust


def _unread(trusted: AllowedSigners) -> str:
    """What a refusal adds about the file itself: that it does not exist, or the lines it could not read."""
    if trusted.path is not None and not os.path.lexists(trusted.path):
        return " (there is no such file: no signer is trusted until one is made, see docs/signing.md)"
    if trusted.problems:
        more = f", and {len(trusted.problems) - 1} more" if len(trusted.problems) > 1 else ""
        return f" (its lines that could not be read trust no one: {trusted.problems[0]}{more})"
    return ""


def signer_report(
    handoff: Handoff, where: str | os.PathLike[str], *, allowed_signers: Path | None = None
) -> SignatureReport | None:
    """Who signed *handoff* (see :meth:`SignerCheck.report`); None if unsigned."""
    return SignerCheck(allowed_signers).report(handoff, where)


def checked_signer(
    handoff: Handoff, where: str | os.PathLike[str], *, allowed_signers: Path | None = None
) -> SignatureReport | None:
    """Verify *handoff*'s signature, then say who made it, for a file read on its own (not restored).

    :raises SignatureError: if the signature does not verify over the seal (the file is damaged or forged).
    """
    return signer_report(verified(handoff, where), where, allowed_signers=allowed_signers)
