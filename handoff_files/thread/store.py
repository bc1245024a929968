"""The store: one thread directory of sealed handoff generations, written durably under a lock."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handoff_files.format import seal as sealing
from handoff_files.format.codec import Format
from handoff_files.format.content import dump_layers, layers_of
from handoff_files.format.model import Handoff, HandoffContent
from handoff_files.foundation.atomic import is_real_dir, lexists
from handoff_files.foundation.errors import HandoffError, NoHandoffError, TransferRefusedError
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT, OnLockWait
from handoff_files.thread import recovery
from handoff_files.thread.ackcode import accept
from handoff_files.thread.edits import Edit, already_sealed, read_edit
from handoff_files.thread.head import Head, HeadTracker
from handoff_files.thread.history import DEFAULT_KEEP, list_history
from handoff_files.thread.journal import Journal
from handoff_files.thread.kind import SAVER_AGENT_ID, Kind
from handoff_files.thread.layout import HISTORY_DIR, PRIMARY_STEM, TRANSFERRED_NAME, ThreadDir, ThreadFolder
from handoff_files.thread.migration import migrate_file
from handoff_files.thread.notes import check_note, ever_saved
from handoff_files.thread.results import Acknowledgement, HistoryEntry, MigrationReport, Restored, SaveReceipt
from handoff_files.thread.settings import DURABILITIES, Durability, ThreadSettings, check_durability
from handoff_files.thread.signedpolicy import after_save, edit_sealer, signing_policy
from handoff_files.thread.trust import remember_created

if TYPE_CHECKING:
    from handoff_files.signing.keys import SigningKey
    from handoff_files.thread.signatures import KeyChoice

# the layout's names and the settings' durabilities are re-exported: callers took them from the store
__all__ = ["DEFAULT_KEEP", "DURABILITIES", "HISTORY_DIR", "PRIMARY_STEM", "TRANSFERRED_NAME"]
__all__ += ["Durability", "HandoffStore"]


class HandoffStore:
    """A thread directory of sealed handoffs.

    :param path: the thread directory (created on first save), or ``s3://bucket/prefix`` for a thread on
        object storage (the ``[s3]`` extra; :class:`~handoff_files.thread.bucketstore.BucketThreadStore`).
    :param format: ``"json"`` or ``"yaml"`` for the primary; default: the existing primary's, else JSON.
    :param keep: how many generations ``history/`` keeps, the current one included (at least 1).
    :param agent_id: default: the previous generation's, else the thread_id given, else the directory name.
    :param thread_id: default: the previous generation's (another is refused), else the directory name.
    :param algorithm: the seal's digest (see :data:`handoff_files.format.seal.DEFAULT_ALGORITHM`).
    :param lock_timeout: seconds to wait for another writer (0: fail at once if one holds the lock).
    :param on_lock_wait: called with a :class:`~handoff_files.foundation.lock.LockWait` (who holds the
        lock, since when, seconds waited) when a write starts to wait for another writer, then
        every few seconds while it waits; None: wait silently.
    :param durability: when saves are acknowledged (:data:`Durability`, default ``"journal"``); ``save()`` overrides.
    :param kind: ``"langgraph"``: a LangGraph saver's own store (recorded when it creates the thread); a
        plain store (None) is refused every write into such a thread (:mod:`~handoff_files.thread.kind`).
    :param signing_key: the key that signs each save (an OpenSSH Ed25519 key file, or a
        :class:`~handoff_files.signing.keys.SigningKey`); None: the key the user's configuration
        names, if any (docs/signing.md); False: none.
    :param allowed_signers: who is trusted to sign (an OpenSSH ``allowed_signers`` file); default:
        ``$XDG_CONFIG_HOME/handoff-files/allowed_signers``. Restore reports each signer by it.
    :param require_signed: restore only generations a trusted key signed, as a pinned thread does.
    :raises InvalidNameError: if an id given is invalid, or a new thread has none and its folder's name gives none.
    :raises SigningKeyError: if *signing_key* names a key file that cannot be used.
    :raises HandoffValidationError: for a bad *keep*, *algorithm*, *durability*, *format* or *kind*.

    The facade over the thread's modules: :attr:`layout` names its files, :meth:`locked` holds its
    writers' lock, and saves, restores and acknowledgements go to the commit and recovery modules.
    """

    def __new__(cls, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> HandoffStore:
        """A URL (``s3://bucket/prefix``) makes a thread on object storage (:mod:`~.bucketstore`), a path a folder's."""
        if cls is HandoffStore and isinstance(path, str) and "://" in path:  # another scheme is refused there
            from handoff_files.thread.bucketstore import BucketThreadStore  # noqa: PLC0415 -- a bucket's store only

            return super().__new__(BucketThreadStore)
        return super().__new__(cls)

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
        durability: Durability = "journal",
        on_lock_wait: OnLockWait | None = None,
        kind: Kind | None = None,
        signing_key: KeyChoice = None,
        allowed_signers: str | os.PathLike[str] | None = None,
        require_signed: bool = False,
    ) -> None:
        #: The thread directory's paths and listings.
        self.layout = ThreadDir(path)
        self._format_given = format is not None
        self.path = self.layout.path
        self._thread = ThreadSettings.checked(
            self.layout,
            format=format,
            keep=keep,
            agent_id=agent_id,
            thread_id=thread_id,
            algorithm=algorithm,
            lock_timeout=lock_timeout,
            durability=durability,
            on_lock_wait=on_lock_wait,
            kind=kind,
            signing_key=signing_key,
        )
        self._allowed = Path(allowed_signers) if allowed_signers is not None else None
        self._policy = functools.partial(signing_policy, allowed_signers=self._allowed, require_signed=require_signed)
        self.lock_timeout = lock_timeout
        self._heads = HeadTracker(self._thread)
        self._temps_left = self.layout.sweep_temps()

    @property
    def where(self) -> str:
        """The thread as a person names it: its folder's path (a thread on object storage: its URL)."""
        return str(self.path)

    @property
    def format(self) -> Format:
        """The primary's format: ``"json"`` or ``"yaml"``."""
        return self._thread.format

    @property
    def kind(self) -> Kind | None:
        """The kind of thread this store writes as: ``"langgraph"`` (a LangGraph saver's), or None (plain)."""
        return self._thread.kind

    @property
    def durability(self) -> Durability:
        """When saves are acknowledged (see :data:`Durability`), unless ``save()`` says otherwise."""
        return self._thread.durability

    @property
    def keep(self) -> int:
        """How many generations ``history/`` keeps, the current one included."""
        return self._thread.keep

    @property
    def algorithm(self) -> sealing.Algorithm:
        """The seal's digest for new generations."""
        return self._thread.algorithm

    @property
    def primary(self) -> Path:
        """The primary file: the latest sealed handoff."""
        return self._thread.primary

    @property
    def mirror_path(self) -> Path:
        """``state.json``: the state layer and running totals of the generation it mirrors."""
        return self.layout.mirror

    @property
    def journal(self) -> Journal:
        """The thread's journal (``journal.jsonl``)."""
        return self._thread.journal

    @property
    def signing_key(self) -> SigningKey | None:
        """The key this store signs with, or None; a configured one is read at the first use (a bad one raises)."""
        return None if self._thread.keys is None else self._thread.keys.key()

    @property
    def history_dir(self) -> Path:
        """The folder of the last ``keep`` sealed generations, the current one included."""
        return self.layout.history_dir

    def locked(self) -> AbstractContextManager[None]:
        """Hold the thread's writers' lock for a block: no other writer's save lands inside it. Reentrant.

        :raises HandoffLockedError: if another writer holds the lock past the timeout; HandoffWriteError.
        """
        return self._thread.lock.held()

    def init(self) -> ThreadFolder:
        """Create the thread directory and ``history/`` (mode 0700) durably; an existing folder keeps its mode.

        A store opened with ``format="yaml"``, ids or a kind on a thread with nothing in it yet records
        them in the journal's first line ("created"), so later stores opened without them keep them.

        :returns: whether the folder was created, its mode, and what a person should know (its ``note``).
        :raises HandoffError: if they cannot be created, or ``history/`` is a symbolic link (never followed).
        """
        folder = self.layout.create()
        if folder.created:  # a thread this user's library made: the hooks may brief from it
            remember_created(folder.path)
        if self._thread.created_line(format_given=self._format_given) is not None:
            with self.locked():  # asked again under the lock: a save that landed since makes the thread not new
                self._thread.record_created(format_given=self._format_given)
        return folder

    def save(
        self, content: Handoff | HandoffContent | Mapping[str, Any], *, durability: Durability | None = None
    ) -> SaveReceipt:
        """Seal *content* as the next generation and write it durably.

        :param content: a :class:`Handoff` (its layers are taken, its envelope replaced), a
            :class:`HandoffContent`, or a mapping of the five layers (and optionally ``context``).
        :param durability: this save's, instead of the store's (see :data:`Durability`).
        :returns: the receipt, once the generation is on disk (with ``"full"``, its file in
            ``history/`` and that file's directory entry; with ``"journal"``, its journal line).
        :raises HandoffValidationError: if the content is not five valid layers.
        :raises HandoffLockedError: if another writer holds the lock past the timeout.
        :raises HandoffWriteError: if the disk refuses; the previous generation stays intact.
        """
        layers = layers_of(content, self.path)
        mode = self.durability if durability is None else check_durability(durability, self.path)
        if not is_real_dir(self.history_dir):
            self.init()
        with self.locked():
            if not lexists(self.layout.journal):  # first: another writer's init made history/ but has not recorded
                self._thread.record_created(format_given=self._format_given)
            if self._temps_left:  # a dead writer's leftovers; under the lock none can be live
                self.layout.remove_stray_temps()
                self._temps_left = False
            listing = self._heads.listing()
            return self._save_locked(layers, self._heads.current(listing), listing, durability=mode)

    def update(self, change: Callable[[Restored | None], Handoff | HandoffContent | Mapping[str, Any]]) -> SaveReceipt:
        """Read the newest verified generation and save what *change* makes of it, under one lock.

        No other writer's save can land between the read and the write. *change* gets the
        :class:`Restored` generation, or None for a thread with nothing restorable.

        :raises HandoffError: as :meth:`restore` (other than ``NoHandoffError``) and :meth:`save` do.
        """
        self.init()
        with self.locked():  # the lock is re-entrant: save() takes it again inside
            try:
                restored: Restored | None = self.restore()
            except NoHandoffError:
                restored = None
            return self.save(change(restored))

    def seal(self, *, accept_corrupt: bool = False) -> SaveReceipt:
        """Accept the primary as edited by a person (or a rebuilt generation whose files are lost): seal it anew.

        Rewrites files (the edited file is kept in ``history/`` as ``displaced-…``). See
        :func:`~handoff_files.thread.edits.read_edit` for *accept_corrupt*, what an edit may change, and the rebuild.

        :raises HandoffError: if the primary does not parse or validate, reads as corrupt (without
            *accept_corrupt*), or changed the envelope, naming why.
        """
        self.init()
        with self.locked():
            listing = self.layout.generations()
            head = self._heads.current(listing)
            current = read_edit(
                self.layout, self.primary, accept_corrupt=accept_corrupt, restore=self.restore, writer=self._thread.kind
            )
            if isinstance(current, Edit):
                return self._save_locked(dump_layers(current.handoff.content()), head, listing, event="sealed")
            return already_sealed(current, self.primary)

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
        with self.locked():
            found = self.holdings() if ever_saved(self.layout) else []  # init's "created" line is no save
            if found:
                msg = f"already holds a thread ({', '.join(found)}); adopt into a new, empty directory"
                raise TransferRefusedError(self.path, msg)
            listing = self.layout.generations()
            lineage = {"adopted_from": dict(adopted_from), "migrated_from": None}
            return self._save_locked(layers, self._heads.current(listing), listing, lineage=lineage, event="adopted")

    def record(self, event: str, *, generation: int | None, seal: str | None, summary: str, **extra: Any) -> None:
        """Append an event line (``exported``, ``transferred`` …) to the journal, under the writers' lock. Writes.

        :raises HandoffWriteError: if the line cannot be written."""
        self.init()
        with self.locked():
            self.journal.append(event, generation=generation, seal=seal, summary=summary, **extra)

    def holdings(self) -> list[str]:
        """The names of this directory's handoff files and channels (empty for a new thread).

        :raises HandoffError: if the directory cannot be listed (an unreadable thread is never taken as empty)."""
        return self.layout.holdings()

    def migrate(
        self, source: str | os.PathLike[str] | None = None, *, dry_run: bool = False, assume_version: str | None = None
    ) -> MigrationReport:
        """Rewrite an older handoff as the thread's next sealed generation (see :mod:`.migration`).

        :param source: the older file (default: the primary).
        :param assume_version: the version of a file that does not say (see :func:`load`).
        :raises HandoffError: as :func:`load` does for the source, or as :meth:`save` does.
        """
        path = Path(source) if source is not None else self.primary
        return migrate_file(
            self._thread,
            self._heads,
            path,
            dry_run=dry_run,
            assume_version=assume_version,
            init=self.init,
            save_locked=self._save_locked,
        )

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
        """Commit the generation after *head* (call under the lock) and remember the new head."""
        mode = durability or self.durability
        from handoff_files.thread.commit import check_disk, commit  # noqa: PLC0415 -- a restore never loads it

        if not self._heads.unchanged:  # unless this store's last save left the files as they are: kind, anchor
            check_disk(self._thread, head, event, checkpoint=head.agent_id == SAVER_AGENT_ID)
        receipt, new_head = commit(
            self._thread, layers, head, listing, lineage=lineage, after=after, event=event, durability=mode
        )
        ahead = head.generation > (listing[0][0] if listing else 0)  # commit copied generations back: list again
        self._heads.remember(new_head, None if ahead or receipt.unfinished else listing)
        return after_save(receipt, self.layout, new_head.thread_id, allowed_signers=self._allowed)

    def restore(self, *, accept_edit: bool = False, accept_rollback: bool = False) -> Restored:
        """Return the newest verified generation, climbing down the recovery ladder if need be.

        A copy whose signature does not verify is damaged; ``signature`` says who signed the one returned
        (docs/signing.md); on a folder pinned to signed generations, the newest a trusted key signed. The ladder:
        the primary (migrated if old), cross-checked against ``state.json`` and the journal's last save → the newest
        verified generation in ``history/`` → a rebuild from ``state.json`` and the journal (state exact, other
        layers from the journal's summary, ``source="rebuilt"``). ``problems`` names what was wrong and what was
        lost. Never returns ``None`` or unverified data; never writes in the thread (a pin is recorded outside it),
        unless *accept_edit* is True and the primary is a person's valid, unsealed edit: then the edit is sealed as
        the next generation first (never on a pinned folder: ``handoff seal`` does it there).

        :raises NoHandoffError: if the thread holds nothing that verifies (the reason lists what was tried).
        :raises UntrustedSignerError: if it is pinned and no generation a trusted key signed is left.
        :raises RollbackError: if it is pinned and older than this user last saw it, unless *accept_rollback*.
        """
        sealer = edit_sealer(self.layout, self.seal) if accept_edit else None
        restored = recovery.restore(self._thread, seal_edit=sealer)
        restored = self._policy(restored, self.layout, accept_rollback=accept_rollback)  # signers, pin, anchor
        if lexists(self.layout.transferred):
            closed = f"this thread was transferred (see {TRANSFERRED_NAME}) and is closed: continue in the target"
            restored = replace(restored, problems=(*restored.problems, closed))
        return restored

    def acknowledge(self, restored: Restored | None = None, *, code: str | None = None) -> Acknowledgement:
        """Record that the agent took *restored* (default: the current generation) in: a journal "resumed" line.

        A supervisor looks for this line: a restore never acknowledged is an agent that started without
        its context. With *code* (its briefing's, :func:`~handoff_files.brief`) the line says the agent
        read the briefing; a wrong code is refused. Writes (under the lock).

        :raises WrongCodeError: if *code* is not the generation's code (the refusal is journaled).
        """
        restored = restored or self.restore()  # first: a mistyped thread is an error, never a new folder
        self.init()
        return accept(self._thread, restored, code)

    def note(self, event: str, summary: str, **fields: Any) -> None:
        """Append a journal line for *event* (a hook's session start …); one the library's lines use is refused.

        :raises HandoffValidationError: for an event or field the library's own lines use; HandoffWriteError.
        """
        check_note(self.path, event, fields)
        self.record(event, generation=None, seal=None, summary=summary, **fields)

    def history(self) -> list[HistoryEntry]:
        """List the generations, newest first, verified; ``current`` marks what :meth:`restore` returns.

        :raises HandoffError: if ``history/`` exists but cannot be listed.
        """
        try:
            restored: Restored | None = self.restore()
        except HandoffError:  # nothing restores: each file is listed with its own problem, none marked
            restored = None
        return list_history(self.layout, self.primary, restored, allowed_signers=self._allowed)
