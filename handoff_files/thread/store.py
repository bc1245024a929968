"""The store: one thread directory of sealed handoff generations, written durably under a lock."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Literal

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, Format
from handoff_files.format.content import dump_layers, layers_of
from handoff_files.format.loader import decode, load
from handoff_files.format.model import SCHEMA_VERSION, Handoff, HandoffContent
from handoff_files.foundation.atomic import (
    fsync_dir,
    is_real_dir,
    lexists,
    read_bytes,
    remove_stray_temps,
    stray_temps,
    write_durable,
)
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    HandoffWriteError,
    NoHandoffError,
    TransferRefusedError,
    UnsealedEditError,
)
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT, WriterLock, try_writer_lock
from handoff_files.foundation.names import check_id
from handoff_files.thread import recovery
from handoff_files.thread.commit import Head, commit
from handoff_files.thread.journal import Journal
from handoff_files.thread.mirror import MIRROR_NAME, Mirror, read_mirror
from handoff_files.thread.results import HistoryEntry, MigrationReport, Restored, SaveReceipt

__all__ = ["DEFAULT_KEEP", "DURABILITIES", "HISTORY_DIR", "TRANSFERRED_NAME", "Durability", "HandoffStore"]

HISTORY_DIR: Final = "history"
PRIMARY_STEM: Final = "handoff"
#: Written by :func:`handoff_files.transfer.checkpoint`'s last phase: the thread was handed to another and is closed.
TRANSFERRED_NAME: Final = "transferred.json"
#: Generations kept in ``history/``, the current one included.
DEFAULT_KEEP: Final = 10

#: When a save is acknowledged. ``"full"``: once its copy in ``history/`` is durable, then the
#: primary, ``state.json`` and the journal line too (five fsyncs). ``"journal"``: once one
#: journal line holding the whole sealed document is durable (one fsync, as a database's
#: write-ahead log commits); the files are then written without fsync, and a restore takes the
#: journal's document when they did not survive a crash.
Durability = Literal["full", "journal"]
DURABILITIES: Final[tuple[Durability, ...]] = ("full", "journal")

_EXTENSIONS: Final[dict[Format, str]] = {"json": ".json", "yaml": ".yaml"}
_GENERATION_FILE: Final = re.compile(r"\d{8,}\.(?:json|yaml)\Z")


class HandoffStore:
    """A thread directory of sealed handoffs.

    :param path: the thread directory (created on first save).
    :param format: ``"json"`` or ``"yaml"`` for the primary; default: the existing primary's, else JSON.
    :param keep: how many generations ``history/`` keeps, the current one included (at least 1).
    :param agent_id: default: the previous generation's, else the directory name.
    :param thread_id: default: the previous generation's, else the directory name.
    :param algorithm: the seal's digest (see :data:`handoff_files.format.seal.DEFAULT_ALGORITHM`).
    :param lock_timeout: seconds to wait for another writer.
    :param durability: when saves are acknowledged (see :data:`Durability`); ``save()`` may override it.
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
        durability: Durability = "full",
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
        self.durability: Durability = self._check_durability(durability)
        self.lock_timeout = lock_timeout
        self._agent_id = None if agent_id is None else check_id(agent_id, "agent_id", self.path)
        self._thread_id = None if thread_id is None else check_id(thread_id, "thread_id", self.path)
        if thread_id is None or agent_id is None:
            check_id(self.path.name, "thread directory name", self.path)
        self.format: Format = self._choose_format(format)
        self._lock = WriterLock(self.path, timeout=lock_timeout)
        self._cache: tuple[tuple[int, int, int, int], Head] | None = None
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

    def _check_durability(self, durability: Durability) -> Durability:
        if durability not in DURABILITIES:
            msg = f"durability must be one of {', '.join(map(repr, DURABILITIES))}, not {durability!r}"
            raise HandoffValidationError(self.path, msg)
        return durability

    def _remove_stray_temps(self) -> None:
        remove_stray_temps(self.path)
        remove_stray_temps(self.history_dir)

    # -- paths -------------------------------------------------------------------------------

    @property
    def primary(self) -> Path:
        """The primary file: the latest sealed handoff."""
        return self.path / f"{PRIMARY_STEM}{_EXTENSIONS[self.format]}"

    @property
    def mirror_path(self) -> Path:
        """``state.json``: the state layer and running totals of the generation it mirrors."""
        return self.path / MIRROR_NAME

    @property
    def journal(self) -> Journal:
        """The thread's journal (``journal.jsonl``)."""
        return Journal(self.path)

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

    def save(
        self, content: Handoff | HandoffContent | Mapping[str, Any], *, durability: Durability | None = None
    ) -> SaveReceipt:
        """Seal *content* as the next generation and write it durably.

        :param content: a :class:`Handoff` (its layers are taken, its envelope replaced), a
            :class:`HandoffContent`, or a mapping of the five layers (and optionally ``context``).
        :param durability: this save's, instead of the store's (see :data:`Durability`).
        :returns: the receipt, once the generation is on disk (with ``"full"``, every file and
            directory entry; with ``"journal"``, its journal line).
        :raises HandoffValidationError: if the content is not five valid layers.
        :raises HandoffLockedError: if another writer holds the lock past the timeout.
        :raises HandoffWriteError: if the disk refuses; the previous generation stays intact.
        """
        layers = layers_of(content, self.path)
        mode = self.durability if durability is None else self._check_durability(durability)
        if not is_real_dir(self.history_dir):
            self.init()
        with self._lock.held():
            if self._temps_left:  # a dead writer's leftovers; under the lock none can be live
                self._remove_stray_temps()
                self._temps_left = False
            listing = self._history_generations()
            return self._save_locked(layers, self._head(listing), listing, durability=mode)

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
        self.init()
        with self._lock.held():
            listing = self._history_generations()
            head = self._head(listing)
            try:
                current = load(self.primary, follow_symlinks=False)
            except UnsealedEditError as exc:
                if exc.handoff is None:  # the loader always attaches it; refuse rather than guess
                    raise
                return self._save_locked(dump_layers(exc.handoff.content()), head, listing, event="sealed")
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

    def adopt(self, content: Handoff | HandoffContent, adopted_from: Mapping[str, Any]) -> SaveReceipt:
        """Write *content* as generation 1 of this thread, recording where it came from.

        Writes files; used by :func:`handoff_files.adopt_checkpoint`, which verifies the content
        first. The thread must hold no handoff yet: nothing is ever written over another's work.

        :param adopted_from: ``agent_id``, ``thread_id``, ``generation``, ``blob_id``, ``blob_sha256``.
        :raises TransferRefusedError: if the thread already has handoffs (or any channel of one).
        :raises HandoffError: as :meth:`save` does.
        """
        layers = layers_of(content, self.path)
        self.init()
        with self._lock.held():
            found = self.holdings()
            if found:
                msg = f"already holds a thread ({', '.join(found)}); adopt into a new, empty directory"
                raise TransferRefusedError(self.path, msg)
            listing = self._history_generations()
            lineage = {"adopted_from": dict(adopted_from), "migrated_from": None}
            return self._save_locked(layers, self._head(listing), listing, lineage=lineage, event="adopted")

    def record(self, event: str, *, generation: int | None, seal: str | None, summary: str, **extra: Any) -> None:
        """Append an event line (``exported``, ``transferred`` …) to the journal, under the writers' lock. Writes.

        :raises HandoffWriteError: if the line cannot be written.
        """
        self.init()
        with self._lock.held():
            self.journal.append(event, generation=generation, seal=seal, summary=summary, **extra)

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
        journal = self.journal
        channels = {f"{PRIMARY_STEM}{ext}" for ext in _EXTENSIONS.values()}
        channels |= {MIRROR_NAME, journal.path.name, journal.previous.name}
        found = sorted(names & channels)
        found += [f"{HISTORY_DIR}/{name}" for _, name in self._history_generations()]
        return found

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
            receipt = self._save_locked(
                layers, head, listing, lineage=lineage, after=handoff.generation, event="migrated"
            )
        return MigrationReport(path, migrated.schema_version, handoff, tuple(migrated.notes), receipt, dry_run)

    def _save_locked(
        self,
        layers: dict[str, Any],
        head: Head,
        listing: list[tuple[int, str]],
        *,
        lineage: dict[str, Any] | None = None,
        after: int = 0,
        event: str = "saved",
        durability: Durability | None = None,
    ) -> SaveReceipt:
        self._check_writable(head)
        receipt, new_head = commit(
            self,
            layers,
            head,
            listing,
            ids=(
                self._agent_id or head.agent_id or self.path.name,
                self._thread_id or head.thread_id or self.path.name,
            ),
            lineage=lineage,
            after=after,
            event=event,
            durability=durability or self.durability,
        )
        self._remember(new_head)
        return receipt

    def _remember(self, head: Head) -> None:
        """Cache the head this store just wrote, keyed by the primary it wrote."""
        try:
            st = os.lstat(self.primary)
        except OSError:
            self._cache = None  # the save is durable; the next one just scans the disk again
        else:
            self._cache = ((st.st_ino, st.st_mtime_ns, st.st_size, head.generation), head)

    def _check_writable(self, head: Head) -> None:
        """Refuse a save into a transferred thread, or into another agent's."""
        if lexists(self.path / TRANSFERRED_NAME):
            msg = f"thread was transferred (see {TRANSFERRED_NAME}) and is closed; the agent that adopted it carries on"
            raise TransferRefusedError(self.path, msg)
        if head.agent_id and self._agent_id and head.agent_id != self._agent_id:
            msg = (
                f"thread belongs to agent {head.agent_id!r}, not {self._agent_id!r}; adopt it into a new thread instead"
            )
            raise HandoffValidationError(self.path, msg)

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

    def _head(self, listing: list[tuple[int, str]]) -> Head:
        """Work out the generation and parent the next save chains from (call under the lock).

        The head this store wrote last is reused while the primary is the same file (inode,
        mtime, size) and ``history/`` holds no newer generation; otherwise the disk is scanned.
        """
        if self._cache is not None:
            try:
                st = os.lstat(self.primary)
            except OSError:
                pass  # scan the disk below, which names what is wrong
            else:
                newest_listed = listing[0][0] if listing else 0
                if self._cache[0] == (st.st_ino, st.st_mtime_ns, st.st_size, newest_listed):
                    return self._cache[1]
        found = recovery.scan(self)
        try:
            mirror: Mirror | None = read_mirror(self.mirror_path)
        except HandoffError:
            mirror = None
        last = found.last
        # a generation state.json or the journal recorded was acknowledged once: never reuse its number
        highest = max(found.highest, mirror.generation if mirror else 0, (last.generation or 0) if last else 0)
        saves = mirror.saves if mirror else found.highest
        newest_sealed = found.newest.generation if found.newest and found.newest.handoff.seal else 0
        if mirror is not None and mirror.generation > newest_sealed:
            # the newest generation survives only in state.json (a rebuilt restore): chain to its seal
            return Head(highest, mirror.seal, mirror.agent_id, mirror.thread_id, found.primary, saves)
        if found.newest is None or found.newest.handoff.seal is None:
            # nothing sealed, or an older version migrated in memory: no 2.0 seal to chain to, no ids
            return Head(highest, None, None, None, found.primary, saves)
        handoff = found.newest.handoff
        return Head(highest, str(handoff.seal), handoff.agent_id, handoff.thread_id, found.primary, saves)

    def restore(self, *, accept_edit: bool = False) -> Restored:
        """Return the newest verified generation, climbing down the recovery ladder if need be.

        The ladder: the primary (migrated if old), cross-checked against ``state.json`` and the
        journal's last save → the newest verified generation in ``history/`` → a rebuild from
        ``state.json`` and the journal (state exact, other layers from the journal's summary,
        ``source="rebuilt"``). ``problems`` names what was wrong and what was lost. Never returns
        ``None`` or unverified data; never writes, unless *accept_edit* is True and the primary
        is a person's valid, unsealed edit: then the edit is sealed as the next generation first.

        :raises NoHandoffError: if the thread holds nothing that verifies (the reason lists what was tried).
        """
        restored = recovery.restore(self, accept_edit=accept_edit)
        if lexists(self.path / TRANSFERRED_NAME):
            closed = f"this thread was transferred (see {TRANSFERRED_NAME}) and is closed: continue in the target"
            restored = replace(restored, problems=(*restored.problems, closed))
        return restored

    def acknowledge(self, restored: Restored) -> None:
        """Record that the agent took *restored* in: the journal's "resumed from generation N" line.

        A supervisor that restarted the agent looks for this line; a restore the agent never
        acknowledges is an agent that started without its context. Writes (under the lock).
        """
        recovery.acknowledge(self, restored)

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
