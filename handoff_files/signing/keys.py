"""Signing keys: an OpenSSH Ed25519 private key read from a file, or made for an agent that has none.

A person signs with the key they already sign git commits with (``~/.ssh/id_ed25519``, unencrypted,
or one made for the purpose); an agent running as a service gets its own from ``handoff keys
create``. Which key a save uses: the one it is given, else the one the user's configuration names
(:func:`configured_key`), else none (the save is unsigned, as before signatures existed).

A private key file is refused, as ``ssh`` refuses it, when another user could read it (a mode
other than owner-only), and when it is passphrase-protected (this library asks no one for a
passphrase; ``ssh-agent`` support is not written yet).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from handoff_files.foundation.atomic import fsync_dir, read_bytes
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffTooLargeError, SigningKeyError
from handoff_files.signing import sshsig

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "CONFIG_NAME",
    "KEY_ENV",
    "SigningKey",
    "allowed_signers_line",
    "check_principal",
    "config_dir",
    "configured_key",
    "create_key",
    "default_key_path",
    "load_signing_key",
]

#: The environment variable naming the signing key file, before the configuration file.
KEY_ENV: Final = "HANDOFF_FILES_SIGNING_KEY"
#: The configuration file in :func:`config_dir`: TOML, ``signing_key = "PATH"`` (``~`` expanded).
CONFIG_NAME: Final = "config.toml"
#: The key ``handoff keys create`` makes when given no path, in :func:`config_dir`.
DEFAULT_KEY_NAME: Final = "signing_key"
_MAX_KEY_FILE: Final = 16 * 1024  # an Ed25519 key file is ~400 bytes
_MAX_CONFIG: Final = 64 * 1024
_PRIVATE_MODE: Final = 0o600


@dataclass(frozen=True, slots=True)
class SigningKey:
    """An Ed25519 private key, and the file it came from."""

    private: Ed25519PrivateKey
    path: Path
    _blob: bytes = field(init=False, repr=False, compare=False)  # the public key, worked out once
    _fingerprint: str = field(init=False, repr=False, compare=False)  # and its fingerprint (a save asks twice)

    def __post_init__(self) -> None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat  # noqa: PLC0415 -- lazy

        raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        object.__setattr__(self, "_blob", sshsig.key_blob(raw))
        object.__setattr__(self, "_fingerprint", sshsig.fingerprint(self._blob))

    @property
    def key(self) -> bytes:
        """The public key's SSH wire blob."""
        return self._blob

    @property
    def public_line(self) -> str:
        """``ssh-ed25519 AAAA…``, the key as a ``.pub`` file and ``allowed_signers`` write it."""
        return sshsig.key_line(self.key)

    @property
    def fingerprint(self) -> str:
        """``SHA256:…``, as ``ssh-keygen -l`` prints the key."""
        return self._fingerprint

    def sign(self, message: bytes) -> str:
        """The armored SSHSIG signature of *message* (namespace ``handoff-files``)."""
        return sshsig.sign(message, self.private, public=self._blob)


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/handoff-files`` (``~/.config/handoff-files`` when unset): ``allowed_signers`` and
    ``config.toml`` live there, outside every thread."""
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "handoff-files"


def default_key_path() -> Path:
    """``signing_key`` in :func:`config_dir`: where ``handoff keys create`` puts a key given no path."""
    return config_dir() / DEFAULT_KEY_NAME


def check_principal(principal: str) -> str:
    """*principal* if it can stand as the first word of an ``allowed_signers`` line, as OpenSSH reads it.

    One or more names, comma-separated, each of printable characters with no blank space or
    double quote, not starting with ``#`` (a comment) or ``!`` (a negation).

    :raises ValueError: saying what is wrong.
    """
    names = principal.split(",")
    for name in names:
        if not name:
            msg = f"an empty name in {principal!r}"
            raise ValueError(msg)
        if not name.isprintable() or any(c.isspace() or c == '"' for c in name):
            msg = f"{name!r} holds blank space, a quote or a control character, which allowed_signers cannot hold"
            raise ValueError(msg)
    if principal[0] in "#!":
        read_as = "comment" if principal[0] == "#" else "negation"
        msg = f"{principal!r} starts with {principal[0]!r}: allowed_signers would read a {read_as}"
        raise ValueError(msg)
    return principal


def allowed_signers_line(key: SigningKey, principal: str) -> str:
    """The ``allowed_signers`` line that trusts *key* as *principal* for handoffs (and nothing else).

    :raises ValueError: for a principal the line cannot hold (see :func:`check_principal`).
    """
    return f'{check_principal(principal)} namespaces="{sshsig.NAMESPACE}" {key.public_line}'


def configured_key() -> Path | None:
    """The signing key the user's configuration names: ``$HANDOFF_FILES_SIGNING_KEY``, else
    ``signing_key`` in ``config.toml``, else :func:`default_key_path` if that file exists; None if none does.

    With no home directory there is no configuration folder, so no configured key (None).

    :raises HandoffParseError: if ``config.toml`` is not TOML, or its ``signing_key`` not a string.
    :raises SigningKeyError: if the path it names starts with a ``~`` that cannot be expanded.
    """
    named = os.environ.get(KEY_ENV)
    if named:
        return _expanded(named, f"${KEY_ENV}")
    try:
        config = config_dir() / CONFIG_NAME
    except RuntimeError:  # no home directory, and no $XDG_CONFIG_HOME
        return None
    try:
        data, _ = read_bytes(config, _MAX_CONFIG)
    except HandoffNotFoundError:
        return default_key_path() if os.path.lexists(default_key_path()) else None
    from handoff_files.foundation.errors import HandoffParseError  # noqa: PLC0415 -- only on this path

    try:
        settings = tomllib.loads(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        msg = f"not a TOML file: {exc}"
        raise HandoffParseError(config, msg) from exc
    unknown = sorted(set(settings) - {"signing_key"})
    if unknown:  # a misspelt setting must not leave another key signing in silence
        msg = f'unknown setting {unknown[0]!r}: this file holds signing_key = "PATH" alone'
        raise HandoffParseError(config, msg)
    value = settings.get("signing_key")
    if value is None:
        return default_key_path() if os.path.lexists(default_key_path()) else None
    if not isinstance(value, str) or not value:
        found = str(value).lower() if isinstance(value, bool) else repr(value)  # TOML spells false so
        msg = f"signing_key must be a key file's path in quotes, not {found}"
        raise HandoffParseError(config, msg)
    return _expanded(value, f"signing_key in {config}")


def _expanded(path: str, named_by: str) -> Path:
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:  # "~someone" with no such user, or "~" with no home directory
        msg = f"{named_by} names it, and its '~' cannot be expanded here ({exc})"
        raise SigningKeyError(path, msg) from exc


def load_signing_key(path: str | os.PathLike[str]) -> SigningKey:
    """Read an OpenSSH Ed25519 private key (``-----BEGIN OPENSSH PRIVATE KEY-----``).

    :raises SigningKeyError: if it is missing, not a regular file, readable or writable by another
        user, passphrase-protected, not Ed25519, or not a key.
    """
    from cryptography.exceptions import UnsupportedAlgorithm  # noqa: PLC0415 -- lazy
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: PLC0415
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key  # noqa: PLC0415
    from cryptography.utils import CryptographyDeprecationWarning  # noqa: PLC0415

    target = Path(path)
    try:
        data, st = read_bytes(target, _MAX_KEY_FILE)
    except HandoffNotFoundError as exc:
        msg = "no such key file (`handoff keys create PATH` makes one)"
        raise SigningKeyError(target, msg) from exc
    except HandoffTooLargeError as exc:
        msg = f"over {_MAX_KEY_FILE:,} bytes: not a key file (an Ed25519 private key file is about 400)"
        raise SigningKeyError(target, msg) from exc
    except HandoffError as exc:
        raise SigningKeyError(target, exc.reason) from exc
    if data.startswith((b"ssh-", b"ecdsa-", b"sk-")):
        msg = "a public key (a .pub file): give the private key file beside it"
        raise SigningKeyError(target, msg)
    if not data.lstrip().startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----"):
        found = "a PEM key" if data.lstrip().startswith(b"-----BEGIN ") else "not a key"
        msg = f"{found}: expected an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----, ssh-keygen -t ed25519)"
        raise SigningKeyError(target, msg)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        msg = (
            f"a private key must be this user's and readable by no one else (mode {stat.S_IMODE(st.st_mode):04o}, "
            f"owner uid {st.st_uid}); chmod 600 it, as ssh asks"
        )
        raise SigningKeyError(target, msg)
    try:
        with warnings.catch_warnings():  # a DSA key warns it is deprecated: it is refused below in any case
            warnings.simplefilter("ignore", CryptographyDeprecationWarning)
            private = load_ssh_private_key(data, password=None)
    except TypeError as exc:  # cryptography: "Password was not given but private key is encrypted"
        msg = "passphrase-protected: this library asks for no passphrase; sign with an unencrypted key kept 0600"
        raise SigningKeyError(target, msg) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        msg = f"a damaged or unsupported OpenSSH private key ({exc})"
        raise SigningKeyError(target, msg) from exc
    if not isinstance(private, Ed25519PrivateKey):
        msg = f"{_kind(private)}; handoffs are signed with Ed25519 keys only (ssh-keygen -t ed25519)"
        raise SigningKeyError(target, msg)
    return SigningKey(private, target)


def _kind(private: object) -> str:
    """A key's type as a person names it: "an RSA key", "an ECDSA key" …"""
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, rsa  # noqa: PLC0415 -- lazy

    kinds: tuple[tuple[type, str], ...] = (
        (rsa.RSAPrivateKey, "an RSA key"),
        (ec.EllipticCurvePrivateKey, "an ECDSA key"),
        (ed448.Ed448PrivateKey, "an Ed448 key"),
    )
    found = next((name for cls, name in kinds if isinstance(private, cls)), None)
    if found is not None:
        return found
    # DSA by its class's name: cryptography 51 deprecates DSA, and looking up its class warns
    name = type(private).__name__
    return "a DSA key" if name.startswith("DSA") else f"a {name} key"


def create_key(path: str | os.PathLike[str], *, comment: str = "") -> SigningKey:
    """Make a new Ed25519 key: *path* (OpenSSH private key, mode 0600) and *path*``.pub`` (its public line).

    Neither file may exist (a key is never overwritten); the folder is made (0700) if missing.
    Both are flushed before return.

    :raises SigningKeyError: if either file exists, or they cannot be written.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: PLC0415 -- lazy
    from cryptography.hazmat.primitives.serialization import (  # noqa: PLC0415
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    target = Path(path)
    public = target.with_name(target.name + ".pub")
    for existing in (target, public):
        if existing.is_dir():
            msg = "a folder: give the path of the key file to make (for example FOLDER/signing_key)"
            raise SigningKeyError(existing, msg)
        if os.path.lexists(existing):
            msg = "already exists: a key is never overwritten (choose another path, or remove it first)"
            raise SigningKeyError(existing, msg)
    if comment and not (comment.isprintable() and "\n" not in comment):
        msg = f"the comment {comment!r} holds a line end or a control character: the .pub file is one line"
        raise SigningKeyError(target, msg)
    key = SigningKey(Ed25519PrivateKey.generate(), target)
    private = key.private.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption())
    line = key.public_line + (f" {comment}" if comment else "") + "\n"
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_new(target, private, _PRIVATE_MODE)
        _write_new(public, line.encode(), 0o644)
        fsync_dir(target.parent)
    except (OSError, HandoffError) as exc:
        reason = exc.reason if isinstance(exc, HandoffError) else (exc.strerror or str(exc))
        msg = f"cannot write the key: {reason}"
        raise SigningKeyError(target, msg) from exc
    return key


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Write *data* to a new file at *path* with *mode*, whole or not at all (a temp file linked into place)."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)  # not widened or narrowed by the umask
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)  # fails if the name was taken meanwhile: never over another file
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
