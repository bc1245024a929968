"""SSHSIG, OpenSSH's signature format (PROTOCOL.sshsig), for Ed25519 keys: sign, read, verify.

A signature made here is the one ``ssh-keygen -Y sign -n handoff-files`` makes over the same
message (same framing, same armor, SHA-512 as its default hash), so ``ssh-keygen -Y verify``
checks it, and one it made verifies here. What is signed is not the message itself but::

    "SSHSIG" || string(namespace) || string(reserved = "") || string(hash name) || string(H(message))

and the signature travels as a blob, base64 between ``-----BEGIN SSH SIGNATURE-----`` and
``-----END SSH SIGNATURE-----``::

    "SSHSIG" || uint32(1) || string(public key) || string(namespace) || string(reserved)
             || string(hash name) || string(string("ssh-ed25519") || string(64-byte signature))

The namespace keeps a handoff signature from being replayed as a git commit's or a file's
(``ssh-keygen`` signs those under ``git`` and ``file``), and theirs from passing here.
Only the framing is written here; the Ed25519 primitive is ``cryptography``'s.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from handoff_files.foundation.errors import SignatureError
from handoff_files.signing.wire import Reader, WireError, string, uint32

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "KEY_TYPE",
    "MAX_ARMORED",
    "NAMESPACE",
    "Signed",
    "fingerprint",
    "key_blob",
    "key_line",
    "parse",
    "parse_key_line",
    "sign",
    "to_sign",
    "verify",
]

#: The namespace every handoff-files signature is made in (``ssh-keygen -n handoff-files``).
NAMESPACE: Final = "handoff-files"
#: The one key type signed and verified here.
KEY_TYPE: Final = "ssh-ed25519"
#: The armored form's size limit, checked before it is read (an Ed25519 signature's is ~300 bytes).
MAX_ARMORED: Final = 4096

_MAGIC: Final = b"SSHSIG"
_VERSION: Final = 1
_HASHES: Final = {"sha512": hashlib.sha512, "sha256": hashlib.sha256}
_SIGN_HASH: Final = "sha512"  # ssh-keygen's default
_SIGNATURE_HEAD: Final = string(KEY_TYPE)  # an Ed25519 signature's type, before its bytes
_BEGIN: Final = "-----BEGIN SSH SIGNATURE-----"
_END: Final = "-----END SSH SIGNATURE-----"
_WRAP: Final = 70  # ssh-keygen's line width
_RAW_KEY: Final = 32
_RAW_SIGNATURE: Final = 64


@dataclass(frozen=True, slots=True)
class Signed:
    """What a signature says of itself: the key that made it (its SSH wire blob) and how."""

    key: bytes
    namespace: str
    hash_algorithm: str
    signature: bytes

    @property
    def key_line(self) -> str:
        """The key as ``allowed_signers`` and ``.pub`` files write it: ``ssh-ed25519 AAAA…``."""
        return key_line(self.key)

    @property
    def fingerprint(self) -> str:
        """The key's fingerprint as ``ssh-keygen -l`` prints it: ``SHA256:…``."""
        return fingerprint(self.key)


def key_blob(raw: bytes) -> bytes:
    """The SSH wire blob of a raw 32-byte Ed25519 public key."""
    return string(KEY_TYPE) + string(raw)


def key_line(blob: bytes) -> str:
    """``ssh-ed25519 <base64 of the blob>``."""
    return f"{KEY_TYPE} {base64.b64encode(blob).decode()}"


def fingerprint(blob: bytes) -> str:
    """``SHA256:`` and the unpadded base64 of the blob's SHA-256, as OpenSSH prints a key."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def parse_key_line(text: str) -> bytes | None:
    """The wire blob of ``ssh-ed25519 <base64>`` (a comment after it allowed); None for another key type.

    :raises ValueError: if it is an ``ssh-ed25519`` line whose key does not decode or is not one.
    """
    parts = text.split()
    if len(parts) < 2 or parts[0] != KEY_TYPE:
        return None
    try:
        blob = base64.b64decode(parts[1], validate=True)
        _raw_key(blob)
    except (binascii.Error, WireError) as exc:
        msg = f"not an {KEY_TYPE} public key: {exc}"
        raise ValueError(msg) from exc
    return blob


#: public keys made lately, by their blob: a thread's restores verify one key's signatures again and again
_PUBLIC: dict[bytes, Ed25519PublicKey] = {}


def _raw_key(blob: bytes) -> bytes:
    reader = Reader(blob)
    if reader.string() != KEY_TYPE.encode():
        msg = f"a key that is not {KEY_TYPE}"
        raise WireError(msg)
    raw = reader.string()
    reader.end()
    if len(raw) != _RAW_KEY:
        msg = f"an {KEY_TYPE} key of {len(raw)} bytes, not {_RAW_KEY}"
        raise WireError(msg)
    return raw


#: what comes before the message's digest in the bytes signed, by namespace and hash (the same every time)
_HEADS: dict[tuple[str, str], bytes] = {}
#: what comes before the signature in a signature blob, by public key and namespace (a key signs again and again)
_BLOB_HEADS: dict[tuple[bytes, str], bytes] = {}


def to_sign(message: bytes, namespace: str, hash_algorithm: str) -> bytes:
    """The bytes an SSHSIG signature signs over *message* (see the module's text)."""
    digest = _HASHES[hash_algorithm](message).digest()
    head = _HEADS.get((namespace, hash_algorithm))
    if head is None:
        head = _MAGIC + string(namespace) + string(b"") + string(hash_algorithm)
        if len(_HEADS) < _KEEP:
            _HEADS[namespace, hash_algorithm] = head
    return head + string(digest)


def sign(message: bytes, key: Ed25519PrivateKey, *, namespace: str = NAMESPACE, public: bytes | None = None) -> str:
    """Sign *message* with *key* in *namespace*: the armored signature, as ``ssh-keygen -Y sign`` writes it.

    :param public: *key*'s public key blob, if the caller has it (else it is worked out).
    """
    if public is None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat  # noqa: PLC0415 -- lazy

        public = key_blob(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    signature = key.sign(to_sign(message, namespace, _SIGN_HASH))
    head = _BLOB_HEADS.get((public, namespace))
    if head is None:
        head = _MAGIC + uint32(_VERSION) + string(public) + string(namespace) + string(b"") + string(_SIGN_HASH)
        if len(_BLOB_HEADS) < _KEEP:
            _BLOB_HEADS[public, namespace] = head
    blob = head + string(_SIGNATURE_HEAD + string(signature))
    encoded = base64.b64encode(blob).decode()
    lines = [encoded[at : at + _WRAP] for at in range(0, len(encoded), _WRAP)]
    return "\n".join([_BEGIN, *lines, _END]) + "\n"


#: signatures parsed lately, by their armored text: a restore parses one to verify it, then to name its signer
_PARSED: dict[str, Signed] = {}
_KEEP: Final = 256


def parse(armored: str, where: str | os.PathLike[str]) -> Signed:
    """Read an armored signature; nothing is verified (one already read in this process is not read again).

    The armor as ``ssh-keygen`` writes it: the BEGIN line first (nothing before it, as
    ``ssh-keygen -Y verify`` requires), base64 lines of any width, the END line last. Stricter than
    ``ssh-keygen`` in one point: nothing but line ends may follow the END line (it ignores text there).

    :param where: the file holding it, named in errors.
    :raises SignatureError: if it is not an Ed25519 SSHSIG signature of version 1 (too long,
        no armor, bad base64, cut short, bytes left over, another key type or hash).
    """
    known = _PARSED.get(armored)
    if known is not None:
        return known
    if len(armored) > MAX_ARMORED:
        msg = f"a signature of {len(armored):,} characters, over the {MAX_ARMORED:,} an Ed25519 one can take"
        raise SignatureError(where, msg)
    lines = armored.rstrip("\r\n").split("\n")
    if len(lines) < 3 or lines[0].rstrip("\r") != _BEGIN or lines[-1].rstrip("\r") != _END:
        msg = f"not an armored SSH signature (it must start with {_BEGIN} and end with {_END})"
        raise SignatureError(where, msg)
    try:
        blob = base64.b64decode("".join(line.strip() for line in lines[1:-1]), validate=True)
        signed = _read_blob(blob)
    except (binascii.Error, WireError, ValueError) as exc:
        msg = f"not a valid SSH signature: {exc}"
        raise SignatureError(where, msg) from exc
    if len(_PARSED) >= _KEEP:
        _PARSED.clear()
    _PARSED[armored] = signed
    return signed


def _read_blob(blob: bytes) -> Signed:
    reader = Reader(blob)
    if reader.raw(len(_MAGIC)) != _MAGIC:
        msg = "no SSHSIG preamble"
        raise WireError(msg)
    version = reader.uint32()
    if version != _VERSION:
        msg = f"signature format version {version}; this library reads {_VERSION}"
        raise WireError(msg)
    key = reader.string()
    _raw_key(key)
    namespace, _reserved, hash_algorithm = reader.text(), reader.string(), reader.text()
    if hash_algorithm not in _HASHES:
        msg = f"hash {hash_algorithm!r}; SSHSIG allows {' or '.join(sorted(_HASHES))}"
        raise WireError(msg)
    inner = Reader(reader.string())
    reader.end()
    if inner.string() != KEY_TYPE.encode():
        msg = f"a signature that is not {KEY_TYPE}"
        raise WireError(msg)
    signature = inner.string()
    inner.end()
    if len(signature) != _RAW_SIGNATURE:
        msg = f"an {KEY_TYPE} signature of {len(signature)} bytes, not {_RAW_SIGNATURE}"
        raise WireError(msg)
    return Signed(key, namespace, hash_algorithm, signature)


def verify(armored: str, message: bytes, where: str | os.PathLike[str], *, namespace: str = NAMESPACE) -> Signed:
    """Check that *armored* is a signature over *message* in *namespace* by the key it names; return it.

    Who that key is, and whether it is trusted, is :mod:`~handoff_files.signing.allowed`'s question:
    this checks only that the key in the signature made it.

    :raises SignatureError: if it cannot be read (see :func:`parse`), was made in another
        namespace, or does not verify over *message*.
    """
    from cryptography.exceptions import InvalidSignature  # noqa: PLC0415 -- lazy: cryptography is imported to check
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: PLC0415

    signed = parse(armored, where)
    if signed.namespace != namespace:
        msg = f"a signature made for {signed.namespace!r}, not {namespace!r}: never accepted in place of one"
        raise SignatureError(where, msg)
    public = _PUBLIC.get(signed.key)
    if public is None:
        public = Ed25519PublicKey.from_public_bytes(_raw_key(signed.key))
        if len(_PUBLIC) >= _KEEP:
            _PUBLIC.clear()
        _PUBLIC[signed.key] = public
    try:
        public.verify(signed.signature, to_sign(message, namespace, signed.hash_algorithm))
    except InvalidSignature as exc:
        msg = f"the signature by {signed.fingerprint} does not verify: what it signs was changed, or it was forged"
        raise SignatureError(where, msg) from exc
    return signed
