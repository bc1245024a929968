"""Where a project's thread lives when no ``--thread`` is given: ``<project>/.handoff/main``.

The project is found from the event's working directory, as git finds its repository: the
nearest folder, from that directory upwards, that holds a ``.handoff`` folder or is the top of a
git repository (holds ``.git``); else the directory itself. The search never climbs out of a
repository nor above the user's home. So a hook fired while the agent works in a subfolder still
finds the thread at the top of the project, and a project without a repository keeps its thread
where the agent started. A folder that cannot be looked at (a name too long, no permission) holds
neither: the search goes on upwards, as git's does.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_THREAD", "HANDOFF_DIR", "default_thread", "project_of"]

#: The folder under a project that holds its handoff threads.
HANDOFF_DIR: Final = ".handoff"
#: A project's thread, relative to the project (the folder is named as a thread id must be).
DEFAULT_THREAD: Final = Path(HANDOFF_DIR, "main")


def project_of(cwd: Path) -> Path:
    """The project *cwd* is in: the nearest folder upwards with ``.handoff`` or ``.git``, else *cwd*."""
    start = cwd.absolute()
    home = Path.home()
    for folder in (start, *start.parents):
        marker = _mode(folder / HANDOFF_DIR)
        if (marker is not None and stat.S_ISDIR(marker)) or _mode(folder / ".git") is not None:
            return folder
        if folder == home:
            break
    return start


def _mode(path: Path) -> int | None:
    """*path*'s ``st_mode``; None if it cannot be looked at (absent, a name too long, no permission).

    Path.is_dir() and .exists() raise some of these on Python 3.11 (ENAMETOOLONG, EACCES): a hook
    must answer, not fail, wherever the agent happens to be.
    """
    try:
        return path.stat().st_mode
    except OSError:
        return None


def default_thread(cwd: Path) -> Path:
    """The thread a hook uses when none is named: :data:`DEFAULT_THREAD` in :func:`project_of` *cwd*."""
    return project_of(cwd) / DEFAULT_THREAD
