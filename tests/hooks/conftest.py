"""Fixtures for the hooks: a project folder that is a git repository, and its default thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hooks.helpers import git


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with one committed file: the project the agent works in (its thread goes under it)."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / "app.py").write_text("print('hello')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "start")
    return root


@pytest.fixture
def thread(project: Path) -> Path:
    """The thread the hooks use in *project* when no --thread is given."""
    return project / ".handoff" / "main"
