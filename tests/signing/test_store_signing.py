"""A store that signs: each save carries its signer's SSHSIG signature, and a restore says who signed.

Real keys (made by the library and by ssh-keygen), real files, OpenSSH's own ssh-keygen on the
other side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files import HandoffStore, SigningKeyError, load
from handoff_files.signing.keys import SigningKey, allowed_signers_line, create_key
from tests.signing.conftest import needs_ssh_keygen, ssh_keygen

PRINCIPAL = "agent@test"


@pytest.fixture(autouse=True)
def _config_home(signing_home: Path) -> Path:
    """Each test's own configuration folder: nothing configured unless the test puts it there."""
    return signing_home


def _trust(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _signature(path: Path) -> str:
    handoff = load(path)
    assert handoff.seal is not None
    assert handoff.seal.signature is not None
    return handoff.seal.signature


def test_a_save_with_a_key_is_2_1_signed_over_its_seal_and_restore_names_the_signer(
    tmp_path: Path, key: SigningKey
) -> None:
    signers = _trust(tmp_path / "allowed_signers", allowed_signers_line(key, PRINCIPAL))
    store = HandoffStore(tmp_path / "t", signing_key=key.path, allowed_signers=signers)
    receipt = store.save({"narrative": "signed"})
    document = json.loads(receipt.path.read_bytes())
    assert document["schema_version"] == "2.1"
    assert document["seal"]["signature"].startswith("-----BEGIN SSH SIGNATURE-----\n")
    restored = store.restore()
    assert restored.signature is not None
    assert (restored.signature.principal, restored.signature.fingerprint) == (PRINCIPAL, key.fingerprint)
    assert restored.signature.describe() == f"signed by {PRINCIPAL} ({key.fingerprint})"
    # every copy of the generation carries the same signature: history/ and the journal's document line
    history = next((tmp_path / "t" / "history").glob("*.json"))
    assert _signature(history) == document["seal"]["signature"]
    assert document["seal"]["signature"] in (tmp_path / "t" / "journal.jsonl").read_text(encoding="utf-8").replace(
        "\\n", "\n"
    )


def test_a_signer_outside_allowed_signers_is_reported_not_trusted_and_the_generation_still_returned(
    tmp_path: Path, key: SigningKey
) -> None:
    store = HandoffStore(tmp_path / "t", signing_key=key, allowed_signers=tmp_path / "nobody")
    store.save({"narrative": "signed by a stranger"})
    restored = store.restore()
    assert restored.handoff.narrative == "signed by a stranger"
    assert restored.signature is not None
    assert not restored.signature.trusted
    assert restored.signature.describe().startswith(f"not trusted: signed by {key.fingerprint}, a key not in ")


def test_an_unsigned_store_writes_2_1_without_a_signature_and_restore_reports_no_signer(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    receipt = store.save({"narrative": "plain"})
    document = json.loads(receipt.path.read_bytes())
    assert (document["schema_version"], "signature" in document["seal"]) == ("2.1", False)
    assert store.restore().signature is None


@needs_ssh_keygen
def test_ssh_keygen_verifies_a_saved_generations_signature_as_it_stands(tmp_path: Path, key: SigningKey) -> None:
    receipt = HandoffStore(tmp_path / "t", signing_key=key).save({"narrative": "check me with OpenSSH"})
    handoff = load(receipt.path)
    assert handoff.seal is not None
    assert handoff.seal.signature is not None
    signature = tmp_path / "generation.sig"
    signature.write_text(handoff.seal.signature, encoding="utf-8")
    signers = _trust(tmp_path / "allowed_signers", allowed_signers_line(key, PRINCIPAL))
    message = str(handoff.seal).encode()
    assert message == f"blake3:{handoff.seal.digest}".encode()
    args = ("-Y", "verify", "-n", "handoff-files", "-f", str(signers), "-I", PRINCIPAL, "-s", str(signature))
    done = ssh_keygen(*args, stdin=message)
    assert done.returncode == 0, done.stderr
    assert b"Good" in done.stdout
    assert ssh_keygen(*args, stdin=message + b"0").returncode != 0, "ssh-keygen must refuse another message"


@needs_ssh_keygen
def test_a_generation_signed_by_ssh_keygen_restores_with_its_signer(tmp_path: Path, openssh_key: Path) -> None:
    """Sign a saved generation's seal with ``ssh-keygen -Y sign`` and put the signature in every copy."""
    store = HandoffStore(tmp_path / "t", signing_key=False)
    receipt = store.save({"narrative": "signed by OpenSSH"})
    done = ssh_keygen("-Y", "sign", "-n", "handoff-files", "-f", str(openssh_key), stdin=receipt.checksum.encode())
    assert done.returncode == 0, done.stderr
    armored = done.stdout.decode()
    for path in (receipt.path, *(tmp_path / "t" / "history").glob("*.json")):
        document = json.loads(path.read_bytes())
        document["seal"]["signature"] = armored
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    public = openssh_key.with_name("id_ed25519.pub").read_text(encoding="utf-8").split()
    signers = _trust(tmp_path / "allowed_signers", f"person@laptop {public[0]} {public[1]}")
    restored = HandoffStore(tmp_path / "t", allowed_signers=signers).restore()
    assert restored.source == "primary"
    assert restored.signature is not None
    assert restored.signature.principal == "person@laptop"


def _break_signature(thread: Path, signature: str) -> None:
    """Change one base64 character of *signature*'s signature bytes wherever the thread holds it (any copy).

    The armor's last lines hold the Ed25519 signature itself, which no other signature shares (its
    first lines hold the key, which every signature by the same key does: state.json's too).
    """
    lines = signature.splitlines()
    middle = next(line for line in reversed(lines[1:-1]) if len(line) > 31)
    changed = middle[:30] + ("A" if middle[30] != "A" else "B") + middle[31:]
    for path in thread.rglob("*"):
        if path.is_file() and middle.encode() in path.read_bytes():
            path.write_bytes(path.read_bytes().replace(middle.encode(), changed.encode()))


def test_a_copy_whose_signature_does_not_verify_is_damage_and_restore_takes_another(
    tmp_path: Path, key: SigningKey
) -> None:
    store = HandoffStore(tmp_path / "t", signing_key=key)
    store.save({"narrative": "first"})
    second = store.save({"narrative": "second"})
    primary = second.path.read_bytes()
    _break_signature(tmp_path / "t", _signature(second.path))
    assert second.path.read_bytes() != primary
    assert load(second.path).narrative == "second", "the seal still matches: load() alone does not check signatures"
    restored = HandoffStore(tmp_path / "t", signing_key=key).restore()
    # every copy of generation 2 is damaged: the ladder's last rung rebuilds it from state.json and the
    # journal, unsealed, and says what was lost; the broken copy is never returned. state.json's own
    # signature (over the state it holds) says who vouched for what was rebuilt
    assert (restored.source, restored.handoff.seal) == ("rebuilt", None)
    assert restored.signature is not None
    assert restored.signature.fingerprint == key.fingerprint
    assert restored.handoff.narrative != "second"
    assert any("signature does not verify" in problem for problem in restored.problems), restored.problems


def test_only_the_primarys_signature_broken_restores_the_same_generation_from_another_copy(
    tmp_path: Path, key: SigningKey
) -> None:
    store = HandoffStore(tmp_path / "t", signing_key=key)
    store.save({"narrative": "first"})
    second = store.save({"narrative": "second"})
    signature = _signature(second.path)
    middle = signature.splitlines()[2]
    changed = middle[:30] + ("A" if middle[30] != "A" else "B") + middle[31:]
    second.path.write_bytes(second.path.read_bytes().replace(middle.encode(), changed.encode()))
    restored = HandoffStore(tmp_path / "t").restore()
    assert (restored.handoff.generation, restored.source) == (2, "history")
    assert restored.handoff.seal is not None
    assert restored.handoff.seal.signature == signature
    assert any("signature does not verify" in problem for problem in restored.problems), restored.problems


def test_the_configured_key_signs_when_none_is_given_and_false_signs_with_none(
    tmp_path: Path,
    _config_home: Path,  # noqa: PT019 -- its value: the configuration folder
) -> None:
    made = create_key(_config_home / "signing_key")
    signed = HandoffStore(tmp_path / "a").save({"narrative": "configured"})
    assert _signature(signed.path)
    assert load(signed.path).seal is not None
    unsigned = HandoffStore(tmp_path / "b", signing_key=False).save({"narrative": "never signed"})
    seal = load(unsigned.path).seal
    assert seal is not None
    assert seal.signature is None
    other = create_key(tmp_path / "env-key")
    os.environ["HANDOFF_FILES_SIGNING_KEY"] = str(other.path)
    try:
        by_env = HandoffStore(tmp_path / "c").save({"narrative": "from the environment"})
    finally:
        del os.environ["HANDOFF_FILES_SIGNING_KEY"]
    report = HandoffStore(
        tmp_path / "c", allowed_signers=_trust(tmp_path / "as", allowed_signers_line(other, "env@x"))
    ).restore()
    assert report.signature is not None
    assert report.signature.principal == "env@x"
    assert made.fingerprint != other.fingerprint
    assert by_env.generation == 1


@pytest.mark.parametrize("problem", ["missing", "readable-by-others", "public-key"])
def test_an_explicit_key_that_cannot_sign_is_refused_when_the_store_is_made(
    tmp_path: Path, key: SigningKey, problem: str
) -> None:
    path = {"missing": tmp_path / "nope", "readable-by-others": key.path, "public-key": key.path.with_suffix(".pub")}[
        problem
    ]
    if problem == "readable-by-others":
        key.path.chmod(0o644)
    with pytest.raises(SigningKeyError) as caught:
        HandoffStore(tmp_path / "t", signing_key=path)
    assert str(path) in str(caught.value)
    assert not (tmp_path / "t").exists(), "nothing is made for a store that cannot sign"


def test_a_configured_key_that_cannot_sign_fails_the_save_and_writes_nothing(
    tmp_path: Path,
    _config_home: Path,  # noqa: PT019 -- its value: the configuration folder
) -> None:
    store = HandoffStore(tmp_path / "t", signing_key=False)
    store.save({"narrative": "before"})
    broken = _config_home / "signing_key"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("not a key\n", encoding="utf-8")
    broken.chmod(0o600)
    before = {p: p.read_bytes() for p in (tmp_path / "t").rglob("*") if p.is_file()}
    with pytest.raises(SigningKeyError, match="not a key"):
        HandoffStore(tmp_path / "t").save({"narrative": "never unsigned by surprise"})
    after = {p: p.read_bytes() for p in (tmp_path / "t").rglob("*") if p.is_file() and "lock" not in p.name}
    assert after == {p: b for p, b in before.items() if "lock" not in p.name}
    assert HandoffStore(tmp_path / "t", signing_key=False).restore().handoff.narrative == "before"


def test_an_unsigned_save_and_restore_never_import_cryptography(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """With no key configured, looking for one reads the configuration; nothing loads the crypto library."""
    code = (
        "import sys\n"
        "from handoff_files import HandoffStore\n"
        "def loaded(): return sorted(m for m in sys.modules if m.startswith(('cryptography', 'handoff_files.sign')))\n"
        "HandoffStore(sys.argv[1], signing_key=False).save({'narrative': 'x'})\n"
        "assert HandoffStore(sys.argv[1], signing_key=False).restore().signature is None\n"
        "print(loaded())\n"
        "HandoffStore(sys.argv[1]).save({'narrative': 'y'})\n"
        "print(loaded())\n"
    )
    env = {**subprocess_env, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "t")], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    unsigned, looked_for_a_key = done.stdout.splitlines()
    assert unsigned == "[]"
    assert "handoff_files.signing.keys" in looked_for_a_key
    assert "cryptography" not in looked_for_a_key


def test_doctor_calls_a_copy_whose_signature_does_not_verify_damaged_and_repair_rewrites_it(
    tmp_path: Path, key: SigningKey
) -> None:
    """The doctor checks what restore checks: a history/ copy whose signature fails is rewritten from a verified one."""
    from handoff_files.thread.doctor import examine

    thread = tmp_path / "t"
    store = HandoffStore(thread, signing_key=key)  # journal-first: the journal's document line is another copy
    store.save({"narrative": "first"})
    store.save({"narrative": "second"})
    copy = thread / "history" / "00000001.json"
    intact = copy.read_bytes()
    middle = _signature(copy).splitlines()[2]
    changed = middle[:30] + ("A" if middle[30] != "A" else "B") + middle[31:]
    copy.write_bytes(intact.replace(middle.encode(), changed.encode()))
    findings = examine(thread)
    bad = [f for f in findings if f.kind == "history" and f.level != "ok"]
    assert bad, findings
    assert any("signature does not verify" in f.what for f in bad), bad
    examine(thread, repair=True)
    assert copy.read_bytes() == intact
    assert all("signature does not verify" not in f.what for f in examine(thread) if f.level != "ok"), (
        "after --repair the copy verifies again"
    )
