"""The thread directory's layout: the one place that knows which file is where, and which generations exist."""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Final

from handoff_files.format.codec import Format
from handoff_files.foundation.atomic import fsync_dir, is_real_dir, lexists, remove_stray_temps, stray_temps
from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError, HandoffWriteError
from handoff_files.foundation.lock import LOCK_NAME, try_writer_lock
from handoff_files.foundation.lockfile import RUN_LOCK_NAME
from handoff_files.foundation.names import check_folder_path, generation_from_stem, generation_stem

__all__ = [
    "EXTENSIONS",
    "HISTORY_DIR",
    "JOURNAL_NAME",
    "MIRROR_NAME",
    "PREVIOUS_JOURNAL_NAME",
    "PRIMARY_NAMES",
    "PRIMARY_STEM",
    "RETENTION_NAME",
    "TRANSFERRED_NAME",
    "ThreadDir",
    "ThreadFolder",
    "format_of",
    "generation_of",
]

HISTORY_DIR: Final = "history"
PRIMARY_STEM: Final = "handoff"
#: The primary's file name ending for each format.
EXTENSIONS: Final[dict[Format, str]] = {"json": ".json", "yaml": ".yaml"}
#: Both names a primary may have (a thread holds at most one of them).
PRIMARY_NAMES: Final = frozenset(f"{PRIMARY_STEM}{ext}" for ext in EXTENSIONS.values())
#: The secondary channel: the state layer and running totals of the generation it mirrors.
MIRROR_NAME: Final = "state.json"
#: The tertiary channel, and the name its older lines move to when it rotates.
JOURNAL_NAME: Final = "journal.jsonl"
PREVIOUS_JOURNAL_NAME: Final = "journal.1.jsonl"
#: Written by a transfer's last phase: the thread was handed to another and is closed.
TRANSFERRED_NAME: Final = "transferred.json"
#: What the writers removed from history/ on purpose (thread/retained.py): pruning told from loss.
RETENTION_NAME: Final = "retention.json"

# a sealed generation's file in history/: its stem is exactly foundation.names.generation_stem's
_GENERATION_ENDINGS: Final = tuple(EXTENSIONS.values())
# the files the library writes in the thread directory (temp files aside: foundation/atomic.py names those)
_OWN_NAMES: Final = PRIMARY_NAMES | {
    MIRROR_NAME,
    JOURNAL_NAME,
    PREVIOUS_JOURNAL_NAME,
    TRANSFERRED_NAME,
    RETENTION_NAME,
    LOCK_NAME,
    RUN_LOCK_NAME,
}
# damaged journal lines the doctor set aside: journal.damaged-<stamp>.jsonl, journal.1.damaged-<stamp>.jsonl
_SET_ASIDE: Final = re.compile(r"journal(?:\.1)?\.damaged-\d{8}T\d{12}Z\.jsonl\Z")
# a file kept in history/ by kept_copy(): displaced-…, displaced-doctor-…, damaged-…, legacy-…, legacy-1.0-…
_KEPT: Final = re.compile(r"(?:displaced|damaged|legacy)(?:-[A-Za-z0-9.]+)?-\d{8}T\d{12}Z[.-]")
# how many other entries a note names before it counts the rest
_NAMED: Final = 5


@dataclass(frozen=True)
class ThreadFolder:
    """The thread directory :meth:`ThreadDir.create` made ready: whether it made it, its mode, and what else it holds.

    The library never changes the mode of a folder it did not create: an existing folder keeps
    its own, and :attr:`note` says so when it is wider than 0700 (the thread's own files are
    0600 and ``history/`` 0700 whatever the folder's mode).
    """

    path: Path
    created: bool  # False: the folder was there already
    mode: int  # its permission bits, as they are now

    @cached_property
    def others(self) -> tuple[str, ...]:
        """The entries in it that are not the thread's own (a project's, a person's); listed when first asked.

        :raises HandoffError: if the folder cannot be listed.
        """
        return tuple(path.name for path in ThreadDir(self.path).entries()[1] if path.parent == self.path)

    @cached_property
    def note(self) -> str:
        """What a person should know about the folder ("" when it is the private folder a thread expects)."""
        parts = []
        if self.mode & ~0o700:
            parts.append(
                f"the folder existed and keeps its mode {self.mode:04o}: handoff never changes a folder it did "
                f"not create; the thread's own files are private (0600, history/ 0700), and "
                f"{suggest('chmod', '700', self.path)} hides their names too"
            )
        if not self.created and self.others:
            parts.append(f"it holds other entries ({name_some(self.others)}): handoff never changes them")
        return "; ".join(parts)


def name_some(names: tuple[str, ...] | list[str]) -> str:
    """The first few *names*, and how many more (a project folder may hold thousands)."""
    shown = ", ".join(names[:_NAMED])
    return shown if len(names) <= _NAMED else f"{shown} and {len(names) - _NAMED} more"


def generation_of(name: str) -> int | None:
    """The generation a ``history/`` file name holds (``00000007.json`` → 7), or None for any other name."""
    stem, dot, ending = name.rpartition(".")
    if not dot or f".{ending}" not in _GENERATION_ENDINGS:
        return None
    return generation_from_stem(stem)


def _own_name(name: str) -> bool:
    return name in _OWN_NAMES or name == HISTORY_DIR or _SET_ASIDE.match(name) is not None


def _own_in_history(name: str) -> bool:
    return generation_of(name) is not None or _KEPT.match(name) is not None


def format_of(path: Path) -> Format:
    """The format a handoff file's name says (``.json`` or ``.yaml``)."""
    return next((fmt for fmt, ending in EXTENSIONS.items() if ending == path.suffix), "json")


class ThreadDir:
    """The paths of one thread directory, and the listings every part of the package asks of it.

    Nothing here reads a handoff or takes the lock: this knows names, not content. The paths are
    worked out once (a save asks for them a dozen times).

    :param path: the thread directory (it need not exist yet).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        check_folder_path(path, "a thread folder")
        self.path = Path(path).absolute()

    def __repr__(self) -> str:
        return f"ThreadDir({str(self.path)!r})"

    # -- paths -------------------------------------------------------------------------------

    def primary(self, fmt: Format) -> Path:
        """The primary file in *fmt*: the latest sealed handoff."""
        return self.path / f"{PRIMARY_STEM}{EXTENSIONS[fmt]}"

    @cached_property
    def history_dir(self) -> Path:
        """``history/``: the last sealed generations, immutable."""
        return self.path / HISTORY_DIR

    @cached_property
    def mirror(self) -> Path:
        """``state.json``."""
        return self.path / MIRROR_NAME

    @cached_property
    def journal(self) -> Path:
        """``journal.jsonl``."""
        return self.path / JOURNAL_NAME

    @cached_property
    def previous_journal(self) -> Path:
        """``journal.1.jsonl``: the journal's older lines after a rotation."""
        return self.path / PREVIOUS_JOURNAL_NAME

    @cached_property
    def transferred(self) -> Path:
        """``transferred.json``: present once the thread was handed on and closed."""
        return self.path / TRANSFERRED_NAME

    def generation_file(self, generation: int, fmt: Format) -> Path:
        """Where generation *generation* is kept in ``history/``."""
        return self.history_dir / f"{generation_stem(generation)}{EXTENSIONS[fmt]}"

    def kept_copy(self, label: str, stamp: str, ending: str) -> Path:
        """Where a file set aside is kept in ``history/``: ``{label}-{stamp}{ending}``.

        A displaced primary (``displaced-…``), an older-version original (``legacy-…``): such
        names never read as a generation, so listings and pruning pass them by.

        :param label: what the copy is (``"displaced"``, ``"legacy-1.0"`` …).
        :param stamp: when it was set aside (:func:`handoff_files.foundation.clock.file_stamp`).
        :param ending: the rest of the name: a suffix (``".json"``) or ``"-"`` and the original name.
        :returns: the path in ``history/``.
        """
        return self.history_dir / f"{label}-{stamp}{ending}"

    # -- listings ----------------------------------------------------------------------------

    def primary_formats(self) -> list[Format]:
        """The formats of the primaries present (more than one is a thread a person must untangle).

        :raises HandoffError: if the directory cannot be searched.
        """
        try:
            return [fmt for fmt in EXTENSIONS if self.primary(fmt).exists()]
        except OSError as exc:  # a name too long, a directory we may not search …
            msg = f"cannot look into the thread directory: {exc.strerror or exc}"
            raise HandoffError(self.path, msg) from exc

    def generations(self) -> list[tuple[int, str]]:
        """The generation files in ``history/`` as (generation, file name), newest first.

        :raises HandoffError: if ``history/`` exists but cannot be listed.
        """
        try:
            names = os.listdir(self.history_dir)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            msg = f"cannot list history/: {exc.strerror or exc}"
            raise HandoffError(self.history_dir, msg) from exc
        # plain string work: this runs on every save, and Path objects cost more than the listdir
        # only exactly well-formed names: a 20- or 30-digit name, or another width, is never a generation
        found = [(generation, name) for name in names if (generation := generation_of(name)) is not None]
        found.sort(reverse=True)
        return found

    def newest_generation(self) -> int:
        """The newest generation in ``history/`` (0 when there is none)."""
        listing = self.generations()
        return listing[0][0] if listing else 0

    def create(self) -> ThreadFolder:
        """Create the thread directory and ``history/`` (mode 0700) durably; a no-op if they exist.

        An existing folder keeps its mode: the library never changes a folder it did not create.

        :returns: whether the thread directory was created, its mode, and what else it holds.
        :raises HandoffWriteError: if they cannot be created.
        :raises HandoffError: if ``history/`` is a symbolic link (never followed out of the thread).
        """
        created = False
        try:
            for directory in (self.path, self.history_dir):
                if directory.is_symlink() and directory == self.history_dir:
                    msg = "history/ is a symbolic link; a thread's files are never written outside it"
                    raise HandoffError(directory, msg)
                if not directory.is_dir():
                    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    created = created or directory == self.path
                    # fsync the parent: a new directory is not durable until its entry is
                    fsync_dir(directory.parent)
            mode = stat.S_IMODE(self.path.stat().st_mode)
        except OSError as exc:
            msg = f"cannot create the thread directory: {exc.strerror or exc}"
            raise HandoffWriteError(self.path, msg) from exc
        return ThreadFolder(self.path, created=created, mode=mode)

    def entries(self) -> tuple[list[Path], list[Path]]:
        """The thread's own entries, and every other one, in the directory and in ``history/`` (not below).

        Its own: the primary, ``state.json``, the journals and the lines the doctor set aside,
        ``transferred.json``, ``.lock``, ``.run.lock``, ``history/`` and the generations and kept
        copies in it, and temp files. Anything else (a project's files, a person's copy in
        ``history/``) is another's: the library never changes it. A ``history/`` that is a symbolic
        link is not looked into.

        :raises HandoffError: if the directory or ``history/`` cannot be listed.
        """
        temps = set(self.stray_temps())
        own: list[Path] = []
        others: list[Path] = []
        folders = [(self.path, _own_name)]
        if not self.history_dir.is_symlink():
            folders.append((self.history_dir, _own_in_history))
        for folder, mine in folders:
            try:
                names = sorted(os.listdir(folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                msg = f"cannot list it: {exc.strerror or exc}"
                raise HandoffError(folder, msg) from exc
            for name in names:
                path = folder / name
                (own if mine(name) or path in temps else others).append(path)
        return own, others

    def threads_inside(self) -> list[str]:
        """The folders in this one that are threads (a root of threads, a saver's root), sorted. Reads only.

        For errors about a folder that is not itself a thread: never raises (an unreadable folder has none).
        """
        try:
            entries = list(os.scandir(self.path))
        except OSError:
            return []
        found = []
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    inside = ThreadDir(entry.path)
                    if is_real_dir(inside.history_dir) or lexists(inside.journal):
                        found.append(entry.name)
        return sorted(found)

    def not_a_thread(self) -> str:
        """What to say of this folder when it is a folder of threads, not one ("" when it holds none)."""
        inside = self.threads_inside()
        if not inside:
            return ""
        return (
            f"a folder of threads ({name_some(inside)}), not a thread: name one, "
            f"as in {suggest('handoff', 'show', self.path / inside[0])}"
        )

    def holdings(self) -> list[str]:
        """The names of this directory's handoff files and channels (empty for a new thread).

        :raises HandoffError: if the directory cannot be listed (an unreadable thread is never taken as empty).
        """
        try:
            names = set(os.listdir(self.path))
        except FileNotFoundError:
            return []
        except OSError as exc:
            msg = f"cannot list the thread directory: {exc.strerror or exc}"
            raise HandoffError(self.path, msg) from exc
        channels = PRIMARY_NAMES | {MIRROR_NAME, JOURNAL_NAME, PREVIOUS_JOURNAL_NAME}
        found = sorted(names & channels)
        found += [f"{HISTORY_DIR}/{name}" for _, name in self.generations()]
        return found

    def holds_anything(self) -> bool:
        """Whether a writer ever left something here: a channel, a generation, or another file kept in ``history/``.

        Wider than :meth:`holdings`: a ``displaced-…`` or ``legacy-…`` copy counts too (temp files do
        not), so a thread whose only remnant is a damaged primary set aside is never taken as new.

        :raises HandoffError: if the directory cannot be listed.
        """
        if self.holdings():
            return True
        try:
            names = os.listdir(self.history_dir)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            msg = f"cannot list history/: {exc.strerror or exc}"
            raise HandoffError(self.history_dir, msg) from exc
        return any(not name.startswith(".") for name in names)

    def stray_temps(self) -> list[Path]:
        """Temp files a dead writer left, in the directory and in ``history/``."""
        return stray_temps(self.path) + stray_temps(self.history_dir)

    def sweep_temps(self) -> bool:
        """Remove the temp files dead writers left, unless a writer holds the lock; True if some are left.

        A live writer's temp file exists only while it holds the lock: with the lock free, every temp
        file is a dead writer's; with it held, they are left for the next save (readers never wait).
        A folder that refuses their removal (read-only) keeps them: opening a thread never fails for it.
        """
        if not self.stray_temps():
            return False
        with try_writer_lock(self.path) as free:
            if free:
                try:
                    self.remove_stray_temps()
                except OSError:
                    return True  # `handoff doctor` says why they stay
        return not free

    def remove_stray_temps(self) -> list[Path]:
        """Remove what :meth:`stray_temps` finds; call only while holding the writers' lock. Writes."""
        return remove_stray_temps(self.path) + remove_stray_temps(self.history_dir)
