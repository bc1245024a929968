"""The store: one thread directory of sealed handoff generations, written durably under a lock."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from handoff_files import seal as sealing
from handoff_files.atomic import fsync_dir, read_bytes, remove_stray_temps, stray_temps, write_durable
from handoff_files.codec import MAX_FILE_BYTES, Format, render
from handoff_files.content import ENVELOPE, dump_layers, layers_of
from handoff_files.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    HandoffWriteError,
    NoHandoffError,
    UnsealedEditError,
)
from handoff_files.loader import decode, load
from handoff_files.lock import DEFAULT_LOCK_TIMEOUT, WriterLock, try_writer_lock
from handoff_files.model import MAX_INT, SCHEMA_VERSION, Handoff, HandoffContent
from handoff_files.names import check_id
from handoff_files.results import HistoryEntry, MigrationReport, Restored, SaveReceipt

__all__ = ["DEFAULT_KEEP", "HISTORY_DIR", "HandoffStore"]

HISTORY_DIR: Final = "history"
PRIMARY_STEM: Final = "handoff"
#: Generations kept in ``history/``, the current one included.
DEFAULT_KEEP: Final = 10

_EXTENSIONS: Final[dict[Format, str]] = {"json": ".json", "yaml": ".yaml"}
_GENERATION_FILE: Final = re.compile(r"\d{8,}\.(?:json|yaml)\Z")
_GENERATION_TEXT: Final = re.compile(rb'generation"?\s*:\s*(\d{1,19})')

# the order a person reads a handoff in: envelope, then story, dangers, next steps, facts, reasons
_ORDER: Final = (*ENVELOPE, "narrative", "warnings", "priorities", "state", "decisions", "context")


@dataclass(frozen=True, slots=True)
class _Scan:
    """The newest verified generation of a thread, and what was seen on the way."""

    newest: Restored | None
    highest: int  # highest generation number seen anywhere, verified or not
    primary: Literal["ok", "missing", "bad", "legacy"]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Head:
    """What the next save chains from."""

    generation: int  # highest generation seen anywhere (0 for a new thread)
    parent: str | None  # seal of the newest verified generation
    agent_id: str | None
    thread_id: str | None
    primary: Literal["ok", "missing", "bad", "legacy"]


class HandoffStore:
    """A thread directory of sealed handoffs.

    :param path: the thread directory (created on first save).
    :param format: ``"json"`` or ``"yaml"`` for the primary; default: the existing primary's, else JSON.
    :param keep: how many generations ``history/`` keeps, the current one included (at least 1).
    :param agent_id: default: the previous generation's, else the directory name.
    :param thread_id: default: the previous generation's, else the directory name.
    :param algorithm: the seal's digest (see :data:`handoff_files.seal.DEFAULT_ALGORITHM`).
    :param lock_timeout: seconds to wait for another writer.
    :raises InvalidNameError: if an id (given or taken from the directory name) is invalid.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,  # noqa: A002 -- the documented keyword
        keep: int = DEFAULT_KEEP,
        agent_id: str | None = None,
        thread_id: str | None = None,
        algorithm: sealing.Algorithm = sealing.DEFAULT_ALGORITHM,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.path = Path(path).absolute()
        if keep < 1:
            msg = f"keep must be 1 or more (history/ holds the current generation too), not {keep}"
            raise HandoffValidationError(self.path, msg)
        if algorithm not in sealing.ALGORITHMS:
            msg = f"unknown seal algorithm {algorithm!r}; use one of {', '.join(sealing.ALGORITHMS)}"
            raise HandoffValidationError(self.path, msg)
        self.keep = keep
        self.algorithm = algorithm
        self.lock_timeout = lock_timeout
        self._agent_id = None if agent_id is None else check_id(agent_id, "agent_id", self.path)
        self._thread_id = None if thread_id is None else check_id(thread_id, "thread_id", self.path)
        if thread_id is None or agent_id is None:
            check_id(self.path.name, "thread directory name", self.path)
        self.format: Format = self._choose_format(format)
        self._lock = WriterLock(self.path, timeout=lock_timeout)
        self._cache: tuple[tuple[int, int, int, int], _Head] | None = None
        self._temps_left = False
        if stray_temps(self.path) or stray_temps(self.history_dir):
            # a live writer's temp file exists only while it holds the lock: with the lock free,
            # every temp file is a dead writer's; with it held, leave them for our first save
            # (readers never wait for writers)
            with try_writer_lock(self.path) as free:
                if free:
                    self._remove_stray_temps()
                else:
                    self._temps_left = True

    def _remove_stray_temps(self) -> None:
        remove_stray_temps(self.path)
        remove_stray_temps(self.history_dir)

    # -- paths -------------------------------------------------------------------------------

    @property
    def primary(self) -> Path:
        """The primary file: the latest sealed handoff."""
        return self.path / f"{PRIMARY_STEM}{_EXTENSIONS[self.format]}"

    @property
    def history_dir(self) -> Path:
        """The folder of the last ``keep`` sealed generations, the current one included."""
        return self.path / HISTORY_DIR

    def _choose_format(self, wanted: Format | None) -> Format:
        try:
            existing = [fmt for fmt, ext in _EXTENSIONS.items() if (self.path / f"{PRIMARY_STEM}{ext}").exists()]
        except OSError as exc:  # a name too long, a directory we may not search …
            msg = f"cannot look into the thread directory: {exc.strerror or exc}"
            raise HandoffError(self.path, msg) from exc
        if len(existing) > 1:
            msg = "holds both handoff.json and handoff.yaml; move one away so the primary is unambiguous"
            raise HandoffError(self.path, msg)
        if wanted is not None and wanted not in _EXTENSIONS:
            msg = f"format must be 'json' or 'yaml', not {wanted!r}"
            raise HandoffValidationError(self.path, msg)
        if existing and wanted is not None and existing[0] != wanted:
            msg = f"thread's primary is {existing[0].upper()}; open it with format={existing[0]!r}"
            raise HandoffValidationError(self.path, msg)
        return existing[0] if existing else (wanted or "json")

    def init(self) -> None:
        """Create the thread directory and ``history/`` (mode 0700) durably; a no-op if they exist.

        :raises HandoffWriteError: if they cannot be created.
        :raises HandoffError: if ``history/`` is a symbolic link (never followed out of the thread).
        """
        try:
            for directory in (self.path, self.history_dir):
                if directory.is_symlink() and directory == self.history_dir:
                    msg = "history/ is a symbolic link; a thread's files are never written outside it"
                    raise HandoffError(directory, msg)
                if not directory.is_dir():
                    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    # fsync the parent: a new directory is not durable until its entry is
                    fsync_dir(directory.parent)
        except OSError as exc:
            msg = f"cannot create the thread directory: {exc.strerror or exc}"
            raise HandoffWriteError(self.path, msg) from exc

    # -- save --------------------------------------------------------------------------------

    def save(self, content: Handoff | HandoffContent | Mapping[str, Any]) -> SaveReceipt:
        """Seal *content* as the next generation and write it durably.

        :param content: a :class:`Handoff` (its layers are taken, its envelope replaced), a
            :class:`HandoffContent`, or a mapping of the five layers (and optionally ``context``).
        :returns: the receipt, once the file and its directory entries are on disk.
        :raises HandoffValidationError: if the content is not five valid layers.
        :raises HandoffLockedError: if another writer holds the lock past the timeout.
        :raises HandoffWriteError: if the disk refuses; the previous generation stays intact.
        """
        layers = layers_of(content, self.path)
        if not self.history_dir.is_dir() or self.history_dir.is_symlink():
            self.init()
        with self._lock.held():
            if self._temps_left:  # a dead writer's leftovers; under the lock none can be live
                self._remove_stray_temps()
                self._temps_left = False
            listing = self._history_generations()
            return self._save_locked(layers, self._head(listing), listing)

    def update(self, change: Callable[[Restored | None], Handoff | HandoffContent | Mapping[str, Any]]) -> SaveReceipt:
        """Read the newest verified generation and save what *change* makes of it, under one lock.

        No other writer's save can land between the read and the write. *change* gets the
        :class:`Restored` generation, or None for a thread with nothing restorable.

        :raises HandoffError: as :meth:`restore` (other than ``NoHandoffError``) and :meth:`save` do.
        """
        self.init()
        with self._lock.held():  # filelock is reentrant: save() takes it again inside
            try:
                restored: Restored | None = self.restore()
            except NoHandoffError:
                restored = None
            return self.save(change(restored))

    def seal(self) -> SaveReceipt:
        """Accept the primary as edited by a person: re-seal it as the next generation.

        Rewrites files (the edited file is kept in ``history/`` as ``displaced-…``).

        :raises HandoffError: if the primary does not parse or validate, naming why.
        """
        with self._lock.held():
            listing = self._history_generations()
            head = self._head(listing)
            try:
                current = load(self.primary, follow_symlinks=False)
            except UnsealedEditError as exc:
                if exc.handoff is None:  # the loader always attaches it; refuse rather than guess
                    raise
                return self._save_locked(dump_layers(exc.handoff.content()), head, listing)
            if current.seal is None:
                msg = "is an older version, not an edit: `handoff migrate` rewrites it as a sealed 2.0 generation"
                raise HandoffError(self.primary, msg)
            return SaveReceipt(
                current.generation,
                str(current.seal),
                self.primary,
                current.created_at,
                ("already sealed: nothing to do",),
            )

    def migrate(
        self,
        source: str | os.PathLike[str] | None = None,
        *,
        dry_run: bool = False,
        assume_version: str | None = None,
    ) -> MigrationReport:
        """Rewrite an older handoff as the thread's next sealed 2.0 generation.

        Rewrites files (unless *dry_run*): the original bytes are kept in ``history/`` as
        ``legacy-…``, then the migrated content is saved as a save would, with
        ``lineage.migrated_from``. A file that is already 2.0 is left alone.

        :param source: the older file (default: the primary).
        :param assume_version: the version of a file that does not say (see :func:`load`).
        :raises HandoffError: as :func:`load` does for the source, or as :meth:`save` does.
        """
        path = Path(source) if source is not None else self.primary
        data, st = read_bytes(path, MAX_FILE_BYTES)
        handoff = decode(data, path, mtime=st.st_mtime, assume_version=assume_version)
        migrated = handoff.lineage.migrated_from
        if handoff.seal is not None or migrated is None:
            return MigrationReport(path, SCHEMA_VERSION, None, (), None, dry_run)
        lineage = handoff.lineage.model_dump(mode="json")
        if dry_run:
            return MigrationReport(path, migrated.schema_version, handoff, tuple(migrated.notes), None, dry_run)
        layers = dump_layers(handoff.content())
        self.init()
        with self._lock.held():
            listing = self._history_generations()
            head = self._head(listing)
            if path.resolve() != self.primary.resolve():
                # the primary keeps its own bytes (a save keeps a bad or older primary); keep the source's
                stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
                kept = self.history_dir / f"legacy-{migrated.schema_version}-{stamp}-{path.name}"
                write_durable(kept, data)
            generation = max(head.generation, handoff.generation) + 1
            lineage["migrated_from"]["notes"].append(
                f"sealed by `handoff migrate` as generation {generation} of thread "
                f"{self._thread_id or head.thread_id or self.path.name!r}, which gives it its agent and thread ids"
            )
            receipt = self._save_locked(layers, head, listing, lineage=lineage, after=handoff.generation)
        return MigrationReport(path, migrated.schema_version, handoff, tuple(migrated.notes), receipt, dry_run)

    def _save_locked(
        self,
        layers: dict[str, Any],
        head: _Head,
        listing: list[tuple[int, str]],
        *,
        lineage: dict[str, Any] | None = None,
        after: int = 0,
    ) -> SaveReceipt:
        if head.agent_id and self._agent_id and head.agent_id != self._agent_id:
            msg = (
                f"thread belongs to agent {head.agent_id!r}, not {self._agent_id!r}; adopt it into a new thread instead"
            )
            raise HandoffValidationError(self.path, msg)
        generation = max(head.generation, after) + 1
        if generation > MAX_INT:
            msg = f"the next generation would be {generation}, past the 64-bit limit; start a new thread"
            raise HandoffValidationError(self.path, msg)
        created_at = dt.datetime.now(dt.UTC)
        document = {
            "schema_version": SCHEMA_VERSION,
            "agent_id": self._agent_id or head.agent_id or self.path.name,
            "thread_id": self._thread_id or head.thread_id or self.path.name,
            "generation": generation,
            "created_at": created_at.isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "parent": head.parent,
            "lineage": lineage or {"adopted_from": None, "migrated_from": None},
            **layers,
        }
        try:
            checksum = sealing.digest(sealing.canonical(document), self.algorithm)
        except ValueError as exc:
            msg = f"not valid handoff content: {exc}"
            raise HandoffValidationError(self.path, msg) from exc
        document["seal"] = {"algorithm": self.algorithm, "digest": checksum}
        data = render({key: document[key] for key in _ORDER if key in document}, self.format)
        if len(data) > MAX_FILE_BYTES:
            # never acknowledge a generation the loader would refuse to read back
            msg = f"handoff would be {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit; trim context or data"
            raise HandoffValidationError(self.path, msg)
        problems: list[str] = []
        if head.primary in ("bad", "legacy"):
            # a primary that does not verify (a person's edit, or damage) or is an older version:
            # keep its bytes, never overwrite them unseen
            prefix = "displaced" if head.primary == "bad" else "legacy"
            kept = self.history_dir / f"{prefix}-{created_at:%Y%m%dT%H%M%S%fZ}{_EXTENSIONS[self.format]}"
            try:
                os.link(self.primary, kept)
            except OSError as exc:
                msg = f"cannot keep the replaced primary before replacing it: {exc.strerror or exc}"
                raise HandoffWriteError(self.primary, msg) from exc
            why = "did not verify" if head.primary == "bad" else "was an older version"
            problems.append(f"the primary {why}; kept it as {HISTORY_DIR}/{kept.name}")
        # history first: once its copy is durable the generation exists (restore takes the newest
        # verified generation of primary and history); a separate copy, not a hard link, so a
        # person editing the primary in place can never alter the sealed generation
        history_file = self.history_dir / f"{generation:08d}{_EXTENSIONS[self.format]}"
        write_durable(history_file, data)
        write_durable(self.primary, data)
        self._prune([(generation, history_file.name), *listing])
        seal_text = f"{self.algorithm}:{checksum}"
        st = os.lstat(self.primary)
        self._cache = (
            (st.st_ino, st.st_mtime_ns, st.st_size, generation),
            _Head(generation, seal_text, document["agent_id"], document["thread_id"], "ok"),
        )
        return SaveReceipt(generation, seal_text, self.primary, created_at, tuple(problems))

    def _prune(self, listing: list[tuple[int, str]]) -> None:
        """Remove history files past the newest ``keep`` (*listing*: the generation files, newest first)."""
        for _, name in listing[self.keep :]:
            try:
                os.unlink(self.history_dir / name)
            except FileNotFoundError:
                pass
            except OSError:
                break  # pruning is housekeeping: a failure here never fails a durable save

    # -- reading -----------------------------------------------------------------------------

    def _history_generations(self) -> list[tuple[int, str]]:
        """The generation files in ``history/`` as (generation, file name), newest first."""
        try:
            names = os.listdir(self.history_dir)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            msg = f"cannot list history/: {exc.strerror or exc}"
            raise HandoffError(self.history_dir, msg) from exc
        # plain string work: this runs on every save, and Path objects cost more than the listdir
        found = [(int(name[:-5]), name) for name in names if _GENERATION_FILE.match(name)]
        found.sort(reverse=True)
        return found

    def _head(self, listing: list[tuple[int, str]]) -> _Head:
        """Work out the generation and parent the next save chains from (call under the lock).

        The head this store wrote last is reused while the primary is the same file (inode,
        mtime, size) and ``history/`` holds no newer generation; otherwise the disk is scanned.
        """
        if self._cache is not None:
            try:
                st = os.lstat(self.primary)
            except FileNotFoundError:
                pass
            else:
                newest_listed = listing[0][0] if listing else 0
                if self._cache[0] == (st.st_ino, st.st_mtime_ns, st.st_size, newest_listed):
                    return self._cache[1]
        scan = self._scan()
        if scan.newest is None:
            return _Head(scan.highest, None, None, None, scan.primary)
        handoff = scan.newest.handoff
        if handoff.seal is None:  # an older version, migrated in memory: no 2.0 seal to chain to, no ids of its own
            return _Head(scan.highest, None, None, None, scan.primary)
        return _Head(scan.highest, str(handoff.seal), handoff.agent_id, handoff.thread_id, scan.primary)

    def _scan(self) -> _Scan:
        """Find the newest verified generation among the primary and history/, newest first."""
        problems: list[str] = []
        history = self._history_generations()
        highest = history[0][0] if history else 0
        primary: Restored | None = None
        state: Literal["ok", "missing", "bad", "legacy"] = "missing"
        try:
            primary = Restored(load(self.primary, follow_symlinks=False), "primary", self.primary)
            state = "ok" if primary.handoff.seal is not None else "legacy"
            highest = max(highest, primary.generation)
        except HandoffNotFoundError:
            problems.append(f"{self.primary.name} is missing")
        except UnsealedEditError as exc:
            state = "bad"
            problems.append(f"{self.primary.name}: {exc.reason}")
            if exc.handoff is not None:
                highest = max(highest, exc.handoff.generation)
        except HandoffError as exc:
            state = "bad"
            problems.append(f"{self.primary.name}: {exc.reason}")
            highest = max(highest, self._generation_guess())
        for generation, name in history:
            path = self.history_dir / name
            if primary is not None and generation <= primary.generation:
                break
            try:
                handoff = load(path, follow_symlinks=False)
            except HandoffError as exc:
                problems.append(f"{HISTORY_DIR}/{path.name}: {exc.reason}")
                continue
            if handoff.generation != generation:
                problems.append(f"{HISTORY_DIR}/{path.name} holds generation {handoff.generation}; skipped")
                continue
            if primary is not None and not self._save_in_progress():
                problems.append(
                    f"{self.primary.name} holds generation {primary.generation}, behind {HISTORY_DIR}/"
                    f"{path.name}: a save was interrupted after its commit"
                )
            elif highest > generation:
                problems.append(f"restored generation {generation}; generations up to {highest} are lost")
            return _Scan(Restored(handoff, "history", path, tuple(problems)), highest, state)
        if primary is not None:
            migrated = primary.handoff.lineage.migrated_from
            if primary.handoff.seal is None and migrated is not None:
                note = (
                    f"{self.primary.name} is a {migrated.schema_version} handoff, migrated in memory; "
                    "`handoff migrate` rewrites it as a sealed 2.0 generation"
                )
                primary = Restored(primary.handoff, "primary", primary.path, (*problems, note))
            return _Scan(primary, highest, state)
        return _Scan(None, highest, state, tuple(problems))

    def _save_in_progress(self) -> bool:
        """Whether a writer holds the lock now (asked only when the primary lags behind history)."""
        with try_writer_lock(self.path) as free:
            return not free

    def _generation_guess(self) -> int:
        """Best effort on an unreadable primary: the largest generation number its bytes mention."""
        try:
            data, _ = read_bytes(self.primary, MAX_FILE_BYTES, follow_symlinks=False)
        except HandoffError:
            return 0
        # only numbers a generation could be: damage can leave any digits in the bytes
        found = (int(m.group(1)) for m in _GENERATION_TEXT.finditer(data))
        return max((n for n in found if n < MAX_INT), default=0)

    def restore(self) -> Restored:
        """Return the newest verified generation: the primary, else the newest valid one in ``history/``.

        Never writes, never returns unverified data and never returns ``None``. When the primary
        is missing, damaged, edited or behind, ``problems`` says so and what was lost.

        :raises NoHandoffError: if the thread holds nothing that verifies (the reason lists what was tried).
        """
        if not self.path.is_dir():
            msg = "no such thread directory: nothing has been saved here"
            raise NoHandoffError(self.path, msg)
        scan = self._scan()
        if scan.newest is not None:
            return scan.newest
        reason = "nothing here verifies" + (": " + "; ".join(scan.problems) if scan.problems else "")
        raise NoHandoffError(self.path, reason)

    def history(self) -> list[HistoryEntry]:
        """List the generations in ``history/``, newest first, each verified; a bad primary is listed first."""
        entries = []
        current = None
        try:
            current = load(self.primary, follow_symlinks=False).generation
        except HandoffNotFoundError:
            pass
        except HandoffError as exc:
            entries.append(HistoryEntry(None, self.primary, True, None, None, exc.reason))
        for generation, name in self._history_generations():
            path = self.history_dir / name
            try:
                handoff = load(path, follow_symlinks=False)
            except HandoffError as exc:
                entries.append(HistoryEntry(generation, path, False, None, None, exc.reason))
            else:
                entries.append(
                    HistoryEntry(
                        handoff.generation,
                        path,
                        handoff.generation == current,
                        str(handoff.seal),
                        handoff.created_at,
                        None,
                    )
                )
        return entries
