"""allowed_signers: read as OpenSSH reads it, and agreeing with ssh-keygen on who signed, where and when."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Final

import pytest

from handoff_files import HandoffError, HandoffNotFoundError, HandoffParseError, UntrustedSignerError
from handoff_files.signing import sshsig
from handoff_files.signing.allowed import AllowedSigners
from handoff_files.signing.keys import SigningKey, create_key
from handoff_files.signing.revoked import load_revoked
from tests.signing.conftest import needs_ssh_keygen, ssh_keygen

SEAL = b"blake3:00ff"
KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIILYUmz7GSg4A2rE7n+rQG7Nnxlsz1XjniNov1YL8XWc"
NOW = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)


def _file(tmp_path: Path, text: str, name: str = "allowed_signers") -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o644)
    return path


def _signed(key: SigningKey) -> sshsig.Signed:
    return sshsig.verify(key.sign(SEAL), SEAL, "gen.json")


def test_a_listed_key_is_its_principal(tmp_path: Path, key: SigningKey) -> None:
    other = create_key(tmp_path / "other")
    allowed = AllowedSigners.load(
        _file(
            tmp_path,
            "# the team\n\n"
            f"bob@example.com {other.public_line}\n"
            f'agent@ci,agent@backup namespaces="git,handoff-files" {key.public_line} the build agent\n',
        )
    )
    assert allowed.signer_of(_signed(key), at=NOW) == "agent@ci,agent@backup"
    assert allowed.signer_of(_signed(other), at=NOW) == "bob@example.com"
    assert allowed.entries[1].matches("agent@ci")
    assert not allowed.entries[1].matches("eve@ci")


def test_an_unlisted_key_is_not_trusted(tmp_path: Path, key: SigningKey) -> None:
    other = create_key(tmp_path / "other")
    allowed = AllowedSigners.load(_file(tmp_path, f"bob@example.com {other.public_line}\n"))
    with pytest.raises(UntrustedSignerError, match="a key not in") as caught:
        allowed.signer_of(_signed(key), at=NOW, where="thread/history/00000002.json")
    assert str(caught.value).startswith("thread/history/00000002.json: signed by SHA256:")


def test_a_key_allowed_only_for_git_is_not_trusted_here(tmp_path: Path, key: SigningKey) -> None:
    allowed = AllowedSigners.load(_file(tmp_path, f'me@laptop namespaces="git" {key.public_line}\n'))
    with pytest.raises(UntrustedSignerError, match="do not allow namespace 'handoff-files'"):
        allowed.signer_of(_signed(key), at=NOW)
    wildcard = AllowedSigners.load(_file(tmp_path, f'me@laptop namespaces="hand*" {key.public_line}\n'))
    assert wildcard.signer_of(_signed(key), at=NOW) == "me@laptop"


def test_rotation_old_key_valid_before_new_key_after(tmp_path: Path, key: SigningKey) -> None:
    new = create_key(tmp_path / "new")
    allowed = AllowedSigners.load(
        _file(
            tmp_path,
            f'agent@ci valid-before="20261201Z" {key.public_line}\n'
            f'agent@ci valid-after="20261201Z" {new.public_line}\n',
        )
    )
    before, after = dt.datetime(2026, 11, 30, tzinfo=dt.UTC), dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    assert allowed.signer_of(_signed(key), at=before) == "agent@ci"  # signed before the rotation: stays valid
    with pytest.raises(UntrustedSignerError, match="outside the time its key is trusted"):
        allowed.signer_of(_signed(key), at=after)  # the old key after it: not
    assert allowed.signer_of(_signed(new), at=after) == "agent@ci"
    with pytest.raises(UntrustedSignerError, match="outside the time"):
        allowed.signer_of(_signed(new), at=before)


def test_a_revoked_key_is_not_trusted_even_when_listed(tmp_path: Path, key: SigningKey) -> None:
    allowed = AllowedSigners.load(_file(tmp_path, f"agent@ci {key.public_line}\n"))
    revoked = load_revoked(_file(tmp_path, f"# gone\n{key.public_line} lost laptop\nssh-rsa AAAAB3Nza\n", "revoked"))
    with pytest.raises(UntrustedSignerError, match="a revoked key"):
        allowed.signer_of(_signed(key), at=NOW, revoked=revoked)


def test_cert_authority_lines_and_other_key_types_never_match(tmp_path: Path, key: SigningKey) -> None:
    allowed = AllowedSigners.load(
        _file(tmp_path, f"*@example.com cert-authority {key.public_line}\nbob ssh-rsa AAAAB3NzaC1yc2E bob\n")
    )
    assert allowed.entries[1].key is None
    with pytest.raises(UntrustedSignerError, match="a key not in"):
        allowed.signer_of(_signed(key), at=NOW)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("alice", "expected: principals"),
        ("alice bogus-option ssh-ed25519 AAAA", "unknown option 'bogus-option'"),
        (f'alice valid-after="2026" ssh-ed25519 {KEY}', "a time"),
        (f'alice valid-after="20261399" ssh-ed25519 {KEY}', "not a date"),
        (f'alice valid-after="19700101Z" ssh-ed25519 {KEY}', "at or before 1970"),
        (f'alice valid-after="20261204Z",valid-before="20261204Z" ssh-ed25519 {KEY}', "not after valid-after"),
        (f"alice namespaces=git ssh-ed25519 {KEY}", "must be in double quotes"),
        (f'alice namespaces="git",namespaces="x" ssh-ed25519 {KEY}', "more than one namespaces"),
        ("alice ssh-ed25519 AAAA", "not an ssh-ed25519 public key"),
        ("alice ssh-ed25519 !!!!", "not an ssh-ed25519 public key"),
        ('alice namespaces="git ssh-ed25519 AAAA', "a quote is not closed"),
        ("alice cert-authority=yes ssh-ed25519 AAAA", "unknown option"),
        (f"{'a' * 9000} ssh-ed25519 {KEY}", "longer than"),
    ],
)
def test_a_line_that_cannot_be_read_is_passed_over_and_told(
    tmp_path: Path, key: SigningKey, line: str, reason: str
) -> None:
    """As ssh-keygen does: the bad line trusts no one, the others still count."""
    allowed = AllowedSigners.load(_file(tmp_path, f"# first\n{line}\nme@laptop {key.public_line}\n"))
    assert allowed.signer_of(_signed(key), at=NOW) == "me@laptop"
    assert len(allowed.problems) == 1
    assert allowed.problems[0].startswith("line 2: ")
    assert reason in allowed.problems[0]


def test_bounded_and_guarded(tmp_path: Path, key: SigningKey) -> None:
    with pytest.raises(HandoffParseError, match="over the"):
        AllowedSigners.load(_file(tmp_path, "#" * (1024 * 1024 + 1)))
    with pytest.raises(HandoffParseError, match="lines"):
        AllowedSigners.load(_file(tmp_path, "#\n" * 10_001))
    for mode in (0o666, 0o664, 0o646):
        open_to_others = _file(tmp_path, f"me {key.public_line}\n")
        open_to_others.chmod(mode)
        with pytest.raises(HandoffError, match="writable by its owner only"):
            AllowedSigners.load(open_to_others)
    with pytest.raises(HandoffNotFoundError):
        AllowedSigners.load(tmp_path / "missing")
    assert AllowedSigners.load(tmp_path / "missing", missing_ok=True).entries == ()
    krl = tmp_path / "krl"
    krl.write_bytes(b"SSHKRL\n\x00\x00")
    with pytest.raises(HandoffParseError, match="binary key revocation list"):
        load_revoked(krl)
    with pytest.raises(HandoffParseError, match="longer than"):
        load_revoked(_file(tmp_path, f"{key.public_line} {'x' * 9000}\n", "revoked"))
    with pytest.raises(HandoffParseError, match="line 2: not a public key line"):  # fail closed: never skipped
        load_revoked(_file(tmp_path, f"{key.public_line}\nmallory\n", "revoked"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(HandoffError, match="not a regular file"):
        AllowedSigners.load(fifo)


def test_lines_end_at_newline_alone(tmp_path: Path, key: SigningKey) -> None:
    """A key after a \\r, \\x1c or U+2028 in a comment is part of the comment, not a line of its own."""
    other = create_key(tmp_path / "other")
    for separator in ("\r", "\x0b", "\x1c", "\u2028", "\x85"):
        allowed = AllowedSigners.load(
            _file(tmp_path, f"alice {other.public_line} alice laptop{separator}mallory {key.public_line}\n")
        )
        with pytest.raises(UntrustedSignerError, match="a key not in"):
            allowed.signer_of(_signed(key), at=NOW)
    one_line = AllowedSigners.parse("a ssh-rsa x\r" * 50_000, "f")  # one line, not 50,000 entries
    assert one_line.entries == ()
    assert one_line.problems == ("line 1: longer than 8,192 characters",)


@needs_ssh_keygen
@pytest.mark.parametrize(
    ("options", "when", "good"),
    [
        ("", "20261204", True),
        ('valid-before="20261201Z"', "20261130", True),
        ('valid-before="20261201Z"', "20261202", False),
        ('valid-after="20261201Z"', "20261130", False),
        ('valid-after="20261201Z",valid-before="20261203Z"', "20261202", True),
        ('namespaces="git"', "20261204", False),
        ('namespaces="git,handoff-*"', "20261204", True),
    ],
)
def test_ssh_keygen_and_we_agree(tmp_path: Path, key: SigningKey, options: str, when: str, good: bool) -> None:
    allowed_path = _file(tmp_path, f"agent@ci {options} {key.public_line}\n".replace("  ", " "))
    signature = tmp_path / "seal.sig"
    signature.write_text(key.sign(SEAL))
    done = ssh_keygen(
        "-Y", "verify", "-f", str(allowed_path), "-I", "agent@ci", "-n", "handoff-files", "-s", str(signature),
        "-O", f"verify-time={when}", stdin=SEAL,
    )  # fmt: skip
    at = dt.datetime.strptime(when, "%Y%m%d").astimezone()  # ssh-keygen reads a time without Z as local
    try:
        AllowedSigners.load(allowed_path).signer_of(_signed(key), at=at)
        ours = True
    except UntrustedSignerError:
        ours = False
    assert (done.returncode == 0) == good, done.stderr
    assert ours == good


#: (allowed_signers text with {K} for the signing key's line and {O} for another's, the principal
#: asked for, whether ssh-keygen -Y verify accepts it at 2026-12-04): each result is OpenSSH 9.2's,
#: and the test checks it against ssh-keygen itself as well as against us.
AGREEMENT: Final = [
    ("alice {K}", "alice", True),
    ("alice {K}\r\n", "alice", True),
    ('"alice" {K}', "alice", True),
    ("alice,bob {K}", "bob", True),
    ("*@example.com {K}", "alice@example.com", True),
    ("!alice@example.com,*@example.com {K}", "alice@example.com", False),
    ("al?ce {K}", "alice", True),
    ("[a]lice {K}", "alice", False),
    ("alice\u00a0x {K}", "alice\u00a0x", True),
    ("alice {O} alice laptop\x1cmallory {K}", "mallory", False),
    ("alice {O} alice laptop\rmallory {K}", "mallory", False),
    ("alice {O} alice laptop\u2028mallory {K}", "mallory", False),
    ("bob ssh-ed25519 AAAA\nalice {K}", "alice", True),
    ('alice {K} Alice "Al', "alice", True),
    ("alice cert-authority {K}", "alice", False),
    ("alice namespaces=handoff-files {K}", "alice", False),
    ('alice namespaces="git",namespaces="handoff-files" {K}', "alice", False),
    ('alice namespaces="[h]andoff-files" {K}', "alice", False),
    ('alice namespaces="handoff-*" {K}', "alice", True),
    ('alice namespaces="git\\",handoff-files" {K}', "alice", True),
    ('alice NAMESPACES="handoff-files" {K}', "alice", True),
    ('alice valid-after="20261204Z",valid-before="20261204Z" {K}', "alice", False),
    ('alice valid-after="19700101Z" {K}', "alice", False),
    ('alice valid-before="20270101UTC" {K}', "alice", True),
    ('alice valid-before="20261203UTC" {K}', "alice", False),
    ('alice valid-after="20261203",valid-before="20261205" {K}', "alice", True),
    ('alice valid-after="202612030000" {K}', "alice", True),
    ('alice valid-after="20261205000000Z" {K}', "alice", False),
    ('alice valid-before="99991231235959" {K}', "alice", True),
    ('alice unknown="x" {K}', "alice", False),
    ("alice {O}\nalice {K}", "alice", True),
    ("alice {O}", "alice", False),
]


@needs_ssh_keygen
@pytest.mark.parametrize(("text", "principal", "good"), AGREEMENT)
def test_ssh_keygen_and_we_agree_line_by_line(
    tmp_path: Path, key: SigningKey, text: str, principal: str, good: bool
) -> None:
    other = create_key(tmp_path / "other")
    path = tmp_path / "allowed_signers"
    path.write_bytes(text.replace("{K}", key.public_line).replace("{O}", other.public_line).encode())
    path.chmod(0o644)
    signature = tmp_path / "seal.sig"
    signature.write_text(key.sign(SEAL))
    args = ("-Y", "verify", "-f", str(path), "-I", principal, "-n", "handoff-files", "-s", str(signature))
    theirs = ssh_keygen(*args, "-O", "verify-time=20261204", stdin=SEAL)
    at = dt.datetime(2026, 12, 4).astimezone()  # ssh-keygen reads a time without Z as local time
    try:
        AllowedSigners.load(path).signer_of(_signed(key), at=at, principal=principal)
        ours = True
    except UntrustedSignerError:
        ours = False
    assert (theirs.returncode == 0) == good, theirs.stderr
    assert ours == good


def test_the_last_local_time_west_of_utc_is_read(
    tmp_path: Path, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        allowed = AllowedSigners.load(_file(tmp_path, f'alice valid-before="99991231235959" {key.public_line}\n'))
        assert allowed.problems == ()
        assert allowed.signer_of(_signed(key), at=NOW) == "alice"
    finally:
        monkeypatch.undo()
        time.tzset()
