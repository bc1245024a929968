"""Adoption checks who signed the checkpoint it takes: a descriptor swapped for one naming another
writer's checkpoint is said, or refused with ``require_signed``; a forged signature is damage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore, SignatureError, UntrustedSignerError
from handoff_files.cli.main import main
from handoff_files.foundation.errors import DescriptorError
from handoff_files.signing.keys import SigningKey, create_key
from handoff_files.transfers.adopt import adopt_checkpoint
from handoff_files.transfers.blobs import LocalBlobStore, sha256_hex
from handoff_files.transfers.descriptor import Descriptor, parse_descriptor
from handoff_files.transfers.export import handoff_checkpoint
from tests.conftest import ALICE

pytestmark = pytest.mark.usefixtures("signing_home")


def _exported(tmp_path: Path, name: str, key: SigningKey | None, blobs: LocalBlobStore) -> Descriptor:
    store = HandoffStore(tmp_path / name, signing_key=False if key is None else key)
    store.save({"narrative": f"{name}'s work"})
    return handoff_checkpoint(store, blobs=blobs)


def test_adoption_says_who_signed_the_checkpoint(tmp_path: Path, alice: SigningKey) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    result = adopt_checkpoint(_exported(tmp_path, "src", alice, blobs), tmp_path / "new", blobs=blobs)
    assert result.signature is not None
    assert result.signature.principal == ALICE
    unsigned = adopt_checkpoint(_exported(tmp_path, "plain", None, blobs), tmp_path / "new2", blobs=blobs)
    assert unsigned.signature is None


@pytest.mark.parametrize("writer", ["stranger", "unsigned"])
def test_a_swapped_descriptor_naming_an_untrusted_checkpoint_is_refused_when_signatures_are_required(
    tmp_path: Path, alice: SigningKey, writer: str
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    mallory = create_key(tmp_path / "mallory") if writer == "stranger" else None
    swapped = _exported(tmp_path, "src", mallory, blobs)  # a valid descriptor, of another writer's checkpoint
    with pytest.raises(UntrustedSignerError, match="signed checkpoints are required"):
        adopt_checkpoint(swapped, tmp_path / "new", blobs=blobs, require_signed=True)
    assert not (tmp_path / "new").exists()
    said = adopt_checkpoint(swapped, tmp_path / "new", blobs=blobs).signature
    assert said is None if mallory is None else said is not None and not said.trusted


def test_a_checkpoint_whose_signature_does_not_verify_is_refused(tmp_path: Path, alice: SigningKey) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})
    old_signature = json.loads((tmp_path / "src" / "handoff.json").read_bytes())["seal"]["signature"]
    store.save({"narrative": "two"})
    document = json.loads((tmp_path / "src" / "handoff.json").read_bytes())
    assert document["seal"]["signature"] != old_signature
    document["seal"]["signature"] = old_signature  # a real signature, of generation 1's seal
    data = json.dumps(document).encode()
    blob_id = blobs.put(data)
    descriptor = handoff_checkpoint(store, blobs=blobs).model_copy(
        update={"blob_id": blob_id, "blob_sha256": sha256_hex(data)}
    )
    with pytest.raises(SignatureError, match="signature does not verify over its seal"):
        adopt_checkpoint(descriptor, tmp_path / "new", blobs=blobs)
    assert not (tmp_path / "new").exists()


def test_handoff_adopt_says_the_signer_and_takes_require_signed(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    descriptor = tmp_path / "d.json"
    descriptor.write_text(_exported(tmp_path, "src", alice, blobs).to_json(), encoding="utf-8")
    assert main(["adopt", str(descriptor), str(tmp_path / "new"), "--blobs", str(tmp_path / "blobs")]) == 0
    out = capsys.readouterr().out
    assert f"signed by {ALICE}" in out.splitlines()[0]
    assert "\n  descriptor: unsigned\n" in out  # _exported signs the checkpoint, not the descriptor
    descriptor.write_text(_exported(tmp_path, "plain", None, blobs).to_json(), encoding="utf-8")
    args = ["adopt", str(descriptor), str(tmp_path / "new2"), "--blobs", str(tmp_path / "blobs"), "--require-signed"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "not signed by a trusted key (unsigned)" in err
    assert len(err.strip().splitlines()) == 1


def test_a_descriptor_exported_with_a_key_is_signed_and_its_signer_reported(tmp_path: Path, alice: SigningKey) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "work"})
    signed = handoff_checkpoint(store, blobs=blobs, to_agent="beta", signing_key=alice)
    assert signed.descriptor_version == "1.1"
    assert signed.signature is not None
    unsigned = handoff_checkpoint(store, blobs=blobs, signing_key=False)
    assert unsigned.descriptor_version == "1.0"
    assert "signature" not in json.loads(unsigned.to_json())  # as 1.0 readers know it
    result = adopt_checkpoint(signed.to_json(), tmp_path / "new", blobs=blobs, require_signed=True)
    assert result.descriptor_signature is not None
    assert result.descriptor_signature.principal == ALICE
    with pytest.raises(UntrustedSignerError, match="the descriptor of src:1 is not signed by a trusted key"):
        adopt_checkpoint(unsigned, tmp_path / "new2", blobs=blobs, require_signed=True)
    assert not (tmp_path / "new2").exists()


@pytest.mark.parametrize("change", [{"to_agent": "mallory"}, {"summary": "delete everything"}, {"generation": 1}])
def test_a_signed_descriptor_edited_after_signing_is_refused(
    tmp_path: Path, alice: SigningKey, change: dict[str, object]
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    document = json.loads(handoff_checkpoint(store, blobs=blobs, to_agent="beta", signing_key=alice).to_json())
    document.update(change)
    document["source"] = f"{document['thread_id']}:{document['generation']}"
    with pytest.raises(SignatureError, match="the descriptor's signature does not verify over it"):
        parse_descriptor(json.dumps(document))
    with pytest.raises(SignatureError):
        adopt_checkpoint(json.dumps(document), tmp_path / "new", blobs=blobs)
    assert not (tmp_path / "new").exists()


def test_a_1_0_descriptor_carrying_a_signature_is_refused(tmp_path: Path, alice: SigningKey) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})
    document = json.loads(handoff_checkpoint(store, blobs=blobs, signing_key=alice).to_json())
    document["descriptor_version"] = "1.0"
    with pytest.raises(DescriptorError) as refused:
        parse_descriptor(json.dumps(document))
    assert str(refused.value) == "<descriptor>: a 1.0 descriptor has no signature; a signed descriptor is format 1.1"


def test_handoff_adopt_names_the_file_of_a_1_0_descriptor_carrying_a_signature(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})
    document = json.loads(handoff_checkpoint(store, blobs=blobs, signing_key=alice).to_json())
    document["descriptor_version"] = "1.0"
    path = tmp_path / "d.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["adopt", str(path), str(tmp_path / "new"), "--blobs", str(tmp_path / "blobs")]) == 1
    err = capsys.readouterr().err
    assert err == f"handoff: {path}: a 1.0 descriptor has no signature; a signed descriptor is format 1.1\n"
    assert not (tmp_path / "new").exists()


def test_handoff_adopt_of_a_descriptor_file_edited_after_signing_names_the_file(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})
    document = json.loads(handoff_checkpoint(store, blobs=blobs, to_agent="beta", signing_key=alice).to_json())
    document["to_agent"] = "mallory"  # readdressed: the signature no longer verifies
    path = tmp_path / "d.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["adopt", str(path), str(tmp_path / "new"), "--blobs", str(tmp_path / "blobs")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"handoff: {path}: the descriptor's signature does not verify over it")
    assert "<descriptor>" not in err
    assert not (tmp_path / "new").exists()
    with pytest.raises(SignatureError) as refused:  # the library names what it is told the text came from
        adopt_checkpoint(json.dumps(document), tmp_path / "new", blobs=blobs, where=path)
    assert refused.value.path == str(path)


def test_require_signed_names_the_file_of_an_unsigned_descriptor(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})  # a checkpoint alice signed, in a descriptor no one signed
    path = tmp_path / "d.json"
    path.write_text(handoff_checkpoint(store, blobs=blobs, signing_key=False).to_json(), encoding="utf-8")
    args = ["adopt", str(path), str(tmp_path / "new"), "--blobs", str(tmp_path / "blobs"), "--require-signed"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"handoff: {path}: the descriptor of src:1 is not signed by a trusted key (unsigned)")


def test_handoff_adopt_says_who_signed_the_descriptor_and_whom_it_was_addressed_to(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    store = HandoffStore(tmp_path / "src", signing_key=alice)
    store.save({"narrative": "one"})
    path = tmp_path / "d.json"
    path.write_text(handoff_checkpoint(store, blobs=blobs, to_agent="beta", signing_key=alice).to_json())
    assert main(["adopt", str(path), str(tmp_path / "new"), "--blobs", str(tmp_path / "blobs")]) == 0
    _, descriptor, addressed = capsys.readouterr().out.splitlines()
    assert descriptor == f"  descriptor: signed by {ALICE} ({alice.fingerprint})"
    assert addressed == "  addressed to: beta"
