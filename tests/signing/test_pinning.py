"""Pinning (trust on first use): once a thread was read or written signed by a trusted key, only such generations count.

The attacks are real writes into the thread folder by someone who can write it but holds no
trusted key: an unsigned generation saved on top, one signed by a stranger's key.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore, UntrustedSignerError, load
from handoff_files.cli.main import main
from handoff_files.format.seal import self_check
from handoff_files.signing.keys import SigningKey, allowed_signers_line, create_key
from handoff_files.thread.pins import pin, pin_of, pins_path, unpin
from tests.conftest import ALICE

PRINCIPAL = ALICE
pytestmark = pytest.mark.usefixtures("signing_home")  # no pin, key or allowed_signers of another test or the user


def test_an_unsigned_thread_is_never_pinned_and_reads_as_before(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    restored = HandoffStore(tmp_path / "t").restore()
    assert (restored.handoff.narrative, restored.problems) == ("two", ())
    assert not pins_path().exists()


def test_a_trusted_signed_save_pins_and_an_unsigned_generation_on_top_is_refused(
    tmp_path: Path, alice: SigningKey
) -> None:
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    assert pin_of(tmp_path / "t") is not None
    HandoffStore(tmp_path / "t", signing_key=False).save({"narrative": "slipped in"})  # someone who can write it
    restored = HandoffStore(tmp_path / "t").restore()
    assert (restored.handoff.narrative, restored.handoff.generation, restored.source) == ("alice's", 1, "history")
    assert restored.signature is not None
    assert restored.signature.principal == PRINCIPAL
    assert any(
        "generation 2" in p and "is not trusted: unsigned (the folder is pinned to signed generations since" in p
        for p in restored.problems
    )


def test_a_generation_signed_by_a_stranger_is_refused_on_a_pinned_thread(tmp_path: Path, alice: SigningKey) -> None:
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    mallory = create_key(tmp_path / "mallory")
    HandoffStore(tmp_path / "t", signing_key=mallory).save({"narrative": "mallory's"})
    restored = HandoffStore(tmp_path / "t").restore()
    assert restored.handoff.narrative == "alice's"
    assert any(f"signed by {mallory.fingerprint}, a key not in" in p for p in restored.problems)


def test_reading_a_trusted_signed_generation_pins_too_and_an_untrusted_one_does_not(
    tmp_path: Path, alice: SigningKey
) -> None:
    stranger = create_key(tmp_path / "stranger")
    HandoffStore(tmp_path / "s", signing_key=stranger).save({"narrative": "a stranger's"})
    HandoffStore(tmp_path / "s").restore()
    assert pin_of(tmp_path / "s") is None, "a signer not trusted must not pin: it would lock the user out"
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "alice's"})
    pins_path().unlink()  # as if another user's save: this user has not pinned it yet
    HandoffStore(folder).restore()
    pinned = pin_of(folder)
    assert pinned is not None
    assert pinned.how == f"read generation 1, signed by {PRINCIPAL}"


def test_with_no_trusted_generation_left_a_pinned_restore_raises_and_show_says_it_in_one_line(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    HandoffStore(tmp_path / "t", signing_key=False).save({"narrative": "slipped in"})
    for copy in (tmp_path / "t" / "history").glob("00000001.*"):
        copy.unlink()  # and alice's generation removed
    with pytest.raises(UntrustedSignerError, match="no generation here is signed by a key allowed_signers trusts"):
        HandoffStore(tmp_path / "t").restore()
    assert main(["show", str(tmp_path / "t")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "handoff trust THREAD --reset" in err


def test_trust_reset_forgets_the_pin(tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]) -> None:
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    HandoffStore(tmp_path / "t", signing_key=False).save({"narrative": "unsigned, and meant"})
    assert main(["trust", str(tmp_path / "t"), "--reset"]) == 0
    assert "is no longer pinned to signed generations" in capsys.readouterr().out
    assert HandoffStore(tmp_path / "t").restore().handoff.narrative == "unsigned, and meant"


def test_require_signed_pins_from_the_start(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    HandoffStore(tmp_path / "u", signing_key=False).save({"narrative": "never signed"})
    with pytest.raises(UntrustedSignerError):
        HandoffStore(tmp_path / "u", require_signed=True).restore()
    assert main(["show", str(tmp_path / "u"), "--require-signed"]) == 1
    assert (
        "no generation here is signed by a key allowed_signers trusts (signed generations required"
        in capsys.readouterr().err
    )
    assert main(["show", str(tmp_path / "u" / "handoff.json"), "--require-signed"]) == 1
    assert (
        "generation 1 is not signed by a key allowed_signers trusts (unsigned), and signed generations"
        in capsys.readouterr().err
    )
    HandoffStore(tmp_path / "s", signing_key=alice).save({"narrative": "signed"})
    assert main(["show", str(tmp_path / "s"), "--require-signed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["signature"]["principal"] == PRINCIPAL


@pytest.mark.parametrize("thread_id", [None, "zz"], ids=["same-id", "another-id"])
def test_a_thread_made_anew_in_a_pinned_folder_stays_held_until_reset_or_signed(
    tmp_path: Path, alice: SigningKey, thread_id: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """As known_hosts keeps a host's key: the pin is the folder's; a new thread there is told, never let in unsigned."""
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "the old thread"})
    shutil.rmtree(folder)
    HandoffStore(folder, signing_key=False, thread_id=thread_id).save({"narrative": "a new thread, unsigned"})
    anew = "it now holds thread 'zz', not the 't' pinned" if thread_id else "it holds a thread made anew"
    with pytest.raises(UntrustedSignerError, match=anew) as caught:
        HandoffStore(folder).restore()
    assert "`handoff trust THREAD --reset` forgets the pin if this is expected" in caught.value.reason
    assert main(["trust", str(folder), "--reset"]) == 0
    capsys.readouterr()
    assert HandoffStore(folder).restore().handoff.narrative == "a new thread, unsigned"
    shutil.rmtree(folder)
    HandoffStore(folder, signing_key=alice).save({"narrative": "the old thread"})
    shutil.rmtree(folder)
    HandoffStore(folder, signing_key=alice, thread_id=thread_id).save({"narrative": "a new thread, signed by alice"})
    assert HandoffStore(folder).restore().handoff.narrative == "a new thread, signed by alice"  # the pin moves to it
    held = pin_of(folder)
    assert held is not None
    assert held.thread_id == (thread_id or "t")
    assert held.first_seal == str(load(folder / "history" / "00000001.json").seal), "the pin moved to the new thread"


def test_a_pin_record_others_can_write_is_said_not_obeyed(tmp_path: Path, alice: SigningKey) -> None:
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    pins_path().chmod(0o666)
    HandoffStore(tmp_path / "t", signing_key=False).save({"narrative": "unsigned"})
    restored = HandoffStore(tmp_path / "t").restore()
    assert any("the record of pinned threads cannot be read" in p for p in restored.problems)


@pytest.mark.parametrize("how", ["revoked", "retired"])
def test_a_key_revoked_or_retired_by_valid_before_is_refused_on_a_pinned_thread(
    tmp_path: Path, alice: SigningKey, how: str
) -> None:
    """Rotation and revocation as allowed_signers says them: the old key's later generation is not trusted."""
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's, new key"})
    old = create_key(tmp_path / "old")
    trust = tmp_path / "config" / "handoff-files" / "allowed_signers"
    if how == "retired":
        line = allowed_signers_line(old, "old@example.com").replace(
            '"handoff-files"', '"handoff-files",valid-before="20200101Z"'
        )
        trust.write_text(trust.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    else:
        trust.write_text(
            trust.read_text(encoding="utf-8") + allowed_signers_line(old, "old@example.com") + "\n", encoding="utf-8"
        )
        (trust.parent / "revoked_keys").write_text(old.public_line + "\n", encoding="utf-8")
    HandoffStore(tmp_path / "t", signing_key=old).save({"narrative": "signed with the old key"})
    restored = HandoffStore(tmp_path / "t").restore()
    assert restored.handoff.narrative == "alice's, new key"
    why = "a revoked key" if how == "revoked" else "outside the time its key is trusted"
    assert any(why in p for p in restored.problems), restored.problems


def test_state_json_cannot_inject_state_into_a_pinned_thread(tmp_path: Path, alice: SigningKey) -> None:
    """Every copy of the newest generation damaged and state.json rewritten: its signature does not verify, so
    nothing is rebuilt from it; with the signature stripped the rebuild is unsigned, so refused on a pinned thread."""
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice, durability="full")
    store.save({"narrative": "one", "state": {"data": {"deploy": "staging"}}})
    store.save({"narrative": "two", "state": {"data": {"deploy": "staging"}}})
    for copy in (folder / "handoff.json", folder / "history" / "00000002.json"):
        copy.write_bytes(copy.read_bytes().replace(b'"two"', b'"tw0"'))  # damaged: the seal no longer matches
    mirror = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    mirror["state"]["data"]["deploy"] = "production"  # the injection, its check recomputed as anyone can
    del mirror["check"]
    mirror["check"] = self_check(mirror)
    (folder / "state.json").write_text(json.dumps(mirror), encoding="utf-8")
    unpin(folder)
    # signed by alice over "staging": the edit breaks the signature, and nothing is rebuilt from it, pinned or not
    restored = HandoffStore(folder, signing_key=False).restore()
    assert (restored.source, restored.handoff.generation) == ("history", 1)
    assert any("state.json: its signature does not verify over its state" in p for p in restored.problems)
    del mirror["signature"], mirror["check"]  # the signature stripped
    mirror["check"] = self_check(mirror)
    (folder / "state.json").write_text(json.dumps(mirror), encoding="utf-8")
    unpin(folder)  # the restore above read alice's generation 1, which pinned the folder again
    rebuilt = HandoffStore(folder, signing_key=False).restore()  # not pinned: the injection is returned (flagged)
    assert (rebuilt.source, rebuilt.handoff.state.data) == ("rebuilt", {"deploy": "production"})
    pin(folder, "t", None, how="again")
    restored = HandoffStore(folder, signing_key=False).restore()
    assert restored.source == "history"
    assert restored.handoff.generation == 1
    assert restored.handoff.state.data == {"deploy": "staging"}
    assert any("is not trusted: unsigned" in p for p in restored.problems), restored.problems


def test_on_a_pinned_folder_show_generation_and_validate_refuse_an_unsigned_generation_and_a_save_says_so(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "alice's"})
    receipt = HandoffStore(folder, signing_key=False).save({"narrative": "slipped in"})
    assert any("this folder is pinned to signed generations" in p for p in receipt.problems)
    assert main(["show", str(folder), "--generation", "2"]) == 1
    assert "its thread folder is pinned to them" in capsys.readouterr().err
    assert main(["validate", str(folder)]) == 1
    assert "its thread folder is pinned to signed ones" in capsys.readouterr().err
    assert main(["validate", str(folder / "history" / "00000001.json")]) == 0


def test_a_pin_forgotten_by_another_process_is_forgotten_here_at_once(
    tmp_path: Path, alice: SigningKey, subprocess_env: dict[str, str]
) -> None:
    """The record read last is kept by its identity on disk: a rewrite elsewhere (a new file renamed in) is seen."""
    import os
    import subprocess
    import sys

    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    assert pin_of(tmp_path / "t") is not None
    env = {**subprocess_env, "HANDOFF_FILES_KEY": os.environ["HANDOFF_FILES_KEY"]}
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "trust", str(tmp_path / "t"), "--reset"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert pin_of(tmp_path / "t") is None


def test_history_and_trust_list_say_the_pin_and_mark_an_unsigned_generation(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "alice's"})
    HandoffStore(tmp_path / "t", signing_key=False).save({"narrative": "slipped in"})
    capsys.readouterr()
    assert main(["history", str(tmp_path / "t")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("pinned to signed generations since ")
    assert "handoff.json" in lines[1]
    assert "BAD: not trusted, and passed over: unsigned (the folder is pinned to signed generations" in lines[1]
    assert lines[2].endswith("unsigned")
    assert lines[3].endswith(f"signed by {PRINCIPAL}")
    assert main(["trust", "--list"]) == 0
    out = capsys.readouterr().out
    assert "pinned to signed generations:" in out
    assert f"thread t: saved generation 1, signed by {PRINCIPAL}" in out


def test_a_pinned_folder_replaced_by_a_symbolic_link_is_still_held(tmp_path: Path, alice: SigningKey) -> None:
    folder = tmp_path / "p" / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "alice's"})
    elsewhere = tmp_path / "p" / ".evil" / "t"
    HandoffStore(elsewhere, signing_key=False).save({"narrative": "evil"})
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere)
    with pytest.raises(UntrustedSignerError):
        HandoffStore(folder).restore()


def test_another_threads_trusted_generation_never_stands_in_for_this_one(tmp_path: Path, alice: SigningKey) -> None:
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "t's 1"})
    other = HandoffStore(tmp_path / "x", signing_key=alice)
    for n in range(1, 6):
        other.save({"narrative": f"x's {n}"})
    shutil.copyfile(tmp_path / "x" / "history" / "00000005.json", folder / "history" / "00000005.json")
    HandoffStore(folder, signing_key=False).save({"narrative": "slipped in"})
    restored = HandoffStore(folder).restore()
    assert restored.handoff.narrative == "t's 1"


def test_a_signed_save_pins_again_after_a_reset_in_the_same_process(tmp_path: Path, alice: SigningKey) -> None:
    store = HandoffStore(tmp_path / "t", signing_key=alice)
    store.save({"narrative": "one"})
    assert unpin(tmp_path / "t")
    store.save({"narrative": "two"})
    assert pin_of(tmp_path / "t") is not None


def test_restores_racing_pin_changes_in_threads_raise_nothing_but_handoff_errors(
    tmp_path: Path, alice: SigningKey
) -> None:
    import threading

    HandoffStore(tmp_path / "u", signing_key=False).save({"narrative": "unsigned"})
    errors: list[BaseException] = []

    def restores() -> None:
        try:
            for _ in range(150):
                HandoffStore(tmp_path / "u").restore()
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=restores) for _ in range(3)]
    for reader in readers:
        reader.start()
    for n in range(30):  # each signed save into a new folder rewrites the record
        HandoffStore(tmp_path / f"s{n}", signing_key=alice).save({"narrative": "signed"})
    for reader in readers:
        reader.join()
    assert errors == []


def test_a_tilde_that_cannot_be_expanded_is_one_line_not_a_traceback(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HANDOFF_FILES_ALLOWED_SIGNERS", "~no-such-user-here/allowed_signers")
    HandoffStore(tmp_path / "t", signing_key=alice).save({"narrative": "signed"})  # no one trusted: no pin
    assert main(["show", str(tmp_path / "t")]) == 0
    assert "no allowed_signers can be found" in capsys.readouterr().out
    monkeypatch.setenv("HANDOFF_FILES_SIGNING_KEY", "~no-such-user-here/key")
    content = tmp_path / "c.json"
    content.write_text('{"narrative": "x"}', encoding="utf-8")
    assert main(["save", str(tmp_path / "u"), str(content)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "$HANDOFF_FILES_SIGNING_KEY names it, and its '~' cannot be expanded here" in err


def test_doctor_on_a_pinned_folder_reports_untrusted_copies_and_never_repairs_from_them(
    tmp_path: Path, alice: SigningKey
) -> None:
    from handoff_files.thread.doctor import examine

    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "alice's"})
    HandoffStore(folder, signing_key=False).save({"narrative": "slipped in"})
    (folder / "history" / "00000002.json").unlink()  # a repair must not write it back from the primary
    findings = examine(folder, repair=True)
    assert not (folder / "history" / "00000002.json").exists()
    said = " ".join(f.what for f in findings if f.level != "ok")
    assert "handoff.json is not trusted (unsigned), and the folder is pinned to signed generations" in said
    assert "state.json mirrors generation 2, which no trusted key signed" in said
    unpinned = tmp_path / "u"
    HandoffStore(unpinned, signing_key=False).save({"narrative": "one"})
    HandoffStore(unpinned, signing_key=False).save({"narrative": "two"})
    (unpinned / "history" / "00000002.json").unlink()
    examine(unpinned, repair=True)
    assert (unpinned / "history" / "00000002.json").exists(), "an unpinned thread is repaired as before"
