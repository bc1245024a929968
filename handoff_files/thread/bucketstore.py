"""``HandoffStore("s3://bucket/prefix")``: a thread on object storage, behind the store's API (issue 23).

:class:`~handoff_files.thread.objects.ObjectThread` commits each generation by creating its
object only if absent; this class gives it the store's API and policy: saves and restores
returning the store's results (``url`` the object's URL), retention (``keep``), ``update`` as a
compare-and-set, the signing policy (pinned and anchored by the URL), the journal's events as objects
(``journal/<time>-<random>.json``, created only if absent: a listing orders them), acknowledgements
with the briefing's code, and ``history``.

What a folder has and a bucket does not (yet): the writers' lock (a bucket needs none: the
commit is the conditional create), a person's edit sealed in place, migration of an older file,
adoption, YAML primaries and LangGraph saver threads. Each says so in one line when asked for.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES, Format
from handoff_files.format.loader import decode
from handoff_files.format.model import Handoff, HandoffContent
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    NoHandoffError,
    ObjectExistsError,
)
from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT
from handoff_files.foundation.names import derive_id
from handoff_files.thread import bucketjournal
from handoff_files.thread.bucketidentity import generation_key
from handoff_files.thread.bucketkind import refuse_other
from handoff_files.thread.bucketpolicy import BucketPolicy
from handoff_files.thread.history import DEFAULT_KEEP, GenerationNotFoundError
from handoff_files.thread.notes import check_note
from handoff_files.thread.objects import ObjectThread
from handoff_files.thread.pins import pin_of
from handoff_files.thread.results import Acknowledgement, HistoryEntry, Restored, SaveReceipt
from handoff_files.thread.settings import Durability, check_durability
from handoff_files.thread.signatures import KeySource, SignatureReport, SignerCheck, signature_damage, verified
from handoff_files.thread.store import HandoffStore

if TYPE_CHECKING:
    from handoff_files.foundation.lock import OnLockWait
    from handoff_files.signing.keys import SigningKey
    from handoff_files.storage import Storage
    from handoff_files.thread.journal import Entry, Journal
    from handoff_files.thread.kind import Kind
    from handoff_files.thread.layout import ThreadDir, ThreadFolder
    from handoff_files.thread.results import MigrationReport
    from handoff_files.thread.signatures import KeyChoice

__all__ = ["BucketThreadStore"]

#: how many times ``update`` reads the head again when another writer saved between its read and its commit
UPDATE_TRIES: Final = 8
#: how many lost races a save takes (each: the head read again, the content sealed as the next generation)
#: before it raises, as a folder's save waits for the writers' lock rather than fail
SAVE_RETRIES: Final = 32


class BucketThreadStore(HandoffStore):
    """A thread under ``s3://bucket/prefix``: what ``HandoffStore(url)`` makes. Takes the store's keywords;
    ``format`` may only be ``"json"``, ``kind`` only None; ``on_lock_wait`` is accepted and unused (no lock:
    the commit is a conditional create); ``lock_timeout`` is how long ``update`` keeps trying when other
    writers save first, as a folder's waits for its lock. Every save is durable when it
    returns, whatever ``durability`` says: the object store acknowledges a write once it holds it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,  # noqa: A002 -- the store's keyword
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
        url = os.fspath(path)
        if format not in (None, "json"):
            raise HandoffValidationError(url, f"a thread on object storage is JSON; format={format!r} is for a folder")
        if kind is not None:
            msg = f"kind={kind!r}: a LangGraph saver's thread on object storage is not supported yet (a folder is)"
            raise HandoffValidationError(url, msg)
        if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
            raise HandoffValidationError(url, f"keep must be a whole number of 1 or more, not {keep!r}")
        self._durability = check_durability(durability, url)
        self._objects = ObjectThread(
            url, agent_id=agent_id, thread_id=thread_id, keep=keep, algorithm=algorithm, retries=SAVE_RETRIES
        )
        self._objects.name_id = derive_id(self.where.rstrip("/").rsplit("/", 1)[-1])  # as a folder's name gives it
        self._keys = KeySource(signing_key, self.where)
        self._allowed = Path(allowed_signers) if allowed_signers is not None else None
        self._signing = BucketPolicy(self._objects, self._allowed, require_signed=require_signed)
        self.lock_timeout = lock_timeout

    @property
    def where(self) -> str:
        """The thread as a person names it: ``s3://bucket/prefix``."""
        return self._objects.storage.where

    @property
    def storage(self) -> Storage:
        """The seam the thread stands on (its bucket prefix)."""
        return self._objects.storage

    def generations(self) -> list[int]:
        """The generation numbers ``history/`` holds, newest first."""
        return self._objects.generations()

    def trusted(self, want: int) -> list[Handoff]:
        """The newest *want* generations that verify and, on a pinned thread, that a trusted key signed."""
        return self._signing.verified(self._objects.generations(), want)

    def __repr__(self) -> str:
        return f"HandoffStore({self.where!r})"

    # -- settings ------------------------------------------------------------------------------
    @property
    def format(self) -> Format:
        """Always ``"json"`` on object storage."""
        return "json"

    @property
    def kind(self) -> Kind | None:
        """None: only plain threads live on object storage (yet)."""
        return None

    @property
    def durability(self) -> Durability:
        """As given; on object storage every save is durable when it returns."""
        return self._durability

    @property
    def keep(self) -> int:
        """How many generations ``history/`` keeps after a save, the new one included."""
        return self._objects.keep or DEFAULT_KEEP

    @property
    def algorithm(self) -> sealing.Algorithm:
        """The seal's digest for new generations."""
        return self._objects.algorithm

    @property
    def signing_key(self) -> SigningKey | None:
        """The key this store signs with, or None (a configured one is read at the first use)."""
        return self._keys.key()

    # -- what only a folder has ------------------------------------------------------------------
    def _folder_only(self, what: str) -> NoReturn:
        msg = f"not on object storage (yet): this needs {what}, which only a thread in a folder has"
        raise HandoffError(self.where, msg)

    @property  # an attribute on a folder's store
    def path(self) -> Path:
        """No path: a thread on object storage is named by :attr:`where`."""
        self._folder_only("a path")

    @path.setter
    def path(self, value: Path) -> None:
        self._folder_only("a path")

    @property  # an attribute on a folder's store
    def layout(self) -> ThreadDir:
        """No folder layout on object storage."""
        self._folder_only("a folder layout")

    @layout.setter
    def layout(self, value: ThreadDir) -> None:
        self._folder_only("a folder layout")

    @property
    def primary(self) -> Path:
        """No file: the readable copy is the object ``handoff.json`` under :attr:`where`."""
        self._folder_only("a primary file")

    @property
    def mirror_path(self) -> Path:
        """No file: ``state.json`` is an object under :attr:`where`."""
        self._folder_only("a state.json file")

    @property
    def journal(self) -> Journal:
        """No journal file: events are objects under ``journal/`` (:meth:`events`)."""
        self._folder_only("a journal file")

    @property
    def history_dir(self) -> Path:
        """No folder: generations are objects under ``history/``."""
        self._folder_only("a history/ folder")

    def locked(self) -> AbstractContextManager[None]:
        """No lock on object storage: each save's commit is a conditional create."""
        self._folder_only("the writers' lock")

    def init(self) -> ThreadFolder:
        """Nothing to create: a bucket thread exists once its first generation does."""
        self._folder_only("a folder to create")

    def seal(self, *, accept_corrupt: bool = False) -> SaveReceipt:
        """A person's edit is sealed in a folder; on object storage save the edited content instead."""
        self._folder_only("sealing a person's edit in place")

    def adopt(self, content: Handoff | HandoffContent, adopted_from: Mapping[str, Any]) -> SaveReceipt:
        """Adoption writes into a folder (yet)."""
        self._folder_only("adoption")

    def migrate(
        self, source: str | os.PathLike[str] | None = None, *, dry_run: bool = False, assume_version: str | None = None
    ) -> MigrationReport:
        """Older files are migrated in a folder (object storage holds only current ones)."""
        self._folder_only("migration of an older file")

    # -- save ------------------------------------------------------------------------------------
    def save(
        self, content: Handoff | HandoffContent | Mapping[str, Any], *, durability: Durability | None = None
    ) -> SaveReceipt:
        """Seal *content* as the next generation and commit it (its object created only if absent).

        Another writer's save landing first is no error: the head is read again and *content* sealed as the
        next generation, up to :data:`SAVE_RETRIES` times (a folder's save waits for the lock instead).

        :raises ObjectExistsError: if other writers won every one of those races (nothing overwritten).
        :raises HandoffValidationError: if the content is not five valid layers.
        :raises HandoffError: if the store refuses or cannot be reached (nothing committed then).
        """
        if durability is not None:
            check_durability(durability, self.where)
        return self._save(content, after=None)

    def update(self, change: Callable[[Restored | None], Handoff | HandoffContent | Mapping[str, Any]]) -> SaveReceipt:
        """Read the newest verified generation and save what *change* makes of it, as the one right after it.

        A compare-and-set, not a lock: if another writer saved in between, the head is read again and
        *change* called again with it (so *change* may be called more than once), after a short random
        pause that grows with each lost race (so of writers racing, each gets its turn), for
        :attr:`lock_timeout` seconds (at least :data:`UPDATE_TRIES` times).

        :raises ObjectExistsError: if other writers kept saving first all that time.
        """
        deadline = time.monotonic() + self.lock_timeout
        tries = 0
        while tries < UPDATE_TRIES or time.monotonic() < deadline:
            if tries:
                time.sleep(random.uniform(0, min(0.5, 0.01 * 2**tries)))  # noqa: S311 -- jitter, not a secret
            tries += 1
            try:
                restored: Restored | None = self.restore()
            except NoHandoffError:
                restored = None
            try:
                return self._save(change(restored), after=0 if restored is None else restored.generation)
            except ObjectExistsError:
                continue
        msg = f"other writers saved first {tries} times in a row ({self.lock_timeout:g} s); nothing saved"
        raise ObjectExistsError(self.where, msg)

    def _save(self, content: Handoff | HandoffContent | Mapping[str, Any], *, after: int | None) -> SaveReceipt:
        self._objects.signing_key = self._keys.key()
        made = self._objects.save(content, after=after)
        name = self.where.rstrip("/").rsplit("/", 1)[-1]
        derived = made.generation == 1 and made.thread_id == self._objects.name_id != name
        note = (
            f"the URL's last part {name[:80]!r} is not a valid id, so the thread id was made from it: "
            f"{made.thread_id!r} (give thread_id / --thread-id to choose it)"
        )
        receipt = SaveReceipt(
            made.generation,
            made.checksum,
            Path(_key_of(made.where, self.where)),
            made.created_at,
            problems=(*made.problems, note) if derived else made.problems,
            signed_by=made.signed_by,
            url=made.where,
        )
        return self._signing.after_save(receipt, made)

    # -- reading ---------------------------------------------------------------------------------
    def restore(self, *, accept_edit: bool = False, accept_rollback: bool = False) -> Restored:
        """The newest generation in ``history/`` that verifies (on a pinned thread: that a trusted key signed).

        ``accept_edit`` has no use here (a person's edit is a folder's). See :meth:`HandoffStore.restore`.

        :raises NoHandoffError: if the thread holds nothing that verifies.
        :raises UntrustedSignerError: if it is pinned and no generation a trusted key signed is left.
        :raises RollbackError: if it is pinned and older than this user last saw it, unless *accept_rollback*.
        """
        return self._signing.restore(accept_rollback=accept_rollback)

    def history(self) -> list[HistoryEntry]:
        """The generations ``history/`` holds, newest first, each verified; ``current`` marks what restore returns.

        :raises HandoffNotFoundError: if nothing at all is under the URL (a mistyped one, as a missing folder).
        """
        numbers = self._objects.generations()  # listed once: the entries are these, whatever lands meanwhile
        if not numbers:
            refuse_other(self.where, self._objects.storage.list(""), empty=True)
        try:
            current: int | None = self.restore().generation
        except HandoffError:
            current = None
        checker = SignerCheck(self._allowed)
        entries = []
        for number in numbers:
            key = generation_key(number)
            url = f"{self.where}/{key}"
            try:
                handoff = decode(self._objects.storage.read(key, limit=MAX_FILE_BYTES).data, url, origin="store")
            except HandoffError as exc:
                entries.append(HistoryEntry(number, Path(key), False, None, None, exc.reason, url=url))
                continue
            damage = signature_damage(handoff, url) or self._objects.misplaced(handoff, number, numbers)
            report: SignatureReport | None = None if damage else checker.report(handoff, url)
            entry = HistoryEntry(
                number, Path(key), number == current, str(handoff.seal), handoff.created_at, damage, report, url=url
            )
            entries.append(entry)
        return entries

    def generation(self, number: int) -> Restored:
        """Generation *number* as ``history/`` holds it, verified (seal, and signature if signed): no other.

        :raises GenerationNotFoundError: if ``history/`` does not hold it (never kept, or removed by retention).
        :raises HandoffError: if it does not verify.
        """
        key = generation_key(number)
        url = f"{self.where}/{key}"
        try:
            stored = self._objects.storage.read(key, limit=MAX_FILE_BYTES)
        except HandoffNotFoundError:
            msg = f"generation {number} is not in history/ (it keeps the newest {self.keep})"
            raise GenerationNotFoundError(url, msg, number) from None
        handoff = verified(decode(stored.data, url, origin="store"), url)
        if (why := self._objects.misplaced(handoff, number, self._objects.generations())) is not None:
            raise HandoffError(url, why)  # another number's copy, or another thread's: never shown as this one
        return Restored(
            handoff, "history", Path(key), signature=SignerCheck(self._allowed).report(handoff, url), url=url
        )

    def pinned(self) -> bool:
        """Whether this user pinned the thread to signed generations (a record that cannot be read: False)."""
        try:
            return pin_of(self.where) is not None
        except HandoffError:
            return False

    def holdings(self) -> list[str]:
        """The names at the thread's top level (``handoff.json``, ``history/`` …); empty for a new thread."""
        return sorted({key.split("/", 1)[0] + ("/" if "/" in key else "") for key in self._objects.storage.list("")})

    # -- the journal's events, as objects (:mod:`~handoff_files.thread.bucketjournal`) -----------
    def record(self, event: str, *, generation: int | None, seal: str | None, summary: str, **extra: Any) -> None:
        """Write an event as its own object, ``journal/<time in ns>-<random>.json``, created only if absent.

        :raises HandoffError: if the store refuses it, or it is over 64 KiB.
        """
        line = {"generation": generation, "seal": seal, "summary": summary, **extra}
        bucketjournal.record(self._objects.storage, event, line)

    def events(self) -> list[dict[str, Any]]:
        """The journal's events, oldest first (each object read, bounded; one that does not parse is skipped)."""
        return bucketjournal.events(self._objects.storage)

    def timeline(self) -> tuple[list[Entry], list[str]]:
        """The thread's story, as ``handoff log`` shows a folder's journal: each generation ``history/`` holds
        as a "saved" line, and each event, in time order; and what could not be read."""
        return bucketjournal.timeline(self._objects.storage, self.history())

    def note(self, event: str, summary: str, **fields: Any) -> None:
        """Write an event of the caller's (one the library's own events use is refused)."""
        check_note(self.where, event, fields)
        self.record(event, generation=None, seal=None, summary=summary, **fields)

    def acknowledge(self, restored: Restored | None = None, *, code: str | None = None) -> Acknowledgement:
        """Record that the agent took *restored* (default: a restore now) in: a "resumed" event.

        :raises WrongCodeError: if *code* is not the generation's code (the refusal is recorded).
        """
        return bucketjournal.acknowledge(self._objects.storage, restored or self.restore(), code)


def _key_of(url: str, root: str) -> str:
    """The key *url* names under *root*."""
    return url[len(root) + 1 :] if url.startswith(root + "/") else url
