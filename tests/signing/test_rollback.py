"""The rollback anchor: a pinned thread older than this user last saw it is refused, never restored unseen.

The attacks are real writes by someone who can write the thread folder but holds no trusted key:
the newest generations removed with state.json and the journal put back as they were, a
generation replaced by another genuinely signed one of the same number.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

import pytest

from handoff_files import HandoffStore, RollbackError
from handoff_files.cli.main import main
from handoff_files.signing.keys import SigningKey
from handoff_files.thread.anchor import anchor_of
from handoff_files.thread.pins import unpin
from handoff_files.thread.verify import verify_thread
from tests.conftest import ALICE

pytestmark = pytest.mark.usefixtures("signing_home")


def _snapshot(folder: Path, to: Path) -> None:
    shutil.copytree(folder, to, symlinks=True)


def _put_back(snapshot: Path, folder: Path) -> None:
    """The whole folder as it was (files, history/, state.json, journal): what a full rollback leaves."""
    shutil.rmtree(folder)
    shutil.copytree(snapshot, folder, symlinks=True)


def _rolled_back_to_1(tmp_path: Path, key: SigningKey | Literal[False]) -> Path:
    """A thread saved twice (signed with *key*, or unsigned: False), then put back as it was after generation 1."""
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=key)
    store.save({"narrative": "one"})
    _snapshot(folder, tmp_path / "at-1")
    store.save({"narrative": "two"})
    _put_back(tmp_path / "at-1", folder)
    return folder


@pytest.mark.parametrize("durability", ["journal", "full"])
def test_a_full_rollback_of_a_pinned_thread_is_refused_naming_both_generations(
    tmp_path: Path, alice: SigningKey, durability: str
) -> None:
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice, durability=durability)  # type: ignore[arg-type]
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    _snapshot(folder, tmp_path / "at-2")
    third = store.save({"narrative": "three: the deploy was rolled back"})
    assert HandoffStore(folder).restore().handoff.generation == 3
    _put_back(tmp_path / "at-2", folder)
    with pytest.raises(RollbackError) as caught:
        HandoffStore(folder).restore()
    reason = caught.value.reason
    assert "newest trusted generation here is 2" in reason
    assert f"generation 3 (seal {third.checksum})" in reason
    assert f"`handoff show {folder} --accept-rollback`" in reason
    assert "accept_rollback=True" in reason
    assert f"`handoff trust {folder} --reset`" in reason
    # the next save would reuse number 3 with another seal: refused too, nothing written
    before = sorted(p.name for p in (folder / "history").iterdir())
    with pytest.raises(RollbackError, match="a save now would follow the rolled-back generation"):
        HandoffStore(folder, signing_key=alice).save({"narrative": "three, again"})
    assert sorted(p.name for p in (folder / "history").iterdir()) == before


def test_an_accepted_rollback_is_said_and_anchors_the_thread_where_it_stands(tmp_path: Path, alice: SigningKey) -> None:
    folder = _rolled_back_to_1(tmp_path, alice)
    restored = HandoffStore(folder).restore(accept_rollback=True)
    assert restored.handoff.generation == 1
    assert any(p.startswith("a rollback, accepted: ") for p in restored.problems)
    anchor = anchor_of(folder)
    assert anchor is not None
    assert anchor.generation == 1
    assert HandoffStore(folder).restore().problems == ()  # anchored here now: a plain restore again
    assert HandoffStore(folder, signing_key=alice).save({"narrative": "two, anew"}).generation == 2


def test_a_generation_replaced_by_another_signed_one_of_the_same_number_is_refused(
    tmp_path: Path, alice: SigningKey
) -> None:
    """Two genuinely signed generations 2 (a copy of the folder went on elsewhere): swapping one in is caught."""
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "one"})
    _snapshot(folder, tmp_path / "elsewhere")
    HandoffStore(folder, signing_key=alice).save({"narrative": "two, here"})
    unpin(tmp_path / "elsewhere")
    HandoffStore(tmp_path / "elsewhere", signing_key=alice).save({"narrative": "two, elsewhere"})
    _put_back(tmp_path / "elsewhere", folder)
    with pytest.raises(RollbackError, match=r"generation 2 here has seal .* the generation was replaced"):
        HandoffStore(folder).restore()


def test_a_damaged_newest_generation_of_a_pinned_thread_is_not_restored_past_unseen(
    tmp_path: Path, alice: SigningKey
) -> None:
    """Every copy of the newest generation damaged: under the anchor that is a rollback too (TUF's rule)."""
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice, durability="full")
    store.save({"narrative": "one"})
    store.save({"narrative": "two"})
    for copy in (folder / "handoff.json", folder / "history" / "00000002.json"):
        copy.write_bytes(copy.read_bytes().replace(b'"two"', b'"tw0"'))
    # state.json, signed by alice over generation 2's state, still vouches for it: rebuilt, trusted
    rebuilt = HandoffStore(folder).restore()
    assert (rebuilt.source, rebuilt.handoff.generation) == ("rebuilt", 2)
    assert rebuilt.signature is not None
    assert rebuilt.signature.principal == ALICE
    (folder / "state.json").unlink()
    with pytest.raises(RollbackError, match="newest trusted generation here is 1"):
        HandoffStore(folder).restore()
    restored = HandoffStore(folder).restore(accept_rollback=True)
    assert restored.handoff.narrative == "one"
    assert any("does not match its seal" in p or "damaged" in p or "seal" in p for p in restored.problems)


def test_an_unpinned_thread_has_no_anchor_and_restores_older_generations_as_before(tmp_path: Path) -> None:
    folder = _rolled_back_to_1(tmp_path, False)
    assert HandoffStore(folder).restore().handoff.generation == 1
    assert anchor_of(folder) is None


def test_a_thread_deleted_and_made_anew_is_a_new_thread_not_a_rollback(tmp_path: Path, alice: SigningKey) -> None:
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=alice)
    for n in range(3):
        store.save({"narrative": f"old {n}"})
    shutil.rmtree(folder)
    HandoffStore(folder, signing_key=alice).save({"narrative": "a new thread, same name"})
    restored = HandoffStore(folder).restore()
    assert restored.handoff.narrative == "a new thread, same name"
    anchor = anchor_of(folder)
    assert anchor is not None
    assert (anchor.generation, anchor.first_seal) == (1, str(restored.handoff.seal))


def test_show_accept_rollback_anchors_it_and_trust_reset_forgets_the_anchor(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _rolled_back_to_1(tmp_path, alice)
    assert main(["show", str(folder)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "RollbackError" not in err
    assert "the newer generations were removed" in err
    assert main(["show", str(folder), "--accept-rollback"]) == 0
    out = capsys.readouterr().out
    assert "one" in out
    assert "a rollback, accepted: " in out
    assert anchor_of(folder).generation == 1  # type: ignore[union-attr]
    assert main(["show", str(folder)]) == 0
    capsys.readouterr()
    assert main(["trust", str(folder), "--reset"]) == 0
    assert "has no rollback anchor" in capsys.readouterr().out
    assert anchor_of(folder) is None
    assert main(["show", str(folder)]) == 0


def test_an_anchor_others_can_write_is_used_for_nothing_and_said(tmp_path: Path, alice: SigningKey) -> None:
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "one"})
    anchors = tmp_path / "state" / "anchors"
    (path,) = anchors.iterdir()
    path.chmod(0o666)
    restored = HandoffStore(folder).restore()
    assert any(p.startswith("no rollback check: ") for p in restored.problems)


def test_handoff_verify_reports_a_rolled_back_thread(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "t"
    HandoffStore(folder, signing_key=alice).save({"narrative": "one"})
    assert verify_thread(folder).ok
    rolled = _rolled_back_to_1(tmp_path / "second", alice)
    check = verify_thread(rolled)
    assert not check.ok
    assert [p for p in check.problems if p.startswith("rolled back: the newest trusted generation here is 1")]
    assert main(["verify", str(rolled)]) == 1
    assert "rolled back" in capsys.readouterr().out
    HandoffStore(rolled).restore(accept_rollback=True)  # accepted: the anchor moves, verify agrees again
    assert verify_thread(rolled).ok
