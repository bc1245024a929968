"""Signing keys: made 0600 and never overwritten; read only when private, unencrypted and Ed25519."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from handoff_files import HandoffParseError, SigningKeyError
from handoff_files.signing import sshsig
from handoff_files.signing.keys import KEY_ENV, SigningKey, configured_key, create_key, load_signing_key
from tests.signing.conftest import needs_ssh_keygen, ssh_keygen


def test_a_new_key_is_private_and_its_public_line_beside_it(key: SigningKey) -> None:
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.path.parent.stat().st_mode) == 0o700
    public = key.path.with_name("agent.pub").read_text()
    assert public == f"{key.public_line} agent@test\n"
    assert key.path.read_text().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    again = load_signing_key(key.path)
    assert again.key == key.key
    assert sshsig.verify(again.sign(b"x"), b"x", "t").key == key.key


def test_a_key_is_never_overwritten(key: SigningKey) -> None:
    before = key.path.read_bytes()
    with pytest.raises(SigningKeyError, match="never overwritten"):
        create_key(key.path)
    key.path.with_name("agent.pub").unlink()
    with pytest.raises(SigningKeyError, match="never overwritten"):
        create_key(key.path)  # the private half alone is enough to refuse
    assert key.path.read_bytes() == before


@needs_ssh_keygen
def test_ssh_keygen_reads_the_key_we_make(key: SigningKey) -> None:
    done = ssh_keygen("-y", "-f", str(key.path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split()[:2] == key.public_line.split()
    fingerprint = ssh_keygen("-l", "-f", str(key.path.with_name("agent.pub"))).stdout.decode()
    assert key.fingerprint in fingerprint


def test_a_key_others_can_read_is_refused(key: SigningKey) -> None:
    key.path.chmod(0o640)
    with pytest.raises(SigningKeyError, match="readable by no one else") as caught:
        load_signing_key(key.path)
    assert str(caught.value).startswith(f"{key.path}: ")


def test_a_missing_key_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="handoff keys create"):
        load_signing_key(tmp_path / "nope")


@needs_ssh_keygen
def test_a_passphrase_protected_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "locked"
    assert ssh_keygen("-q", "-t", "ed25519", "-N", "secret words", "-f", str(path)).returncode == 0
    with pytest.raises(SigningKeyError, match="passphrase-protected"):
        load_signing_key(path)


@needs_ssh_keygen
def test_a_key_of_another_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ecdsa"
    assert ssh_keygen("-q", "-t", "ecdsa", "-N", "", "-f", str(path)).returncode == 0
    with pytest.raises(SigningKeyError, match="an ECDSA key; handoffs are signed with Ed25519 keys only"):
        load_signing_key(path)


def test_what_is_not_a_key_is_refused(tmp_path: Path) -> None:
    for name, data in (
        ("text", b"hello\n"),
        ("big", b"x" * 20_000),
        ("pem", b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n"),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        path.chmod(0o600)
        with pytest.raises(SigningKeyError):
            load_signing_key(path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(SigningKeyError, match="not a regular file"):
        load_signing_key(fifo)  # never blocks on a FIFO put in a key's place


def test_the_configured_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert configured_key() is None
    config = tmp_path / "config" / "handoff-files" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('signing_key = "~/.ssh/id_ed25519"\n')
    assert configured_key() == Path.home() / ".ssh" / "id_ed25519"
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "env-key"))
    assert configured_key() == tmp_path / "env-key"  # the environment first
    monkeypatch.delenv(KEY_ENV)
    for bad in ("signing_key = 3\n", "signing_key = \n", 'signing_key = ""\n'):
        config.write_text(bad)
        with pytest.raises(HandoffParseError, match=r"config\.toml"):
            configured_key()


def test_a_dsa_key_is_named_and_refused_without_a_warning(tmp_path: Path) -> None:
    import warnings

    from cryptography.hazmat.primitives import serialization

    with warnings.catch_warnings():  # making one warns (cryptography 51 deprecates DSA); refusing one must not
        warnings.simplefilter("ignore")
        from cryptography.hazmat.primitives.asymmetric import dsa

        private = dsa.generate_private_key(key_size=1024)  # noqa: S505 -- refused whatever its size
        data = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    path = tmp_path / "dsa"
    path.write_bytes(data)
    path.chmod(0o600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SigningKeyError, match="a DSA key; handoffs are signed with Ed25519 keys only"):
            load_signing_key(path)
