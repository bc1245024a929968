"""The command line signs and says who signed: `save --sign-with` and `--no-sign`, `show`, `history`, `validate`.

Each command runs as a person runs it (``main`` with argv), on real keys and real threads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import load
from handoff_files.cli.main import main
from handoff_files.signing.keys import SigningKey, allowed_signers_line, create_key
from tests.cli.test_json_schemas import check

PRINCIPAL = "agent@test"


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's configuration folder (nothing configured in it yet)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("HANDOFF_FILES_SIGNING_KEY", raising=False)
    monkeypatch.delenv("HANDOFF_FILES_ALLOWED_SIGNERS", raising=False)
    return tmp_path / "config" / "handoff-files"


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return create_key(tmp_path / "keys" / "agent", comment=PRINCIPAL)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _save(tmp_path: Path, thread: Path, narrative: str, *options: str) -> list[str]:
    content = tmp_path / f"{narrative}.json"
    content.write_text(json.dumps({"narrative": narrative}), encoding="utf-8")
    return ["save", str(thread), str(content), *options]


def _trust(config: Path, key: SigningKey) -> None:
    config.mkdir(parents=True, exist_ok=True)
    (config / "allowed_signers").write_text(allowed_signers_line(key, PRINCIPAL) + "\n", encoding="utf-8")


def test_save_sign_with_signs_and_says_so_and_json_gives_the_fingerprint(
    tmp_path: Path, key: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t"
    code, out, _ = _run(capsys, *_save(tmp_path, thread, "one", "--sign-with", str(key.path)))
    assert code == 0
    assert out.rstrip().endswith(f", signed by {key.fingerprint}")
    code, out, _ = _run(capsys, *_save(tmp_path, thread, "two", "--sign-with", str(key.path), "--json"))
    receipt = json.loads(out)
    check(receipt, "save")
    assert receipt["signed_by"] == key.fingerprint
    seal = load(thread / "handoff.json").seal
    assert seal is not None
    assert seal.signature is not None


def test_no_sign_overrides_a_configured_key_and_the_two_options_exclude_each_other(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_key(config / "signing_key")
    thread = tmp_path / "t"
    _, out, _ = _run(capsys, *_save(tmp_path, thread, "configured", "--json"))
    assert json.loads(out)["signed_by"] is not None, "the configured key signs when nothing is said"
    _, out, _ = _run(capsys, *_save(tmp_path, thread, "unsigned", "--no-sign", "--json"))
    assert json.loads(out)["signed_by"] is None
    seal = load(thread / "handoff.json").seal
    assert seal is not None
    assert seal.signature is None
    with pytest.raises(SystemExit) as done:
        main(_save(tmp_path, thread, "both", "--no-sign", "--sign-with", "k"))
    assert done.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_key_that_cannot_sign_is_one_line_exit_1_and_nothing_saved(
    tmp_path: Path, key: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    key.path.chmod(0o640)
    code, out, err = _run(capsys, *_save(tmp_path, tmp_path / "t", "x", "--sign-with", str(key.path)))
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith(f"handoff: {key.path}: a private key must be this user's")
    assert not (tmp_path / "t").exists()


def test_show_and_history_name_a_trusted_signer(
    tmp_path: Path, key: SigningKey, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t"
    _run(capsys, *_save(tmp_path, thread, "signed", "--sign-with", str(key.path)))
    _run(capsys, *_save(tmp_path, thread, "plain", "--no-sign"))
    _trust(config, key)
    _, out, _ = _run(capsys, "show", str(thread), "--generation", "1")
    assert f"signed by {PRINCIPAL} ({key.fingerprint})" in out.splitlines()[2]
    _, out, _ = _run(capsys, "show", str(thread))
    assert "signed by" not in out, "an unsigned generation says nothing of a signer"
    _, out, _ = _run(capsys, "history", str(thread))
    first, second = out.splitlines()[1], out.splitlines()[0]
    assert first.endswith(f"signed by {PRINCIPAL}")
    assert "signed" not in second
    _, out, _ = _run(capsys, "history", str(thread), "--json")
    entries = json.loads(out)
    check(entries, "history")
    assert [e["signature"] and e["signature"]["principal"] for e in entries] == [None, PRINCIPAL]
    _, out, _ = _run(capsys, "show", str(thread), "--generation", "1", "--json")
    shown = json.loads(out)
    check(shown, "show")
    assert shown["signature"]["principal"] == PRINCIPAL
    assert shown["handoff"]["seal"]["signature"].startswith("-----BEGIN SSH SIGNATURE-----")


def test_show_of_an_untrusted_signer_says_not_trusted_on_its_third_line(
    tmp_path: Path, key: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t"
    _run(capsys, *_save(tmp_path, thread, "stranger", "--sign-with", str(key.path)))
    code, out, _ = _run(capsys, "show", str(thread))
    assert code == 0
    assert out.splitlines()[2].startswith(f"NOT TRUSTED: signed by {key.fingerprint}, a key not in ")
    _, out, _ = _run(capsys, "history", str(thread))
    assert out.rstrip().endswith(f"signed by {key.fingerprint} (not trusted)")
    _, out, _ = _run(capsys, "show", str(thread), "--json")
    shown = json.loads(out)
    check(shown, "show")
    assert (shown["signature"]["principal"], shown["signature"]["fingerprint"]) == (None, key.fingerprint)


def _forge(path: Path) -> None:
    """Change one base64 character inside the file's signature: the seal still matches, the signature does not."""
    data = path.read_bytes()
    at = data.index(b"-----BEGIN SSH SIGNATURE-----") + 120
    data = data[:at] + (b"A" if data[at : at + 1] != b"A" else b"B") + data[at + 1 :]
    path.write_bytes(data)


def test_a_file_whose_signature_does_not_verify_is_refused_by_show_and_validate_and_flagged_by_history(
    tmp_path: Path, key: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t"
    _run(capsys, *_save(tmp_path, thread, "one", "--sign-with", str(key.path)))
    _run(capsys, *_save(tmp_path, thread, "two", "--sign-with", str(key.path)))
    copy = thread / "history" / "00000001.json"
    _forge(copy)
    code, out, err = _run(capsys, "show", str(copy))
    assert (code, out) == (1, "")
    assert err == f"handoff: {copy}: its signature does not verify over its seal: " + err.split(": ", 3)[3]
    code, _, err = _run(capsys, "validate", str(copy), str(thread / "history" / "00000002.json"))
    assert code == 1
    assert err.startswith(f"handoff: {copy}: its signature does not verify")
    code, out, _ = _run(capsys, "validate", "--json", str(copy))
    assert json.loads(out)[0]["kind"] == "SignatureError"
    code, _, err = _run(capsys, "show", str(thread), "--generation", "1")
    assert code == 1
    assert "generation 1 does not verify: its signature does not verify" in err
    _, out, _ = _run(capsys, "history", str(thread))
    assert "BAD: its signature does not verify over its seal" in out.splitlines()[1]
