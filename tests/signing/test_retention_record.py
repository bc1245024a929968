"""The retention record: `handoff verify` tells the generations the writers pruned from the ones lost or removed.

The attacks are real removals and edits by someone who can write the thread folder but holds no
trusted key: a kept generation file deleted, the record deleted, edited, signed by another key, or
copied from another thread.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from handoff_files import HandoffStore, prune_history
from handoff_files.cli.main import main
from handoff_files.signing.keys import SigningKey, create_key
from handoff_files.thread.retained import RETENTION_NAME, RetentionRecord, read_record, write_record
from handoff_files.thread.verify import verify_thread
from tests.conftest import ALICE

pytestmark = pytest.mark.usefixtures("signing_home")


def _thread(
    tmp_path: Path, key: SigningKey | bool, saves: int = 15, keep: int = 5, durability: str = "journal"
) -> Path:
    """A thread of *saves* generations by a store keeping *keep* (signed with *key*, or unsigned: False)."""
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=key, keep=keep, durability=durability)  # type: ignore[arg-type]
    for n in range(1, saves + 1):
        store.save({"narrative": f"step {n}"})
    return folder


def _record(folder: Path) -> RetentionRecord:
    record = read_record(HandoffStore(folder).layout)
    assert record is not None
    return record


def test_a_signed_store_that_prunes_writes_a_signed_record_and_verify_calls_the_gap_pruned(
    tmp_path: Path, alice: SigningKey
) -> None:
    folder = _thread(tmp_path, alice)
    record = _record(folder)
    assert (record.thread_id, record.keep, record.kept_from, record.generation) == ("t", 5, 2, 6)
    assert record.signature is not None
    checked = verify_thread(folder)
    assert checked.ok, checked.problems
    assert checked.pinned is not None
    assert checked.retention is not None
    assert checked.retention.startswith("generations 1 to 10 pruned (retention.json: keep 5")
    assert f"signed by {ALICE}" in checked.retention


def test_the_record_is_written_once_not_at_every_save_and_again_when_keep_changes(
    tmp_path: Path, alice: SigningKey
) -> None:
    folder = _thread(tmp_path, alice, saves=7)
    first = (folder / RETENTION_NAME).stat()
    store = HandoffStore(folder, signing_key=alice, keep=5)
    for n in range(5):
        store.save({"narrative": f"more {n}"})
    after = (folder / RETENTION_NAME).stat()
    assert (after.st_ino, after.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    HandoffStore(folder, signing_key=alice, keep=3).save({"narrative": "keep three"})
    assert (_record(folder).keep, _record(folder).kept_from, _record(folder).generation) == (3, 11, 13)
    assert verify_thread(folder).ok


def test_a_kept_generation_deleted_is_loss_not_pruning(tmp_path: Path, alice: SigningKey) -> None:
    folder = _thread(tmp_path, alice)
    (folder / "history" / "00000011.json").unlink()  # the oldest kept of 11 to 15
    checked = verify_thread(folder)
    assert not checked.ok
    assert any(
        p.startswith("generation 11 missing below the oldest kept, though the retention record (keep 5)")
        and "lost" in p
        for p in checked.problems
    ), checked.problems
    assert checked.retention is not None
    assert checked.retention.startswith("generations 1 to 10 pruned")


def test_on_a_pinned_thread_a_gap_without_a_trusted_record_is_a_problem(tmp_path: Path, alice: SigningKey) -> None:
    folder = _thread(tmp_path, alice)
    (folder / RETENTION_NAME).unlink()
    checked = verify_thread(folder)
    assert "generations 1 to 10 not kept, and no retention record says they were pruned (lost or removed?)" in (
        checked.problems
    )
    # signed by a key allowed_signers does not trust: no better
    mallory = create_key(tmp_path / "mallory")
    shutil.rmtree(tmp_path / "other", ignore_errors=True)
    HandoffStore(folder, signing_key=mallory, keep=4).save({"narrative": "mallory prunes"})
    record = _record(folder)
    assert record.signature is not None
    assert record.keep == 4
    problems = verify_thread(folder).problems
    assert any("the retention record is not trusted" in p for p in problems), problems


def test_an_edited_record_does_not_verify(tmp_path: Path, alice: SigningKey) -> None:
    folder = _thread(tmp_path, alice)
    path = folder / RETENTION_NAME
    document = json.loads(path.read_text(encoding="utf-8"))
    document["kept_from"] = 14  # hide a removal of 11 to 13
    path.write_text(json.dumps(document), encoding="utf-8")
    for name in ("00000011.json", "00000012.json", "00000013.json"):
        (folder / "history" / name).unlink()
    checked = verify_thread(folder)
    assert any(
        p.startswith("the retention record cannot be used:") and "does not verify" in p for p in checked.problems
    ), checked.problems


def test_a_record_copied_from_another_thread_is_named(tmp_path: Path, alice: SigningKey) -> None:
    folder = _thread(tmp_path, alice)
    other = tmp_path / "other"
    store = HandoffStore(other, signing_key=alice, keep=2)
    for n in range(4):
        store.save({"narrative": f"other {n}"})
    shutil.copyfile(other / RETENTION_NAME, folder / RETENTION_NAME)
    problems = verify_thread(folder).problems
    assert "retention.json is another thread's ('other'; this one is 't')" in problems


def test_an_unsigned_thread_takes_an_unsigned_record_and_without_one_takes_the_gap_as_pruned(tmp_path: Path) -> None:
    folder = _thread(tmp_path, False)
    record = _record(folder)
    assert record.signature is None
    checked = verify_thread(folder)
    assert checked.ok, checked.problems
    assert checked.retention is not None
    assert checked.retention.endswith("; unsigned)")
    (folder / RETENTION_NAME).unlink()
    checked = verify_thread(folder)
    assert checked.ok
    assert checked.retention == "generations 1 to 10 not kept: no retention record, taken as pruned"
    # with --require-signed, the unsigned record explains nothing
    assert not verify_thread(folder, require_signed=True).ok


def test_prune_writes_the_record_before_it_removes(tmp_path: Path, alice: SigningKey) -> None:
    folder = _thread(tmp_path, alice, saves=8, keep=10)
    assert not (folder / RETENTION_NAME).exists()  # nothing pruned yet: no record
    kept, removed = prune_history(HandoffStore(folder, signing_key=alice), 3)
    assert len(kept) == 3
    assert len(removed) == 5
    record = _record(folder)
    assert (record.keep, record.kept_from, record.generation) == (3, 6, 8)
    checked = verify_thread(folder)
    assert checked.ok, checked.problems
    assert checked.retention is not None
    assert checked.retention.startswith("generations 1 to 5 pruned")


def test_a_hostile_record_is_a_problem_never_a_crash(tmp_path: Path, alice: SigningKey) -> None:
    folder = _thread(tmp_path, alice)
    path = folder / RETENTION_NAME
    path.unlink()
    path.write_bytes(b"{" * 100_000)
    problems = verify_thread(folder).problems
    assert any(p.startswith("the retention record cannot be used:") for p in problems), problems
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}", encoding="utf-8")
    problems = verify_thread(folder).problems
    assert any(p.startswith("the retention record cannot be used:") for p in problems), problems


def test_the_cli_shows_the_retention_line_and_json_carries_it(
    tmp_path: Path, alice: SigningKey, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _thread(tmp_path, alice)
    assert main(["verify", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "generations 1 to 10 pruned (retention.json: keep 5" in out
    assert main(["verify", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["retention"].startswith("generations 1 to 10 pruned")


@pytest.mark.parametrize("durability", ["journal", "full"])
def test_the_newest_generations_deleted_are_named_lost_not_the_pruned_ones(tmp_path: Path, durability: str) -> None:
    folder = _thread(tmp_path, False, keep=10, durability=durability)
    for n in range(12, 16):
        (folder / "history" / f"{n:08d}.json").unlink()
    (folder / "handoff.json").unlink()
    checked = verify_thread(folder)
    assert not checked.ok
    if durability == "journal":  # each generation's whole document is in its journal line: not lost
        want = "generation(s) 12 to 15 only in the journal, in no file"
    else:
        want = "generation(s) 12 to 15 missing: the journal or state.json names generation 15"
    assert any(p.startswith(want) for p in checked.problems), checked.problems
    assert not any("2 to 5" in p for p in checked.problems), checked.problems  # pruned, as the record says
    assert checked.retention is not None
    assert checked.retention.startswith("generations 1 to 5 pruned")


def test_a_thread_whose_every_file_is_gone_is_not_ok(tmp_path: Path) -> None:
    folder = _thread(tmp_path, False, durability="full")
    (folder / "handoff.json").unlink()
    shutil.rmtree(folder / "history")
    checked = verify_thread(folder)
    assert not checked.ok
    assert any(p.startswith("generation(s) 1 to 15 missing") for p in checked.problems), checked.problems


def test_a_record_written_anew_after_one_was_removed_never_vouches_for_what_was_gone(
    tmp_path: Path, alice: SigningKey
) -> None:
    folder = _thread(tmp_path, alice)  # keeps 11 to 15
    (folder / RETENTION_NAME).unlink()
    (folder / "history" / "00000011.json").unlink()  # and a kept generation with it
    store = HandoffStore(folder, signing_key=alice, keep=5)
    store.save({"narrative": "16"})  # 12 to 16 kept: nothing to prune
    store.save({"narrative": "17"})  # 12 pruned: a record is written anew
    record = _record(folder)
    assert record.unaccounted_below == 12
    checked = verify_thread(folder)
    assert checked.retention is not None
    assert checked.retention.startswith(
        "generations 1 to 11 gone before the thread's first retention record (pruned by an earlier release, or lost"
    ), checked.retention
    assert "; generation 12 pruned (retention.json: keep 5" in checked.retention
    # the account carries over when the record is rewritten (keep changed)
    HandoffStore(folder, signing_key=alice, keep=3).save({"narrative": "18"})
    assert _record(folder).unaccounted_below == 12
    prune_history(HandoffStore(folder, signing_key=alice), 2)
    assert _record(folder).unaccounted_below == 12


def test_a_record_another_key_wrote_never_carries_its_account_into_this_keys_record(
    tmp_path: Path, alice: SigningKey
) -> None:
    folder = _thread(tmp_path, alice)  # keeps 11 to 15; alice's record accounts for 1 to 10
    mallory = create_key(tmp_path / "mallory")
    (folder / "history" / "00000011.json").unlink()  # removed, then a record of mallory's that says it was pruned
    write_record(HandoffStore(folder).layout, thread_id="t", keep=3, kept_from=12, generation=15, seal="x", key=mallory)
    assert _record(folder).unaccounted_below is None
    HandoffStore(folder, signing_key=alice, keep=2).save({"narrative": "16"})
    record = _record(folder)
    assert record.unaccounted_below == 12  # what was gone when alice's key found mallory's record: unaccounted
    assert record.signed_with(alice)
