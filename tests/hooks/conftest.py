"""Fixtures for the hooks: a git repository, the same set up as ``handoff install`` sets it up, its default thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hooks.helpers import git


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A git repository with one committed file, not set up for the hooks (no ``.handoff`` folder)."""
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / "app.py").write_text("print('hello')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "start")
    return root


@pytest.fixture
def project(repository: Path) -> Path:
    """*repository* set up as ``handoff install`` sets it up (a private ``.handoff`` folder): the project the
    agent works in. The hooks find it by that folder and make its thread there; nowhere else."""
    (repository / ".handoff").mkdir(mode=0o700)
    return repository


@pytest.fixture
def thread(project: Path) -> Path:
    """The thread the hooks use in *project* when no --thread is given."""
    return project / ".handoff" / "main"
