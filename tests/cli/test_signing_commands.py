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
def config(signing_home: Path) -> Path:
    """This test's configuration folder (nothing configured in it yet)."""
    return signing_home


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


def test_history_lists_a_primary_whose_signature_fails_as_bad_and_seal_refuses_it(
    tmp_path: Path, key: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t"
    _run(capsys, *_save(tmp_path, thread, "one", "--sign-with", str(key.path)))
    _forge(thread / "handoff.json")
    _, out, _ = _run(capsys, "history", str(thread))
    assert "handoff.json" in out.splitlines()[0]
    assert "BAD: its signature does not verify over its seal" in out.splitlines()[0]
    code, out, err = _run(capsys, "seal", str(thread))
    assert (code, out) == (1, "")
    assert "damage, not an edit to seal; `handoff doctor --repair` rewrites it" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(('signing-key = "~/.ssh/id_ed25519"\n', "unknown setting 'signing-key'"), id="misspelt"),
        pytest.param(("signing_key = false\n", "in quotes, not false"), id="false"),
        pytest.param(('signing_key = "a\\u0000b"\n', "NUL"), id="nul"),
        pytest.param(('signing_key = "keys"\n', "a folder, not a file; signing_key in"), id="folder"),
    ],
)
def test_a_configured_key_that_cannot_be_used_is_one_line_naming_the_setting(
    tmp_path: Path,
    config: Path,
    case: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config_text, needle = case
    monkeypatch.chdir(tmp_path)  # the configured "keys" is relative
    (tmp_path / "keys").mkdir()
    config.mkdir(parents=True)
    (config / "config.toml").write_text(config_text, encoding="utf-8")
    code, out, err = _run(capsys, *_save(tmp_path, tmp_path / "t", "x"))
    assert (code, out) == (1, "")
    assert needle in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_a_key_named_by_the_environment_says_so_and_how_to_save_unsigned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDOFF_FILES_SIGNING_KEY", str(tmp_path / "missing"))
    code, _, err = _run(capsys, *_save(tmp_path, tmp_path / "t", "x"))
    assert code == 1
    assert "no such key file" in err
    assert "$HANDOFF_FILES_SIGNING_KEY names it (--no-sign or signing_key=False saves unsigned)" in err
    code, _, _ = _run(capsys, *_save(tmp_path, tmp_path / "t", "x", "--no-sign"))
    assert code == 0


def test_a_file_that_is_no_key_is_told_so_whatever_its_mode_and_an_empty_path_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content = tmp_path / "notes.yaml"
    content.write_text("narrative: hi\n", encoding="utf-8")
    content.chmod(0o644)
    _, _, err = _run(capsys, *_save(tmp_path, tmp_path / "t", "x", "--sign-with", str(content)))
    assert "not a key: expected an OpenSSH private key" in err
    code, _, err = _run(capsys, *_save(tmp_path, tmp_path / "t", "x", "--sign-with", ""))
    assert code == 1
    assert "signing_key is an empty path" in err


def test_a_missing_or_misspelt_allowed_signers_is_said_beside_the_untrusted_signer(
    tmp_path: Path, key: SigningKey, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t"
    _run(capsys, *_save(tmp_path, thread, "one", "--sign-with", str(key.path)))
    _, out, _ = _run(capsys, "show", str(thread))
    assert "(there is no such file: no signer is trusted until one is made" in out.splitlines()[2]
    config.mkdir(parents=True)
    line = allowed_signers_line(key, PRINCIPAL).replace("namespaces=", "namespace=")  # a person's typo
    (config / "allowed_signers").write_text(line + "\n", encoding="utf-8")
    _, out, _ = _run(capsys, "show", str(thread))
    assert "its lines that could not be read trust no one: line 1: unknown option 'namespace'" in out


def test_adopt_signs_the_new_generation_as_asked(
    tmp_path: Path, key: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, *_save(tmp_path, tmp_path / "t1", "one", "--no-sign"))
    code, descriptor, _ = _run(capsys, "export", str(tmp_path / "t1"), "--to", "beta", "--blobs", str(tmp_path / "b"))
    assert code == 0
    (tmp_path / "d.json").write_text(descriptor, encoding="utf-8")
    blobs = ("--blobs", str(tmp_path / "b"))
    code, _, err = _run(
        capsys, "adopt", str(tmp_path / "d.json"), str(tmp_path / "signed"), *blobs, "--sign-with", str(key.path)
    )
    assert code == 0, err
    signed = load(tmp_path / "signed" / "handoff.json").seal
    assert signed is not None
    assert signed.signature is not None
    code, _, err = _run(capsys, "adopt", str(tmp_path / "d.json"), str(tmp_path / "plain"), *blobs, "--no-sign")
    assert code == 0, err
    plain = load(tmp_path / "plain" / "handoff.json").seal
    assert plain is not None
    assert plain.signature is None
