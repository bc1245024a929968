"""SSHSIG: our signatures verify with ssh-keygen, ssh-keygen's verify here, and nothing else does."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from handoff_files import SignatureError
from handoff_files.signing import sshsig
from handoff_files.signing.keys import SigningKey, create_key, load_signing_key
from tests.signing.conftest import needs_ssh_keygen, ssh_keygen

SEAL = b"blake3:6584d6e3a1f0c4b2e9d87f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c"


def _allowed(tmp_path: Path, principal: str, key_line: str, options: str = "") -> Path:
    path = tmp_path / "allowed_signers"
    path.write_text(f"{principal} {options + ' ' if options else ''}{key_line}\n")
    return path


def test_a_signature_verifies_and_names_its_key(key: SigningKey) -> None:
    armored = key.sign(SEAL)
    signed = sshsig.verify(armored, SEAL, "gen.json")
    assert signed.key == key.key
    assert signed.fingerprint == key.fingerprint
    assert signed.namespace == "handoff-files"
    assert armored.startswith("-----BEGIN SSH SIGNATURE-----\n")
    assert armored.endswith("\n-----END SSH SIGNATURE-----\n")
    assert all(len(line) <= 70 for line in armored.splitlines())


@needs_ssh_keygen
def test_ssh_keygen_verifies_ours(tmp_path: Path, key: SigningKey) -> None:
    signature = tmp_path / "seal.sig"
    signature.write_text(key.sign(SEAL))
    allowed = _allowed(tmp_path, "agent@test", key.public_line)
    args = ("-Y", "verify", "-f", str(allowed), "-I", "agent@test", "-n", "handoff-files", "-s", str(signature))
    done = ssh_keygen(*args, stdin=SEAL)
    assert done.returncode == 0, done.stderr
    assert b'Good "handoff-files" signature for agent@test' in done.stdout
    # and it refuses ours over other bytes, or in another namespace, as we do
    assert ssh_keygen(*args, stdin=SEAL + b"0").returncode != 0
    other = ("-Y", "verify", "-f", str(allowed), "-I", "agent@test", "-n", "git", "-s", str(signature))
    assert ssh_keygen(*other, stdin=SEAL).returncode != 0


@needs_ssh_keygen
def test_ours_verifies_ssh_keygens(tmp_path: Path, openssh_key: Path) -> None:
    message = tmp_path / "seal"
    message.write_bytes(SEAL)
    for hash_name in ("sha512", "sha256"):
        done = ssh_keygen(
            "-Y", "sign", "-f", str(openssh_key), "-n", "handoff-files", "-O", f"hashalg={hash_name}", str(message)
        )
        assert done.returncode == 0, done.stderr
        armored = (tmp_path / "seal.sig").read_text()
        (tmp_path / "seal.sig").unlink()
        signed = sshsig.verify(armored, SEAL, "seal.sig")
        assert signed.hash_algorithm == hash_name
        assert signed.key_line == " ".join(Path(f"{openssh_key}.pub").read_text().split()[:2])
        with pytest.raises(SignatureError, match="does not verify"):
            sshsig.verify(armored, SEAL.replace(b"6", b"7", 1), "seal.sig")
    # the same key file read here signs what ssh-keygen verifies: one key for git and for handoffs
    assert load_signing_key(openssh_key).public_line == signed.key_line


@needs_ssh_keygen
def test_a_signature_made_for_git_is_refused(tmp_path: Path, openssh_key: Path) -> None:
    message = tmp_path / "seal"
    message.write_bytes(SEAL)
    assert ssh_keygen("-Y", "sign", "-f", str(openssh_key), "-n", "git", str(message)).returncode == 0
    with pytest.raises(SignatureError, match="made for 'git'"):
        sshsig.verify((tmp_path / "seal.sig").read_text(), SEAL, "seal.sig")


def _blob(armored: str) -> bytes:
    return base64.b64decode("".join(armored.strip().splitlines()[1:-1]))


def _armor(blob: bytes) -> str:
    return f"-----BEGIN SSH SIGNATURE-----\n{base64.b64encode(blob).decode()}\n-----END SSH SIGNATURE-----\n"


def test_any_changed_byte_of_a_signature_is_refused(key: SigningKey) -> None:
    blob = _blob(key.sign(SEAL))
    for at in range(len(blob)):
        changed = bytearray(blob)
        changed[at] ^= 0x01
        with pytest.raises(SignatureError):
            sshsig.verify(_armor(bytes(changed)), SEAL, "gen.json")


def test_a_key_swapped_into_the_signature_does_not_verify(key: SigningKey, tmp_path: Path) -> None:
    other = create_key(tmp_path / "other")
    blob = _blob(key.sign(SEAL))
    swapped = blob.replace(key.key, other.key)
    assert swapped != blob
    with pytest.raises(SignatureError, match=re.escape(f"by {other.fingerprint} does not verify")):
        sshsig.verify(_armor(swapped), SEAL, "gen.json")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "not an armored SSH signature"),
        ("-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----", "not an armored"),
        ("-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----", "not a valid SSH signature"),
        (_armor(b"SSHSIG"), "cut short"),
        (_armor(b"NOTSIG\x00\x00\x00\x01"), "no SSHSIG preamble"),
        (_armor(b"SSHSIG\x00\x00\x00\x02"), "version 2"),
        (_armor(b"SSHSIG\x00\x00\x00\x01\xff\xff\xff\xff"), "cut short"),
        ("-----BEGIN SSH SIGNATURE-----\n" + "A" * 5000 + "\n-----END SSH SIGNATURE-----", "over the 4,096"),
    ],
)
def test_what_is_not_a_signature_is_refused_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason) as caught:
        sshsig.verify(text, SEAL, "gen.json")
    assert str(caught.value).startswith("gen.json: ")


def test_bytes_after_the_signature_are_refused(key: SigningKey) -> None:
    with pytest.raises(SignatureError, match="left over"):
        sshsig.verify(_armor(_blob(key.sign(SEAL)) + b"\x00"), SEAL, "gen.json")


def test_rewrapped_armor_still_verifies(key: SigningKey) -> None:
    body = base64.b64encode(_blob(key.sign(SEAL))).decode()
    rewrapped = "-----BEGIN SSH SIGNATURE-----\r\n" + "\r\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    rewrapped += "\r\n-----END SSH SIGNATURE-----\r\n\n"
    assert sshsig.verify(rewrapped, SEAL, "gen.json").key == key.key


@pytest.mark.parametrize(
    "change",
    [
        lambda armored: "\n" + armored,  # ssh-keygen refuses text before BEGIN too
        lambda armored: "  " + armored,
        lambda armored: armored + "trailing words\n",  # ssh-keygen ignores text after END; we refuse it
        lambda armored: armored.replace("-----END SSH SIGNATURE-----", "-----END SSH SIGNATURE----- x"),
    ],
)
def test_text_around_the_armor_is_refused(key: SigningKey, change: Callable[[str], str]) -> None:
    with pytest.raises(SignatureError, match="not an armored SSH signature"):
        sshsig.verify(change(key.sign(SEAL)), SEAL, "gen.json")
