"""Where a project's thread lives when no ``--thread`` is given: ``<project>/.handoff/main``.

A project is a folder that ``handoff install`` set up: it holds a ``.handoff`` folder. The project
is found from the event's working directory, as git finds its repository: the nearest folder,
from that directory upwards, holding ``.handoff``. The search never climbs out of a repository
(it stops at the folder holding ``.git``) nor above the user's home. When it finds none there is
no project, and the hooks make nothing: an event's working directory (one that does not exist, the
system's temp folder, a repository nobody set up) never gets a folder of the hooks' making. So a
hook fired while the agent works in a subfolder still finds the thread at the top of the project,
and a project inside a larger repository (a monorepo's package) is found as itself. A folder that
cannot be looked at (a name too long, no permission) holds neither marker: the search goes on
upwards, as git's does.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_THREAD", "HANDOFF_DIR", "default_thread", "project_of", "project_to_set_up"]

#: The folder under a project that holds its handoff threads.
HANDOFF_DIR: Final = ".handoff"
#: A project's thread, relative to the project (the folder is named as a thread id must be).
DEFAULT_THREAD: Final = Path(HANDOFF_DIR, "main")


def project_of(cwd: Path) -> Path | None:
    """The project *cwd* is in: the nearest folder upwards holding ``.handoff``, not above the top of
    *cwd*'s repository nor above the user's home; None when there is none (the project is not set up)."""
    start = cwd.absolute()
    home = Path.home()
    for folder in (start, *start.parents):
        marker = _mode(folder / HANDOFF_DIR)
        if marker is not None and stat.S_ISDIR(marker):
            return folder
        if _mode(folder / ".git") is not None or folder == home:
            return None
    return None


def _mode(path: Path) -> int | None:
    """*path*'s ``st_mode``; None if it cannot be looked at (absent, a name too long, no permission).

    Path.is_dir() and .exists() raise some of these on Python 3.11 (ENAMETOOLONG, EACCES): a hook
    must answer, not fail, wherever the agent happens to be.
    """
    try:
        return path.stat().st_mode
    except OSError:
        return None


def default_thread(cwd: Path) -> Path | None:
    """The thread a hook uses when none is named: :data:`DEFAULT_THREAD` in :func:`project_of` *cwd*;
    None when *cwd* is in no project that ``handoff install`` set up."""
    project = project_of(cwd)
    return None if project is None else project / DEFAULT_THREAD


def project_to_set_up(cwd: Path) -> Path:
    """The project ``handoff install`` sets up when none is named: :func:`project_of` *cwd* if one is
    set up already, else the top of *cwd*'s repository (the nearest folder up holding ``.git``, not
    above the user's home), else *cwd* itself. So an install from a subfolder is not a nested project.
    """
    start = cwd.absolute()
    found = project_of(start)
    if found is not None:
        return found
    home = Path.home()
    for folder in (start, *start.parents):
        if _mode(folder / ".git") is not None:
            return folder
        if folder == home:
            break
    return start
