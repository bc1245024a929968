"""state.json signed: what a save wrote there carries the saver's signature, kept through acknowledgements,
checked before anything is rebuilt from it, and shown by `handoff verify`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore, UntrustedSignerError
from handoff_files.format.seal import self_check
from handoff_files.signing.keys import SigningKey, allowed_signers_line, create_key
from handoff_files.thread.mirror import read_mirror, state_message, verify_mirror
from handoff_files.thread.verify import verify_thread
from tests.conftest import ALICE
from tests.signing.conftest import needs_ssh_keygen, ssh_keygen

pytestmark = pytest.mark.usefixtures("signing_home")


def _message(folder: Path) -> bytes:
    return state_message(**read_mirror(folder / "state.json").saved())


def _lose_every_copy(folder: Path) -> None:
    """The primary, history/ and the journal's documents gone: only state.json (and the journal's summaries) left."""
    (folder / "handoff.json").unlink()
    shutil.rmtree(folder / "history")
    (folder / "history").mkdir(mode=0o700)


@pytest.mark.parametrize("durability", ["journal", "full"])
def test_a_signed_save_signs_state_json_and_an_acknowledgement_keeps_the_signature(
    tmp_path: Path, alice: SigningKey, durability: str
) -> None:
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice, durability=durability)  # type: ignore[arg-type]
    store.save({"narrative": "one", "state": {"data": {"deploy": "staging"}}})
    mirror = read_mirror(folder / "state.json")
    assert mirror.signature is not None
    assert verify_mirror(mirror, folder / "state.json") == mirror.signature
    assert _message(folder).startswith(b"handoff-files state 1\nthread t\n")
    store.acknowledge(store.restore())
    again = read_mirror(folder / "state.json")
    assert again.last_restore is not None
    assert mirror.last_restore is None
    assert again.signature == mirror.signature  # … with the signature kept, and still verifying
    verify_mirror(again, folder / "state.json")
    unsigned = tmp_path / "u"
    HandoffStore(unsigned, signing_key=False).save({"narrative": "one"})
    assert read_mirror(unsigned / "state.json").signature is None


@needs_ssh_keygen
def test_ssh_keygen_verifies_state_jsons_signature(tmp_path: Path, alice: SigningKey) -> None:
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "one", "state": {"data": {"n": 1}}})
    signature = read_mirror(folder / "state.json").signature
    assert signature is not None
    (tmp_path / "state.sig").write_text(signature, encoding="utf-8")
    trust = tmp_path / "config" / "handoff-files" / "allowed_signers"
    args = ("-Y", "verify", "-f", str(trust), "-I", ALICE, "-n", "handoff-files", "-s", str(tmp_path / "state.sig"))
    done = ssh_keygen(*args, stdin=_message(folder))
    assert done.returncode == 0, done.stderr
    assert ssh_keygen(*args, stdin=_message(folder) + b"x").returncode != 0


def test_a_pinned_thread_rebuilds_from_a_trusted_signed_state_json_and_never_from_another_keys(
    tmp_path: Path, alice: SigningKey
) -> None:
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice, durability="full")
    store.save({"narrative": "one", "state": {"data": {"deploy": "staging"}}})
    store.save({"narrative": "two", "state": {"data": {"deploy": "canary"}}})
    saved = (folder / "state.json").read_bytes()
    _lose_every_copy(folder)
    rebuilt = HandoffStore(folder).restore()  # generation 2 with the seal the anchor holds: no rollback
    assert (rebuilt.source, rebuilt.handoff.generation) == ("rebuilt", 2)
    assert rebuilt.handoff.state.data == {"deploy": "canary"}
    assert rebuilt.signature is not None
    assert rebuilt.signature.principal == ALICE
    # mallory's key signs an injected state.json: a valid signature, by a key allowed_signers does not trust
    mallory = create_key(tmp_path / "mallory")
    mirror = json.loads(saved)
    mirror["state"]["data"]["deploy"] = "production"
    fields = {k: mirror[k] for k in ("generation", "seal", "agent_id", "thread_id", "created_at", "state")}
    mirror["signature"] = mallory.sign(state_message(**fields))
    del mirror["check"]
    mirror["check"] = self_check(mirror)
    (folder / "state.json").write_text(json.dumps(mirror), encoding="utf-8")
    with pytest.raises(UntrustedSignerError):
        HandoffStore(folder).restore()
    problems = verify_thread(folder).problems
    assert any(p.startswith("state.json: its signature is not trusted") for p in problems), problems
    # trusted again once allowed_signers lists mallory: the same file now rebuilds
    trust = tmp_path / "config" / "handoff-files" / "allowed_signers"
    trust.write_text(trust.read_text(encoding="utf-8") + allowed_signers_line(mallory, "mallory@x") + "\n")
    assert HandoffStore(folder).restore().handoff.state.data == {"deploy": "production"}


def test_verify_names_a_state_json_whose_signature_does_not_verify(tmp_path: Path, alice: SigningKey) -> None:
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "one", "state": {"data": {"deploy": "staging"}}})
    mirror = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    mirror["state"]["data"]["deploy"] = "production"
    del mirror["check"]
    mirror["check"] = self_check(mirror)
    (folder / "state.json").write_text(json.dumps(mirror), encoding="utf-8")
    problems = verify_thread(folder).problems
    assert any("state.json: its signature does not verify over its state" in p for p in problems), problems


def test_doctor_on_a_pinned_folder_says_a_trusted_state_json_holds_the_lost_generation(
    tmp_path: Path, alice: SigningKey
) -> None:
    from handoff_files.thread.doctor import examine

    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice, durability="full")
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    (folder / "handoff.json").unlink()
    (folder / "history" / "00000002.json").unlink()
    said = " ".join(f.what for f in examine(folder) if f.level != "ok")
    assert "generation 2 survives only in state.json: its handoff files are lost" in said, said
    assert "which no trusted key signed" not in said


@pytest.mark.parametrize("configured", ["alice", "another key", "none"])
def test_doctor_repair_signs_the_state_json_it_rewrites_only_with_the_key_that_signed_the_generation(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch, configured: str
) -> None:
    from handoff_files.thread.doctor import examine

    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "one", "state": {"data": {"step": 1}}})
    (folder / "state.json").unlink()
    if configured == "alice":
        monkeypatch.setenv("HANDOFF_FILES_SIGNING_KEY", str(tmp_path / "alice"))
    elif configured == "another key":
        create_key(tmp_path / "mallory")
        monkeypatch.setenv("HANDOFF_FILES_SIGNING_KEY", str(tmp_path / "mallory"))
    repaired = [f for f in examine(folder, repair=True) if f.level == "repaired"]
    assert [f.what for f in repaired] == ["state.json is missing"], repaired
    mirror = read_mirror(folder / "state.json")
    if configured == "alice":  # the generation's own signer: signed as the save did, and it verifies
        assert mirror.signature is not None
        assert verify_mirror(mirror, folder / "state.json") == mirror.signature
    else:  # another key never vouches for what alice signed, and no key signs nothing
        assert mirror.signature is None
    assert verify_thread(folder).ok
