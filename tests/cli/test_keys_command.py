"""``handoff keys create|show``: a key made where the configuration looks, never over one, and refused with one line."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from handoff_files.signing import sshsig
from handoff_files.signing.keys import load_signing_key
from tests.cli.shell import handoff, machine


@pytest.fixture
def env(subprocess_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A user whose configuration folder is empty (XDG_CONFIG_HOME in tmp_path), no key named in the environment."""
    found = {k: v for k, v in subprocess_env.items() if k != "HANDOFF_FILES_SIGNING_KEY"}
    return found | {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_create_makes_the_configured_key_and_show_reads_it(tmp_path: Path, env: dict[str, str]) -> None:
    done = handoff("keys", "create", "--principal", "agent@ci", env=env)
    assert done.returncode == 0, done.stderr
    key = tmp_path / "config" / "handoff-files" / "signing_key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert f"made {key} (private, mode 0600) and {key}.pub" in done.stdout
    made = load_signing_key(key)
    line = f'agent@ci namespaces="handoff-files" {made.public_line}'
    assert done.stdout.endswith(f"{line}\n")
    assert key.with_name("signing_key.pub").read_text() == f"{made.public_line} agent@ci\n"
    shown = machine(handoff("keys", "show", "--principal", "agent@ci", "--json", env=env))
    assert shown == {
        "key": str(key),
        "public_key": made.public_line,
        "fingerprint": made.fingerprint,
        "allowed_signers": line,
    }
    assert sshsig.verify(made.sign(b"x"), b"x", "t").fingerprint == shown["fingerprint"]


def test_create_never_overwrites(tmp_path: Path, env: dict[str, str]) -> None:
    assert handoff("keys", "create", tmp_path / "k", env=env).returncode == 0
    before = (tmp_path / "k").read_bytes()
    done = handoff("keys", "create", tmp_path / "k", env=env)
    assert done.returncode == 1
    reason = "already exists: a key is never overwritten (choose another path, or remove it first)"
    assert done.stderr == f"handoff: {tmp_path / 'k'}: {reason}\n"
    assert (tmp_path / "k").read_bytes() == before


def test_show_refuses_with_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    done = handoff("keys", "show", env=env)
    assert done.returncode == 1
    assert "no such key file (`handoff keys create PATH` makes one)" in done.stderr
    assert done.stderr.count("\n") == 1
    assert handoff("keys", "create", tmp_path / "k", env=env).returncode == 0
    (tmp_path / "k").chmod(0o644)
    done = handoff("keys", "show", tmp_path / "k", "--json", env=env)
    assert done.returncode == 1
    assert machine(done)["error"]["kind"] == "SigningKeyError"
    assert "Traceback" not in done.stderr


def test_the_environment_names_the_key(tmp_path: Path, env: dict[str, str]) -> None:
    assert handoff("keys", "create", tmp_path / "mine", env=env).returncode == 0
    shown = machine(handoff("keys", "show", "--json", env=env | {"HANDOFF_FILES_SIGNING_KEY": str(tmp_path / "mine")}))
    assert shown["key"] == str(tmp_path / "mine")


def test_show_names_the_principal_create_wrote(tmp_path: Path, env: dict[str, str]) -> None:
    assert handoff("keys", "create", tmp_path / "k", "--principal", "me@laptop", env=env).returncode == 0
    shown = machine(handoff("keys", "show", tmp_path / "k", "--json", env=env))
    assert shown["allowed_signers"].startswith('me@laptop namespaces="handoff-files" ssh-ed25519 ')


@pytest.mark.parametrize(
    ("principal", "reason"),
    [
        ("a b", "holds blank space"),
        ('a"b', "a quote"),
        ("a\tb", "holds blank space"),
        ("#me", "would read a comment"),
        ("!me", "would read a negation"),
        ("", "an empty name"),
        ("a,,b", "an empty name"),
    ],
)
def test_a_principal_allowed_signers_cannot_hold_is_refused(
    tmp_path: Path, env: dict[str, str], principal: str, reason: str
) -> None:
    done = handoff("keys", "create", tmp_path / "k", "--principal", principal, env=env)
    assert done.returncode == 2
    assert reason in done.stderr
    assert not (tmp_path / "k").exists()


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.write_bytes(b"\0" * 20_000), "not a key file"),
        (lambda p: p.write_text("hello\n"), "not a key: expected an OpenSSH private key"),
        (lambda p: p.write_text("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n"), "a PEM key: expected an OpenSSH"),
        (lambda p: p.write_text("ssh-ed25519 AAAA me\n"), "a public key (a .pub file)"),
    ],
)
def test_what_is_not_a_private_key_says_what_it_is(
    tmp_path: Path, env: dict[str, str], make: Callable[[Path], object], reason: str
) -> None:
    path = tmp_path / "k"
    make(path)
    path.chmod(0o600)
    done = handoff("keys", "show", path, env=env)
    assert done.returncode == 1
    assert done.stderr == f"handoff: {path}: " + done.stderr.split(": ", 2)[2]
    assert reason in done.stderr
    assert done.stderr.count("\n") == 1


def test_create_on_a_folder_and_a_comment_with_a_line_end(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "adir").mkdir()
    done = handoff("keys", "create", tmp_path / "adir", env=env)
    assert done.returncode == 1
    assert "a folder: give the path of the key file to make" in done.stderr
    done = handoff("keys", "create", tmp_path / "k", "--comment", "two\nlines", env=env)
    assert done.returncode == 1
    assert "holds a line end" in done.stderr
    assert not (tmp_path / "k").exists()
    done = handoff("keys", "show", tmp_path / "k", "--comment", "x", env=env)
    assert done.returncode == 2
    assert "--comment is for create" in done.stderr
