"""The working tree's state: a digest that changes when files of the project change (git only).

The ``Stop`` hook asks "has this session changed files?". No agent's hook event says so, and a
transcript's format is not documented, so the hooks look at the project instead: at a session's
start they record a digest of git's view of the working tree (the commit checked out, then each
changed, added, deleted or untracked file with its size and modification time); at a stop they
compute it again. A different digest means files changed since the session began (by the agent,
or by a person beside it). The thread's own folder is left out, since the hooks write there.
Outside a git repository, or without git, there is no digest and only the session's length counts.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Final

__all__ = ["git_ignores", "worktree_digest"]

#: Seconds one git command may take before the digest is given up (a hook must answer quickly).
GIT_TIMEOUT: Final = 10.0


def _git(directory: Path, *args: str) -> bytes | None:
    """Run git in *directory*; its stdout, or None when git is missing, fails, takes too long or
    cannot be given the directory (a NUL byte in it: ValueError)."""
    try:
        done = subprocess.run(
            ["git", "-C", os.fspath(directory), *args],  # noqa: S607 -- git from PATH, as the agent runs it
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def worktree_digest(directory: Path, *, exclude: Path) -> str | None:
    """A sha256 of git's view of the working tree around *directory*, or None outside a repository.

    :param directory: a folder inside the repository (the event's working directory).
    :param exclude: a folder whose files do not count (the thread directory the hooks write to).
    """
    top = _git(directory, "rev-parse", "--show-toplevel")
    status = _git(directory, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    if top is None or status is None:
        return None
    root = Path(os.fsdecode(top.strip()))
    skip = exclude.resolve()
    digest = hashlib.sha256()
    digest.update(_git(directory, "rev-parse", "--verify", "-q", "HEAD") or b"(no commit yet)")
    for entry in sorted(status.split(b"\0")):
        if len(entry) < 4:  # the empty string after the last NUL
            continue
        path = root / os.fsdecode(entry[3:])
        if path == skip or skip in path.parents:
            continue
        try:
            st = path.lstat()
            seen = f"{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            seen = "gone"
        digest.update(entry + b"\0" + seen.encode() + b"\0")
    return digest.hexdigest()


def git_ignores(directory: Path, relative: str) -> bool | None:
    """Whether git ignores *relative* in the repository holding *directory*; None outside one (or without git)."""
    if _git(directory, "rev-parse", "--is-inside-work-tree") is None:
        return None
    try:
        done = subprocess.run(
            ["git", "-C", os.fspath(directory), "check-ignore", "-q", "--", relative],  # noqa: S607 -- git from PATH
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(done.returncode)  # 128: git could not tell
