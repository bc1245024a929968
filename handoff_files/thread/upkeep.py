"""The doctor's upkeep checks: the modes of the thread's own files, what else its folder holds, and stray temps.

The library changes only what it writes (the layout names it: see :meth:`ThreadDir.entries`). The
thread's folder itself, and anything beside the thread's files (a project's sources, a person's
copy in ``history/``), is reported and never touched: its mode is its owner's choice.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from handoff_files.foundation.commandline import suggest
from handoff_files.thread.findings import Finding, Repairing
from handoff_files.thread.kind import LANGGRAPH, SAVER_FOLDERS, thread_kind
from handoff_files.thread.layout import HISTORY_DIR, ThreadDir, name_some

__all__ = ["check_modes", "check_temps"]

_FILE_MODE = 0o600
_DIR_MODE = 0o700


def check_modes(layout: ThreadDir, findings: list[Finding], repairing: Repairing) -> None:
    """Narrow the thread's own files to 0600 and ``history/`` to 0700; report the folder and other entries.

    :raises HandoffError: if the thread directory or ``history/`` cannot be listed.
    """
    own, others = layout.entries()
    if others and thread_kind(layout) == LANGGRAPH:  # a saver's own folders: its checkup reads them
        others = [path for path in others if not _saver_folder(layout.path, path)]
    _check_folder(layout.path, findings)
    wide: list[tuple[Path, int, int]] = []
    for path in own:
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue  # a writer's temp file or a pruned generation, gone since the listing
        if stat.S_ISLNK(st.st_mode):
            findings.append(Finding("warning", f"{path} is a symbolic link", "the store never follows it"))
            continue
        want = _DIR_MODE if stat.S_ISDIR(st.st_mode) else _FILE_MODE
        mode = stat.S_IMODE(st.st_mode)
        if mode & ~want:
            wide.append((path, mode, want))
    for path, mode, want in wide:
        what = f"{path} is mode {mode:o}, wider than {want:o}"
        if not repairing.writes:
            findings.append(repairing.pending("warning", what, "--repair narrows it"))
            continue
        try:
            path.chmod(mode & want)  # not a symbolic link: checked above, and the doctor holds the lock
        except OSError as exc:
            findings.append(Finding("unwritten", what, f"could not narrow it: {exc.strerror or exc}"))
        else:
            findings.append(Finding("repaired", f"{path} was mode {mode:o}", f"narrowed to {mode & want:o}"))
    if not wide:
        findings.append(Finding("ok", f"the thread's files are 0600 and {HISTORY_DIR}/ 0700 (or narrower)"))
    if others:
        names = [os.fspath(path.relative_to(layout.path)) + _link_note(path) for path in others]
        count = f"{len(names)} other entr{'y' if len(names) == 1 else 'ies'}"
        what = f"{count} beside the thread's files: {name_some(names)}"
        findings.append(Finding("ok", what, "not the thread's: the doctor never changes them"))


def _saver_folder(thread: Path, path: Path) -> bool:
    """Whether *path* is one of a LangGraph saver's folders in its thread (a real folder, not a link)."""
    return path.parent == thread and path.name in SAVER_FOLDERS and path.is_dir() and not path.is_symlink()


def _link_note(path: Path) -> str:
    """What to add to the name of a symbolic link (never followed: its target is not looked at)."""
    return " (a symbolic link)" if path.is_symlink() else ""


def _check_folder(folder: Path, findings: list[Finding]) -> None:
    """The thread's folder: reported when wider than 0700, never changed (the library may not have made it)."""
    try:
        mode = stat.S_IMODE(folder.lstat().st_mode)
    except OSError:
        return  # gone or unreadable since it was listed: the listing's own error says so
    if mode & ~_DIR_MODE:
        advice = (
            "the doctor never changes the folder itself (a project's folder keeps its owner's mode); "
            f"the thread's files in it are private; {suggest('chmod', '700', folder)} hides their names too"
        )
        findings.append(Finding("warning", f"{folder} is mode {mode:o}, wider than 700", advice))


def check_temps(layout: ThreadDir, findings: list[Finding], repairing: Repairing) -> None:
    """Remove the temp files a dead writer left (call under the writers' lock when repairing)."""
    temps = layout.stray_temps()
    if not temps:
        return
    what = f"temp files a crashed writer left: {', '.join(p.name for p in temps)}"
    if not repairing.writes:
        findings.append(repairing.pending("warning", what, "the next open removes them"))
        return
    try:
        layout.remove_stray_temps()  # under the lock: no live writer owns them
    except OSError as exc:
        findings.append(Finding("unwritten", what, f"could not remove them: {exc.strerror or exc}"))
    else:
        findings.append(Finding("repaired", what, "removed them"))
