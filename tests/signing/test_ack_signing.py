"""Signed acknowledgement evidence: a "resumed" line written with a signing key proves the code to
another user too, whose allowed_signers trusts the key; the MAC alone proves it only to its writer."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.foundation.secret import KEY_ENV
from handoff_files.signing.keys import SigningKey, create_key
from handoff_files.thread.ackcode import code_for
from handoff_files.thread.ackproof import claim
from handoff_files.thread.journal import Entry, Journal
from tests.cli.test_cli import one_error_line

pytestmark = pytest.mark.usefixtures("signing_home")


def _acknowledged(thread: Path, key: SigningKey | Literal[False]) -> Entry:
    store = HandoffStore(thread, signing_key=key)
    store.save({"narrative": "the importer is half ported"})
    store.acknowledge(code=code_for(store.restore().handoff))
    line, _ = Journal(thread).last("resumed")
    assert line is not None
    return line


def _another_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Another user's acknowledgement key: the writer's MAC no longer checks."""
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "another-user.key"))


def test_a_signed_line_proves_the_code_to_another_user_who_trusts_the_key(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = _acknowledged(tmp_path / "t", alice)
    assert isinstance(line.extra.get("signature"), str)
    assert claim(line, thread_id="t") == "proven"  # the writer: its MAC checks
    _another_user(monkeypatch, tmp_path)
    assert claim(line, thread_id="t") == "proven"  # another user: the signature, by a trusted key
    stranger_trust = tmp_path / "empty_signers"
    stranger_trust.write_text("", encoding="utf-8")
    assert claim(line, thread_id="t", signers=stranger_trust) == "forged"  # a key it does not trust


def test_an_unsigned_line_proves_nothing_to_another_user(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = _acknowledged(tmp_path / "t", False)
    assert "signature" not in line.extra
    _another_user(monkeypatch, tmp_path)
    assert claim(line, thread_id="t") == "forged"


def test_a_signature_moved_to_another_line_or_thread_does_not_prove_it(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    signed = _acknowledged(tmp_path / "t", alice)
    other = _acknowledged(tmp_path / "u", False)
    moved = dataclasses.replace(other, extra={**other.extra, "signature": signed.extra["signature"]})
    later = dataclasses.replace(signed, at=other.at)
    _another_user(monkeypatch, tmp_path)
    assert claim(signed, thread_id="u") == "forged"  # claimed for another thread
    assert claim(moved, thread_id="u") == "forged"  # pasted into another thread's line
    assert claim(later, thread_id="t") == "forged"  # the line's time changed


def test_a_signature_by_a_key_not_trusted_proves_nothing(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    mallory = create_key(tmp_path / "mallory")
    line = _acknowledged(tmp_path / "t", mallory)
    _another_user(monkeypatch, tmp_path)
    assert claim(line, thread_id="t") == "forged"


def _saved_with_code(thread: Path) -> str:
    """A thread saved unsigned; its briefing's code."""
    store = HandoffStore(thread, signing_key=False)
    store.save({"narrative": "the importer is half ported"})
    return code_for(store.restore().handoff)


def test_handoff_acknowledge_no_sign_works_beside_a_configured_key_that_cannot_sign(
    tmp_path: Path, signing_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _saved_with_code(tmp_path / "t")
    signing_home.mkdir(parents=True)
    (signing_home / "signing_key").write_text("not a key\n", encoding="utf-8")  # the configured default
    (signing_home / "signing_key").chmod(0o600)
    assert main(["acknowledge", str(tmp_path / "t"), code]) == 1
    one_error_line(capsys.readouterr().err, "signing_key", "--no-sign")  # the way out it names …
    assert main(["acknowledge", str(tmp_path / "t"), code, "--no-sign"]) == 0  # … is there
    assert "acknowledged generation 1" in capsys.readouterr().out
    line, _ = Journal(tmp_path / "t").last("resumed")
    assert line is not None
    assert line.extra["code"] == "right"
    assert "signature" not in line.extra


def test_handoff_acknowledge_sign_with_signs_the_resumed_line(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _saved_with_code(tmp_path / "t")
    assert main(["acknowledge", str(tmp_path / "t"), code, "--sign-with", str(alice.path)]) == 0
    line, _ = Journal(tmp_path / "t").last("resumed")
    assert line is not None
    assert isinstance(line.extra.get("signature"), str)
    _another_user(monkeypatch, tmp_path)
    assert claim(line, thread_id="t") == "proven"  # by alice's signature, which this allowed_signers trusts
    with pytest.raises(SystemExit) as done:
        main(["acknowledge", str(tmp_path / "t"), code, "--sign-with", str(alice.path), "--no-sign"])
    assert done.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
