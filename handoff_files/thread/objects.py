"""A thread on the storage seam (issue 23): each generation committed by creating its object only if absent.

Delta Lake's commit protocol applied to a thread, on a bucket or a folder alike
(:mod:`~handoff_files.storage`): ``history/<generation>.json`` is the commit point, created with
``If-None-Match: *`` (a ``link`` locally). Two writers racing for generation N: exactly one create
succeeds; the other learns it from the refusal, and either says so
(:class:`~handoff_files.foundation.errors.ObjectExistsError`, naming the generation) or, given
``retries``, reads the head again and seals its content as the next generation. No lock, no lease:
no generation number is ever used twice, and each generation's ``parent`` is the seal of the one
before it, so racing writers form one chain, never a fork.

The copies a person opens follow the commit: ``handoff.json`` (the generation, byte for byte) and
``state.json`` (its state layer and ids), each replaced on the etag it was read at, and only by a
newer generation: an older writer never overwrites a newer head. A writer killed between its
commit and those copies leaves them one generation behind; the next save or a restore's caller
finds the generation in ``history/``.

Restore lists ``history/`` once and reads the newest generation, verified by its seal (and its
signature, when it has one); a damaged one is passed over for the one before it and named in
``problems``, as locally.

Retention (``keep``) removes generations past the newest few after a save. A writer whose head was
so stale that it creates a number retention removed finds ``keep`` newer generations in the listing
it makes after its create, removes its object again and counts the save as a lost race: no number
is ever used twice. ``HandoffStore("s3://…")`` (:mod:`~handoff_files.thread.bucketstore`) stands on
this class and adds the signing policy, the journal's events and the store's API.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_files.format import seal as sealing
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.content import layers_of
from handoff_files.format.loader import decode
from handoff_files.format.model import MAX_INT, SCHEMA_VERSION, Handoff, HandoffContent
from handoff_files.foundation.clock import iso_z, utc_now
from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffValidationError,
    NoHandoffError,
    ObjectExistsError,
    StorageUnavailableError,
)
from handoff_files.foundation.names import check_id
from handoff_files.storage import Storage, open_storage
from handoff_files.thread.bucketidentity import BucketIdentity, Known, generation_key, generation_of
from handoff_files.thread.bucketkind import refuse_other
from handoff_files.thread.bucketretention import keep_bucket_record
from handoff_files.thread.copyback import file_bytes
from handoff_files.thread.objectcopies import ReadableCopies
from handoff_files.thread.signatures import sign_document, signature_damage

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable, Mapping

    from handoff_files.signing.keys import SigningKey

__all__ = ["ObjectReceipt", "ObjectRestored", "ObjectThread"]

HISTORY: Final = "history/"


@dataclass(frozen=True, slots=True)
class _Head:
    """What a save needs of the generation it follows: its number, seal and ids."""

    generation: int
    seal: str
    thread_id: str
    agent_id: str

    @classmethod
    def of(cls, handoff: Handoff) -> _Head:
        return cls(handoff.generation, str(handoff.seal), handoff.thread_id, handoff.agent_id)


@dataclass(frozen=True, slots=True)
class ObjectReceipt:
    """A committed generation: its number, its seal, where it was written, and what did not follow it."""

    generation: int
    checksum: str
    where: str  # the generation's object: a path, or s3://bucket/prefix/history/…
    created_at: dt.datetime
    #: the readable copies left behind, each said (another writer's newer head, a store error after the commit)
    problems: tuple[str, ...] = ()
    #: how many generations other writers committed first (each a create refused, then the head read again)
    conflicts: int = 0
    signed_by: str | None = None
    thread_id: str = ""
    #: the generation's signature, armored (``-----BEGIN SSH SIGNATURE-----`` …), or None
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class ObjectRestored:
    """The newest generation that verified, where it was read from, and what was passed over on the way."""

    handoff: Handoff
    where: str
    problems: tuple[str, ...] = ()

    @property
    def generation(self) -> int:
        """The restored generation."""
        return self.handoff.generation


class ObjectThread:
    """A thread whose generations are objects under *target*: ``s3://bucket/prefix`` or a folder (or a
    :class:`~handoff_files.storage.Storage`).

    :param agent_id: the agent that writes (default: the thread's, else the thread id).
    :param thread_id: the thread's id (default: the newest generation's; required for the first save).
    :param signing_key: signs each generation's seal and its ``state.json`` (None: unsigned).
    :param retries: how many times a save that lost the race for its generation number reads the
        head again and tries the next number; 0 (the default) raises at the first lost race.
    :param keep: how many generations ``history/`` keeps after a save, the new one included (None: all).
    :param algorithm: the seal's digest for new generations.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | Storage,
        *,
        agent_id: str | None = None,
        thread_id: str | None = None,
        signing_key: SigningKey | None = None,
        retries: int = 0,
        keep: int | None = None,
        algorithm: sealing.Algorithm = sealing.DEFAULT_ALGORITHM,
    ) -> None:
        self.storage = target if isinstance(target, Storage) else open_storage(target)
        self.agent_id = None if agent_id is None else check_id(agent_id, "agent_id", self.storage.where)
        self.thread_id = None if thread_id is None else check_id(thread_id, "thread_id", self.storage.where)
        self.signing_key = signing_key
        if retries < 0:
            raise HandoffValidationError(self.storage.where, f"retries must be 0 or more, not {retries}")
        self.retries = retries
        if keep is not None and keep < 1:
            raise HandoffValidationError(self.storage.where, f"keep must be 1 or more (or None: all), not {keep}")
        self.keep = keep
        if algorithm not in sealing.ALGORITHMS:
            msg = f"unknown seal algorithm {algorithm!r}; use one of {', '.join(sealing.ALGORITHMS)}"
            raise HandoffValidationError(self.storage.where, msg)
        self.algorithm: sealing.Algorithm = algorithm
        #: the id a first save takes when none is given (a ``HandoffStore``'s: the URL's last part, as a folder's name)
        self.name_id: str | None = None
        # what this writer last committed or read, and the etags its copies were left at: while no other
        # writer moved them, a save reads neither again (objects are created once, never changed in place)
        self._head: _Head | None = None
        self._copies = ReadableCopies(self.storage)
        self._identity = BucketIdentity(self.storage)

    def __repr__(self) -> str:
        return f"ObjectThread({self.storage.where!r})"

    def generations(self) -> list[int]:
        """The generation numbers ``history/`` holds, newest first (objects of other names passed over)."""
        return sorted((n for key in self.storage.list(HISTORY) if (n := generation_of(key))), reverse=True)

    def save(self, content: Handoff | HandoffContent | Mapping[str, Any], *, after: int | None = None) -> ObjectReceipt:
        """Seal *content* as the next generation and commit it: its object created only if no writer made it first.

        :param after: the generation *content* was made from: commit it as the one after, or not at all
            (a compare-and-set: no retry, whatever ``retries`` says). 0 for a thread's first generation.
        :raises ObjectExistsError: if another writer committed that generation first (past ``retries``),
            or the head is no longer *after*.
        :raises HandoffValidationError: if the content is not five valid layers, or is too large to read back.
        :raises HandoffError: if the store refuses or cannot be reached (nothing committed then).
        """
        layers = layers_of(content, Path(self.storage.where))
        if after is not None and (not isinstance(after, int) or isinstance(after, bool) or after < 0):
            raise HandoffValidationError(
                self.storage.where, f"after must be a generation number (0 or more), not {after!r}"
            )
        conflicts = 0
        while True:
            numbers = self.generations()
            newest = numbers[0] if numbers else 0
            if after is not None and newest > after:
                msg = f"the head is generation {newest}, not {after}: another writer saved since; restore, save again"
                raise ObjectExistsError(self._where(after + 1), msg)
            if after is not None and newest < after:
                msg = f"there is no generation {after} here to save after (the head is {newest})"
                raise HandoffValidationError(self.storage.where, msg)
            head = self._head_at(numbers)
            generation = newest + 1
            document, seal_text, data, created_at = self._sealed(layers, generation, head)
            key = generation_key(generation)
            try:
                self.storage.create(key, data)
                # committed: the listing that tells a stale number goes out with the copies and retention
                # (a stale commit's copies are moved on again by the retry; retention works from the
                # listing before the commit: what it removes is keep behind this generation, so behind the head)
                fresh = self._copies.pool().submit(self._fresh, generation, key, numbers)
                self._head = _Head(generation, seal_text, document["thread_id"], document["agent_id"])
                prune = partial(self._prune, [generation, *numbers], document["thread_id"], (generation, seal_text))
                problems = self._copies.follow(document, seal_text, data, self.signing_key, prune)
                fresh.result()
            except ObjectExistsError as exc:
                self._head = None
                conflicts += 1
                if after is not None or conflicts > self.retries:
                    msg = (
                        f"generation {generation} was committed by another writer first ({conflicts} lost race(s)); "
                        "restore to see it and save again, or give retries=N to do so at once"
                    )
                    raise ObjectExistsError(exc.path, msg) from None
                continue
            break
        signed_by = self.signing_key.fingerprint if self.signing_key is not None else None
        where = self._where(generation)
        signature = document["seal"].get("signature")
        thread_id = document["thread_id"]
        return ObjectReceipt(
            generation, seal_text, where, created_at, tuple(problems), conflicts, signed_by, thread_id, signature
        )

    def _head_at(self, numbers: list[int]) -> _Head | None:
        """The newest of *numbers* that verifies: the one this writer last committed or read if it is still
        the newest (a generation's object never changes), else read from the store."""
        if not numbers:
            return None
        if self._head is not None and self._head.generation == numbers[0]:
            return self._head
        found = self.newest_of(numbers)[0]
        return None if found is None else _Head.of(found)

    def _fresh(self, generation: int, key: str, before: list[int]) -> list[int]:
        """The generations after *key* was created, unless it was a number retention had removed.

        Retention removes a generation only once ``keep`` newer ones exist, so a create succeeds on a
        removed number only when those exist already, and the listing after the write sees them: the
        stale generation is removed again and the save goes on as a lost race, so no number is ever
        used twice. A generation only a few behind the newest is left alone: other writers committed
        after it, on it. Without ``keep`` this writer prunes nothing and lists nothing again (give
        every writer of a thread the same ``keep``).

        :raises ObjectExistsError: if *generation* was stale (``keep`` or more newer ones are there).
        """
        if self.keep is None:
            return [generation, *before]  # nothing pruned by this writer: no listing needed
        numbers = self.generations()
        if numbers and numbers[0] - generation >= self.keep:
            self.storage.remove(key)
            msg = f"generation {numbers[0]} is newer: this writer read the head before it was saved"
            raise ObjectExistsError(self._where(generation), msg)
        return numbers

    def _prune(self, numbers: list[int], thread_id: str, saved: tuple[int, str]) -> list[str]:
        """Remove the generations past the newest ``keep`` of *numbers*, the retention record made to cover them
        first (written at *saved*, this save's generation and seal); what could not be removed."""
        if self.keep is None or len(numbers) <= self.keep:
            return []
        try:
            keep_bucket_record(
                self.storage,
                thread_id=thread_id,
                keep=self.keep,
                kept_from=numbers[self.keep - 1],
                generation=saved[0],
                seal=saved[1],
                key=self.signing_key,
                oldest=min(numbers),
            )
        except HandoffError as exc:
            return [f"nothing pruned: the retention record could not be written ({exc.reason})"]
        problems = []
        for number in numbers[self.keep :]:
            try:
                self.storage.remove(generation_key(number))
            except HandoffError as exc:
                problems.append(f"{generation_key(number)} not removed (kept past keep={self.keep}): {exc.reason}")
        return problems

    def restore(self, *, refuse: Callable[[Handoff], str | None] | None = None) -> ObjectRestored:
        """The newest generation in ``history/`` that verifies; each newer one that does not is named in ``problems``.

        :param refuse: why a generation that verifies is not to be returned all the same (an untrusted
            signer on a pinned thread), or None if it is: it is passed over and named as a damaged one is.
        :raises NoHandoffError: if no generation verifies (or there is none).
        """
        numbers = self.generations()
        if not numbers:
            refuse_other(self.storage.where, self.storage.list(""))
            raise NoHandoffError(self.storage.where, "no generation here yet (history/ is empty)")
        found, problems = self.newest_of(numbers, refuse)
        if found is None:
            msg = "no generation here verifies: " + "; ".join(problems)
            raise NoHandoffError(self.storage.where, msg)
        self._head = _Head.of(found)
        return ObjectRestored(found, self._where(found.generation), tuple(problems))

    def newest_of(
        self, numbers: list[int], refuse: Callable[[Handoff], str | None] | None = None
    ) -> tuple[Handoff | None, list[str]]:
        """The newest of *numbers* (a listing, newest first) that verifies, is this thread's (not another's
        copied in) and *refuse* does not refuse; why each newer one was passed over."""
        problems: list[str] = []
        self._identity.ahead(numbers, self._copies.pool())  # the oldest read with the newest: one round trip
        for number in numbers:
            key = generation_key(number)
            where = self._where(number)
            try:
                stored = self.storage.read(key, limit=MAX_FILE_BYTES)
                handoff = decode(stored.data, where, origin="store")
                damage = signature_damage(handoff, where)
            except HandoffNotFoundError:
                problems.append(f"{key} was listed, then gone")
                continue
            except StorageUnavailableError:
                raise  # the store did not answer: nothing is known of this generation, never passed over as damaged
            except HandoffError as exc:
                problems.append(f"{key} passed over: {exc.reason}")
                continue
            why = damage or self.misplaced(handoff, number, numbers) or (refuse(handoff) if refuse else None)
            if why is None:
                return handoff, problems
            problems.append(f"{key} passed over: {why}")
        return None, problems

    def misplaced(self, handoff: Handoff, number: int, numbers: list[int]) -> str | None:
        """Why *handoff* (verified, read as generation *number* of the listing *numbers*) is not this thread's
        generation *number*: another number's copy, or another thread's copied in; None if it is."""
        if handoff.generation != number:
            return f"its name says generation {number}, it holds generation {handoff.generation}"
        return self._identity.foreign(handoff, numbers, self._known())

    def thread_of(self, numbers: list[int]) -> str | None:
        """The thread's id, as restore goes by it (see :mod:`~handoff_files.thread.bucketidentity`), for the
        listing *numbers*; None if nothing says."""
        known = self._known() or self._identity.own(numbers)
        return None if known is None else known[0]

    def _known(self) -> Known | None:
        """The thread's id as this store last saved or read it, and so; or None. (Never the id it was given: a
        store given another thread's id is refused by its save, "the thread id here is …", never forked.)"""
        return None if self._head is None else (self._head.thread_id, "the id this store last saved or read")

    def _sealed(
        self, layers: dict[str, Any], generation: int, head: _Head | None
    ) -> tuple[dict[str, Any], str, bytes, dt.datetime]:
        """Generation *generation*'s document after *head*, sealed (and signed), its seal, bytes and time."""
        where = self.storage.where
        created_at = utc_now()
        if generation > MAX_INT:
            msg = f"the newest is {generation_key(generation - 1)}: the next passes the 64-bit limit (planted?)"
            raise HandoffValidationError(where, msg)
        thread_id = self.thread_id or (head.thread_id if head is not None else self.name_id)
        if thread_id is None:
            msg = "the first save of a thread on object storage needs its id: ObjectThread(…, thread_id=…)"
            raise HandoffValidationError(where, msg)
        if head is not None and head.thread_id != thread_id:
            msg = f"the thread id here is {head.thread_id!r}, not {thread_id!r}; adopt it into a new thread instead"
            raise HandoffValidationError(where, msg)
        if head is not None and self.agent_id and head.agent_id != self.agent_id:  # as a folder's thread refuses
            msg = (
                f"thread belongs to agent {head.agent_id!r}, not {self.agent_id!r}; adopt it into a new thread instead"
            )
            raise HandoffValidationError(where, msg)
        document: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "agent_id": self.agent_id or (head.agent_id if head is not None else thread_id),
            "thread_id": thread_id,
            "generation": generation,
            "created_at": iso_z(created_at, timespec="microseconds"),
            "parent": None if head is None else head.seal,
            "lineage": {"adopted_from": None, "migrated_from": None},
            **layers,
        }
        try:
            digest = sealing.digest(sealing.canonical(document), self.algorithm)
        except ValueError as exc:
            raise HandoffValidationError(where, f"not valid handoff content: {exc}") from exc
        document["seal"] = {"algorithm": self.algorithm, "digest": digest}
        if self.signing_key is not None:
            sign_document(document, self.signing_key)
        data = file_bytes(document, "json")
        if len(data) > MAX_FILE_BYTES:
            msg = f"handoff would be {len(data):,} bytes, over the {MAX_FILE_BYTES:,}-byte limit; trim context or data"
            raise HandoffValidationError(where, msg)
        return document, f"{self.algorithm}:{digest}", data, created_at

    def _where(self, generation: int) -> str:
        return f"{self.storage.where}/{generation_key(generation)}"
