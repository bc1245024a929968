"""A generation copied in from another thread of the same id, one past the primary, is a fork: never restored."""

from __future__ import annotations

import shutil
from pathlib import Path

from handoff_files import HandoffStore


def test_a_copy_one_past_the_primary_that_does_not_follow_it_is_passed_over(tmp_path: Path) -> None:
    ours = tmp_path / "a" / "t"
    HandoffStore(ours).save({"narrative": "ours 1"})
    theirs = tmp_path / "b" / "t"  # the same folder name: the same thread id, agent id and numbers
    store = HandoffStore(theirs)
    store.save({"narrative": "theirs 1"})
    store.save({"narrative": "theirs 2"})
    shutil.copyfile(theirs / "history" / "00000002.json", ours / "history" / "00000002.json")
    restored = HandoffStore(ours).restore()
    assert (restored.handoff.narrative, restored.source) == ("ours 1", "primary")
    assert any("history/00000002.json does not follow handoff.json's generation 1" in p for p in restored.problems)
    assert not any("a save was interrupted" in p for p in restored.problems)


def test_a_save_interrupted_after_its_commit_still_restores_its_generation(tmp_path: Path) -> None:
    """The legitimate case the check must keep: history/ one past the primary, and following it."""
    folder = tmp_path / "t"
    store = HandoffStore(folder, durability="full")
    store.save({"narrative": "one"})
    primary = (folder / "handoff.json").read_bytes()
    store.save({"narrative": "two"})
    (folder / "handoff.json").write_bytes(primary)  # as if killed after history/ and before the primary
    restored = HandoffStore(folder).restore()
    assert (restored.handoff.narrative, restored.source) == ("two", "history")
