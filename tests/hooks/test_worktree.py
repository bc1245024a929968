"""The working tree's digest: it changes with the project's files, not with the thread's, and is absent without git."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_files.hooks.worktree import worktree_digest


def test_the_digest_is_stable_until_a_file_changes(project: Path, thread: Path) -> None:
    first = worktree_digest(project, exclude=thread)
    assert first is not None
    assert worktree_digest(project / ".", exclude=thread) == first
    (project / "draft.md").write_text("untracked")
    second = worktree_digest(project, exclude=thread)
    assert second not in (None, first)
    (project / "draft.md").unlink()
    assert worktree_digest(project, exclude=thread) == first


def test_files_under_the_thread_are_left_out(project: Path, thread: Path) -> None:
    first = worktree_digest(project, exclude=thread)
    thread.mkdir(parents=True)
    (thread / "journal.jsonl").write_text("{}\n")
    assert worktree_digest(project, exclude=thread) == first
    assert worktree_digest(project, exclude=project / "elsewhere") != first


def test_no_repository_or_no_git_gives_no_digest(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert worktree_digest(tmp_path, exclude=tmp_path / ".handoff") is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert worktree_digest(project, exclude=project / ".handoff") is None


def test_a_directory_git_cannot_be_given_gives_no_digest(tmp_path: Path) -> None:
    """A NUL byte cannot be passed to git (subprocess raises ValueError): no digest, no exception."""
    assert worktree_digest(Path(f"{tmp_path}/a\0b"), exclude=tmp_path / ".handoff") is None
