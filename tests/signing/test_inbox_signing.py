"""Signed inbox requests: the requester's signature over what it asked, the last changer's over the file.

The attacks are real edits of request files by someone who can write the inbox but holds no
trusted key: a reason changed, a descriptor swapped, the signatures stripped, a change made
unsigned. Each is refused with a distinct error, or reported, never read as the requester's word.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffInbox, SignatureError, UntrustedSignerError
from handoff_files.cli.main import main
from handoff_files.format import seal as sealing
from handoff_files.foundation.errors import HandoffValidationError, InvalidTransitionError
from handoff_files.inbox.signatures import offer_text
from handoff_files.inbox.status import HandoffStatus
from handoff_files.signing.keys import SigningKey, allowed_signers_line, create_key
from tests.conftest import ALICE
from tests.signing.conftest import needs_ssh_keygen, ssh_keygen

pytestmark = pytest.mark.usefixtures("signing_home")

_BLOB = "ab" * 32
_DESCRIPTOR: dict[str, Any] = {
    "descriptor_version": "1.0",
    "source": "importer:3",
    "agent_id": "alice-agent",
    "thread_id": "importer",
    "generation": 3,
    "checkpoint_id": "blake3:" + "cd" * 32,
    "blob_id": _BLOB,
    "blob_sha256": _BLOB,
    "created_at": "2026-12-05T10:00:00Z",
}


def _file(inbox: HandoffInbox, handoff_id: str) -> Path:
    return inbox.requests_dir / f"{handoff_id}.json"


def _edit(path: Path, change: dict[str, Any], *, keep_signatures: bool = True) -> None:
    """Change fields of a request file and recompute its seal, as anyone who can write the inbox can."""
    document = json.loads(path.read_bytes())
    signatures = document.pop("signatures", None)
    document.pop("seal")
    document.update(change)
    document["seal"] = {"algorithm": "blake3", "digest": sealing.digest(sealing.canonical(document), "blake3")}
    if keep_signatures and signatures is not None:
        document["signatures"] = signatures
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")


def test_a_signed_request_names_its_signer_to_every_reader(tmp_path: Path, alice: SigningKey) -> None:
    asked = HandoffInbox(tmp_path / "inbox", signing_key=alice).request_handoff("a", "b", "take the importer")
    assert asked.request_signature is not None
    assert asked.request_signature.principal == ALICE
    assert asked.change_signature is not None
    assert asked.change_signature.principal == ALICE
    document = json.loads(_file(HandoffInbox(tmp_path / "inbox"), asked.handoff_id).read_bytes())
    assert set(document["signatures"]) == {"request", "change"}
    assert "request_signature" not in document
    seen = HandoffInbox(tmp_path / "inbox", signing_key=False).require_handoff(asked.handoff_id)
    assert seen.request_signature == asked.request_signature


def test_an_unsigned_inbox_writes_and_reads_as_before(tmp_path: Path) -> None:
    inbox = HandoffInbox(tmp_path / "inbox", signing_key=False)
    asked = inbox.request_handoff("a", "b", "unsigned")
    assert asked.request_signature is None
    assert asked.change_signature is None
    assert "signatures" not in json.loads(_file(inbox, asked.handoff_id).read_bytes())
    assert inbox.accept_handoff(asked.handoff_id).status is HandoffStatus.ACCEPTED


@pytest.mark.parametrize(
    "change",
    [{"reason": "delete the production database"}, {"descriptor": {**_DESCRIPTOR, "blob_sha256": "ef" * 32}}],
    ids=["request edited", "descriptor swapped"],
)
def test_a_request_edited_after_it_was_signed_is_damage(
    tmp_path: Path, alice: SigningKey, change: dict[str, Any]
) -> None:
    inbox = HandoffInbox(tmp_path / "inbox", signing_key=alice)
    asked = inbox.request_handoff("a", "b", "take the importer", descriptor=_DESCRIPTOR)
    _edit(_file(inbox, asked.handoff_id), change)
    reader = HandoffInbox(tmp_path / "inbox", signing_key=False)
    with pytest.raises(SignatureError) as caught:
        reader.get_handoff(asked.handoff_id)
    assert not isinstance(caught.value, UntrustedSignerError)
    assert "request signature does not verify over what was requested" in caught.value.reason
    assert reader.list_handoffs() == []
    assert [p.path for p in reader.problems] == [str(_file(inbox, asked.handoff_id))]
    with pytest.raises(SignatureError):
        reader.accept_handoff(asked.handoff_id)


def test_signatures_stripped_read_as_unsigned_and_are_refused_where_signatures_are_required(
    tmp_path: Path, alice: SigningKey
) -> None:
    asked = HandoffInbox(tmp_path / "inbox", signing_key=alice).request_handoff("a", "b", "take the importer")
    path = _file(HandoffInbox(tmp_path / "inbox"), asked.handoff_id)
    _edit(path, {"reason": "delete the production database"}, keep_signatures=False)
    seen = HandoffInbox(tmp_path / "inbox", signing_key=False).require_handoff(asked.handoff_id)
    assert seen.request_signature is None  # said: nobody vouches for it
    strict = HandoffInbox(tmp_path / "inbox", signing_key=alice, require_signed=True)
    with pytest.raises(UntrustedSignerError, match="is not signed by a trusted key \\(unsigned\\)"):
        strict.get_handoff(asked.handoff_id)
    before = path.read_bytes()
    with pytest.raises(UntrustedSignerError):
        strict.accept_handoff(asked.handoff_id)
    assert path.read_bytes() == before
    assert strict.list_handoffs() == []
    assert len(strict.problems) == 1


def test_a_stranger_signing_is_reported_and_refused_where_signatures_are_required(
    tmp_path: Path, alice: SigningKey
) -> None:
    mallory = create_key(tmp_path / "mallory")
    asked = HandoffInbox(tmp_path / "inbox", signing_key=mallory).request_handoff("a", "b", "take it")
    assert asked.request_signature is not None
    assert not asked.request_signature.trusted
    assert mallory.fingerprint in asked.request_signature.describe()
    with pytest.raises(UntrustedSignerError, match=re.escape(mallory.fingerprint)):
        HandoffInbox(tmp_path / "inbox", require_signed=True).get_handoff(asked.handoff_id)


def test_the_requesters_signature_survives_every_change_and_each_change_is_signed_by_its_writer(
    tmp_path: Path, alice: SigningKey, signing_home: Path
) -> None:
    bob = create_key(tmp_path / "bob")
    with (signing_home / "allowed_signers").open("a", encoding="utf-8") as out:
        out.write(allowed_signers_line(bob, "bob@example.com") + "\n")
    asked = HandoffInbox(tmp_path / "inbox", signing_key=alice).request_handoff("a", "b", "take it")
    accepted = HandoffInbox(tmp_path / "inbox", signing_key=bob).accept_handoff(asked.handoff_id)
    assert accepted.request_signature == asked.request_signature
    assert accepted.change_signature is not None
    assert accepted.change_signature.principal == "bob@example.com"
    strict = HandoffInbox(tmp_path / "inbox", signing_key=bob, require_signed=True)
    assert strict.complete_handoff(asked.handoff_id).status is HandoffStatus.COMPLETED


def test_an_unsigned_change_is_said_and_refused_where_signatures_are_required(
    tmp_path: Path, alice: SigningKey
) -> None:
    asked = HandoffInbox(tmp_path / "inbox", signing_key=alice).request_handoff("a", "b", "take it")
    accepted = HandoffInbox(tmp_path / "inbox", signing_key=False).accept_handoff(asked.handoff_id)
    assert accepted.request_signature == asked.request_signature  # kept by the unsigned writer
    assert accepted.change_signature is None
    with pytest.raises(UntrustedSignerError, match="last changed \\(to ACCEPTED\\) without a trusted signature"):
        HandoffInbox(tmp_path / "inbox", require_signed=True).get_handoff(asked.handoff_id)
    # an accepted request reverted to PENDING by hand (to be offered again) is refused too
    _edit(_file(HandoffInbox(tmp_path / "inbox"), asked.handoff_id), {"status": "PENDING", "accepted_at": None})
    with pytest.raises(UntrustedSignerError, match="last changed \\(to PENDING\\)"):
        HandoffInbox(tmp_path / "inbox", require_signed=True).get_handoff(asked.handoff_id)


def test_requiring_signatures_without_a_trusted_key_refuses_the_change_before_writing(
    tmp_path: Path, alice: SigningKey
) -> None:
    asked = HandoffInbox(tmp_path / "inbox", signing_key=alice).request_handoff("a", "b", "take it")
    path = _file(HandoffInbox(tmp_path / "inbox"), asked.handoff_id)
    before = path.read_bytes()
    with pytest.raises(UntrustedSignerError, match=r"refused, nothing written: .* \(no signing key"):
        HandoffInbox(tmp_path / "inbox", signing_key=False, require_signed=True).accept_handoff(asked.handoff_id)
    stranger = create_key(tmp_path / "stranger")
    with pytest.raises(UntrustedSignerError, match=re.escape(f"({stranger.fingerprint} is not trusted")):
        HandoffInbox(tmp_path / "inbox", signing_key=stranger, require_signed=True).accept_handoff(asked.handoff_id)
    assert path.read_bytes() == before
    with pytest.raises(UntrustedSignerError):
        HandoffInbox(tmp_path / "inbox", signing_key=False, require_signed=True).request_handoff("a", "b", "x")
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_an_expiry_recorded_unsigned_is_accepted_when_the_readers_clock_agrees(
    tmp_path: Path, alice: SigningKey
) -> None:
    start = dt.datetime(2026, 12, 5, 12, 0, tzinfo=dt.UTC)
    now = [start]
    asked = HandoffInbox(tmp_path / "inbox", signing_key=alice, clock=lambda: now[0]).request_handoff(
        "a", "b", "soon", timeout=60
    )
    now[0] = start + dt.timedelta(minutes=2)
    expired = HandoffInbox(tmp_path / "inbox", signing_key=False, clock=lambda: now[0]).expire_overdue()
    assert [r.status for r in expired] == [HandoffStatus.EXPIRED]
    strict = HandoffInbox(tmp_path / "inbox", require_signed=True, clock=lambda: now[0])
    assert strict.require_handoff(asked.handoff_id).status is HandoffStatus.EXPIRED
    early = HandoffInbox(tmp_path / "inbox", require_signed=True, clock=lambda: start)  # the clock says not yet
    with pytest.raises(UntrustedSignerError, match="to EXPIRED"):
        early.get_handoff(asked.handoff_id)


@pytest.mark.parametrize("name", ["request_signature", "change_signature"])
def test_a_file_carrying_a_signer_the_inbox_finds_itself_is_refused(tmp_path: Path, name: str) -> None:
    inbox = HandoffInbox(tmp_path / "inbox", signing_key=False)
    asked = inbox.request_handoff("a", "b", "x")
    forged = {"signature": "x", "fingerprint": "SHA256:x", "principal": ALICE, "problem": None}
    _edit(_file(inbox, asked.handoff_id), {name: forged})
    with pytest.raises(HandoffValidationError, match=f"carries {name}, which the inbox never writes"):
        inbox.get_handoff(asked.handoff_id)


@needs_ssh_keygen
def test_ssh_keygen_verifies_the_requesters_signature(tmp_path: Path, alice: SigningKey, signing_home: Path) -> None:
    inbox = HandoffInbox(tmp_path / "inbox", signing_key=alice)
    asked = inbox.request_handoff("a", "b", "check me with OpenSSH", descriptor=_DESCRIPTOR, metadata={"n": [1, 2]})
    document = json.loads(_file(inbox, asked.handoff_id).read_bytes())
    signature = tmp_path / "request.sig"
    signature.write_text(document["signatures"]["request"], encoding="utf-8")
    message = offer_text(document, document["seal"]["algorithm"]).encode()
    signers = signing_home / "allowed_signers"
    args = ("-Y", "verify", "-n", "handoff-files", "-f", str(signers), "-I", ALICE, "-s", str(signature))
    assert ssh_keygen(*args, stdin=message).returncode == 0
    assert ssh_keygen(*args, stdin=message.replace(b"blake3:", b"blake3:0")).returncode != 0


def test_the_inbox_commands_sign_and_say_who_signed(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox = str(tmp_path / "inbox")
    key = str(tmp_path / "alice")
    assert main(["inbox", inbox, "request", "--from", "a", "--to", "b", "--reason", "r", "--sign-with", key]) == 0
    out = capsys.readouterr().out
    assert f"requested: signed by {ALICE}" in out
    handoff_id = out.split()[1].rstrip(":")
    assert main(["inbox", inbox, "accept", handoff_id, "--no-sign"]) == 0
    assert "last change: unsigned" in capsys.readouterr().out
    assert main(["inbox", inbox, "status", handoff_id, "--require-signed"]) == 1
    err = capsys.readouterr().err
    assert "without a trusted signature" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["inbox", "--require-signed", inbox, "list", "--all"]) == 0
    assert "note: skipped an untrusted request" in capsys.readouterr().out


@pytest.mark.parametrize("where", ["folder", "bucket"])
def test_the_agent_that_lost_an_accept_is_told_who_won(
    request: pytest.FixtureRequest, tmp_path: Path, alice: SigningKey, signing_home: Path, where: str
) -> None:
    """Two agents accept one request: the second is refused, naming the status, since when, and the winner's
    principal (the signer of the change), on a folder and on a bucket of the real object store."""
    at = str(tmp_path / "inbox") if where == "folder" else str(request.getfixturevalue("bucket_url"))
    bob = create_key(tmp_path / "bob")
    with (signing_home / "allowed_signers").open("a", encoding="utf-8") as out:
        out.write(allowed_signers_line(bob, "bob@example.com") + "\n")
    asked = HandoffInbox(at, signing_key=False).request_handoff("a", "b", "take it")
    HandoffInbox(at, signing_key=bob).accept_handoff(asked.handoff_id)
    with pytest.raises(InvalidTransitionError) as lost:
        HandoffInbox(at, signing_key=alice).accept_handoff(asked.handoff_id)
    assert "it is ACCEPTED (since " in lost.value.reason
    assert ") by bob@example.com, not in PENDING status" in lost.value.reason
