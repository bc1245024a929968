"""restore_or_reason: a fresh thread starts empty; a thread with anything to lose never does."""

from __future__ import annotations

from pathlib import Path

from handoff_files import HandoffStore
from handoff_files.run.restart import Unrestorable, restore_or_reason


def test_a_thread_that_does_not_exist_yet_is_a_fresh_start(thread_dir: Path) -> None:
    assert restore_or_reason(thread_dir) is None


def test_a_thread_with_only_empty_folders_is_a_fresh_start(thread_dir: Path) -> None:
    (thread_dir / "history").mkdir(parents=True)
    (thread_dir / "history" / ".00000001.json.abcd1234.tmp").write_bytes(b"{")  # a dead writer's temp file
    assert restore_or_reason(thread_dir) is None


def test_a_saved_thread_restores(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save({"narrative": "one"})
    restored = restore_or_reason(thread_dir)
    assert restored is not None
    assert not isinstance(restored, Unrestorable)
    assert restored.generation == 1


def test_a_thread_whose_only_remnant_is_a_displaced_primary_is_never_taken_as_new(thread_dir: Path) -> None:
    """A damaged primary set aside in history/ is something to lose: the agent is not started empty."""
    (thread_dir / "history").mkdir(parents=True)
    (thread_dir / "history" / "displaced-20261123T191803123456Z.json").write_bytes(b"{ damaged")
    reason = restore_or_reason(thread_dir)
    assert isinstance(reason, Unrestorable)
    assert reason.lost
    assert str(reason).startswith("not starting the agent without its context")
