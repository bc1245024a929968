"""``handoff verify``: the whole chain and every signature, on real threads changed as a writer of the folder would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.signing.keys import SigningKey
from handoff_files.thread.verify import verify_thread
from tests.cli.test_json_schemas import check

pytestmark = pytest.mark.usefixtures("signing_home")  # no pin, key or allowed_signers of another test or the user


def _thread(folder: Path, generations: int, **options: object) -> Path:
    store = HandoffStore(folder, **options)  # type: ignore[arg-type]
    for n in range(1, generations + 1):
        store.save({"narrative": f"{folder.name} {n}"})
    return folder


def _verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def test_a_sound_thread_verifies_with_exit_0(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = _thread(tmp_path / "t", 3, signing_key=alice)
    code, out = _verify(capsys, str(thread))
    assert code == 0, out
    assert out.rstrip().endswith("ok: every generation verifies and the chain holds")
    assert out.count("signed by alice@example.com") == 3
    code, out = _verify(capsys, str(thread), "--json")
    document = json.loads(out)
    check(document, "verify")
    assert (document["ok"], document["problems"], len(document["generations"])) == (True, [], 3)


def test_a_generation_removed_from_the_middle_is_told_from_retention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = _thread(tmp_path / "t", 4)
    (thread / "history" / "00000002.json").unlink()
    (thread / "history" / "00000001.json").unlink()  # the oldest: what retention removes, not a problem
    code, out = _verify(capsys, str(thread))
    assert code == 0, out
    assert verify_thread(thread).ok
    thread = _thread(tmp_path / "u", 4)
    (thread / "history" / "00000002.json").unlink()
    code, out = _verify(capsys, str(thread))
    assert code == 1
    assert "problem: generation(s) 2 missing between kept ones (a save prunes only the oldest: lost or removed)" in out


def test_a_generation_from_a_fork_does_not_follow_the_one_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another writer's generation 2 of a thread of the same id, put in place of ours: sealed, verifies alone."""
    ours = _thread(tmp_path / "a" / "t", 2)
    theirs = _thread(tmp_path / "b" / "t", 2)
    shutil.copyfile(theirs / "history" / "00000002.json", ours / "history" / "00000002.json")
    code, out = _verify(capsys, str(ours))
    assert code == 1
    assert "problem: generation 2 does not follow generation 1: its parent is" in out
    assert "handoff.json holds generation 2 with seal" in out  # the primary is still ours: two generations 2


def test_a_damaged_copy_is_listed_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = _thread(tmp_path / "t", 2)
    copy = thread / "history" / "00000001.json"
    copy.write_bytes(copy.read_bytes().replace(b"t 1", b"t X"))
    code, out = _verify(capsys, str(thread))
    assert code == 1
    assert "history/00000001.json  BAD: content does not match its seal" in out


def test_on_a_pinned_thread_an_unsigned_newer_generation_is_a_problem_and_require_signed_asks_it_anywhere(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = _thread(tmp_path / "t", 1, signing_key=alice)
    HandoffStore(thread, signing_key=False).save({"narrative": "slipped in"})
    code, out = _verify(capsys, str(thread))
    assert code == 1
    assert "pinned to signed generations since" in out.splitlines()[0]
    assert "problem: generation 2 (00000002.json) is unsigned" in out
    plain = _thread(tmp_path / "p", 2)
    assert _verify(capsys, str(plain))[0] == 0
    code, out = _verify(capsys, str(plain), "--require-signed")
    assert code == 1
    assert "problem: no generation is signed by a key allowed_signers trusts" in out


def test_verify_of_a_folder_that_is_no_thread_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err
    assert err == f"handoff: {tmp_path / 'nothing'}: no such thread directory\n"


def test_a_generation_of_another_thread_id_keeps_the_pin_and_is_named(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pin is the folder's: a newest file naming another thread neither hides it nor passes as this thread's."""
    thread = _thread(tmp_path / "t", 2, signing_key=alice)
    stranger = _thread(tmp_path / "elsewhere" / "x", 3)
    shutil.copyfile(stranger / "history" / "00000003.json", thread / "history" / "00000003.json")
    code, out = _verify(capsys, str(thread), "--json")
    document = json.loads(out)
    assert code == 1
    assert document["pinned"] is not None
    assert any("generation 3 (x / x) belongs to another thread than 't'" in p for p in document["problems"])
    assert any("generation 3 (00000003.json) is unsigned" in p for p in document["problems"])


def test_a_damaged_file_in_the_middle_is_bad_not_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = _thread(tmp_path / "t", 3)
    copy = thread / "history" / "00000002.json"
    copy.write_bytes(copy.read_bytes().replace(b"t 2", b"t X"))
    code, out = _verify(capsys, str(thread))
    assert code == 1
    assert "missing" not in out
    assert out.rstrip().endswith("1 problem(s)")


@pytest.mark.parametrize("what", ["file", "empty-folder", "folder-of-threads"])
def test_verify_of_what_is_no_thread_is_refused_in_one_line(
    tmp_path: Path, what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _thread(tmp_path / "threads" / "a", 1)
    target = {
        "file": tmp_path / "threads" / "a" / "handoff.json",
        "empty-folder": tmp_path / "empty",
        "folder-of-threads": tmp_path / "threads",
    }[what]
    (tmp_path / "empty").mkdir()
    assert main(["verify", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert {
        "file": "a file, not a thread directory",
        "empty-folder": "not a thread",
        "folder-of-threads": "a folder of threads",
    }[what] in err
