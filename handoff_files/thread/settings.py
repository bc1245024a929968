"""A thread's settings: the directory, format, seal, history depth, ids, durability and lock a store works with."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from handoff_files.format import seal as sealing
from handoff_files.format.codec import Format
from handoff_files.foundation.errors import HandoffError, HandoffValidationError, InvalidNameError
from handoff_files.foundation.lock import OnLockWait, WriterLock
from handoff_files.foundation.names import check_id, derive_id
from handoff_files.thread.journal import Journal, first_entry
from handoff_files.thread.kind import Kind, check_kind
from handoff_files.thread.layout import EXTENSIONS, ThreadDir
from handoff_files.thread.signatures import KeySource

if TYPE_CHECKING:
    from handoff_files.thread.signatures import KeyChoice

__all__ = [
    "DURABILITIES",
    "Durability",
    "MissingIdsError",
    "ThreadSettings",
    "check_durability",
    "choose_format",
    "no_id_reason",
]

#: When a save is acknowledged. ``"journal"`` (the default) is SQLite's WAL promise at one flush,
#: ``"full"`` the stronger one at two. ``"full"``: once its copy in ``history/`` is durable (file and
#: directory fsync); the primary, ``state.json`` and the journal line follow unflushed, and a
#: restore takes ``history/`` when they did not survive a crash. ``"journal"``: once one
#: journal line holding the whole sealed document is durable (one fsync, as a database's
#: write-ahead log commits); the files are then written without fsync, and a restore takes the
#: journal's document when they did not survive a crash.
Durability = Literal["full", "journal"]
DURABILITIES: Final[tuple[Durability, ...]] = ("full", "journal")


class MissingIdsError(InvalidNameError):
    """A new thread was given no ids and its folder's name gives none (callers say how to give them)."""


def check_durability(durability: Durability, path: str | os.PathLike[str]) -> Durability:
    """Return *durability* if it is one of :data:`DURABILITIES`.

    :param durability: the value to check (it may come from untyped code).
    :param path: the thread directory, named in the error.
    :returns: *durability*.
    :raises HandoffValidationError: if it is not.
    """
    if durability not in DURABILITIES:
        msg = f"durability must be one of {', '.join(map(repr, DURABILITIES))}, not {durability!r}"
        raise HandoffValidationError(path, msg)
    return durability


@dataclass(frozen=True, slots=True)
class ThreadSettings:
    """What a commit and a restore need to know of one thread, and nothing else of the store.

    :class:`~handoff_files.thread.store.HandoffStore` builds one with :meth:`checked`; the
    commit, recovery and head modules take it instead of the store.

    :param layout: the thread directory's paths.
    :param format: the primary's format.
    :param algorithm: the seal's digest.
    :param keep: how many generations ``history/`` keeps, the current one included.
    :param agent_id: the agent id this writer insists on (None: the previous generation's).
    :param thread_id: the thread id this writer insists on (None: the previous generation's).
    :param durability: when saves are acknowledged, unless a save says otherwise.
    :param lock: the thread's writers' lock.
    :param kind: the kind of thread this store writes as (see :mod:`handoff_files.thread.kind`).
    """

    layout: ThreadDir
    format: Format
    algorithm: sealing.Algorithm
    keep: int
    agent_id: str | None
    thread_id: str | None
    durability: Durability
    lock: WriterLock
    #: the id the directory's name gives (derived when the name itself is not a valid id)
    name_id: str = ""
    #: the (agent, thread) ids ``init`` recorded in the journal's "created" line, for the first save
    recorded: tuple[str | None, str | None] = (None, None)
    kind: Kind | None = None
    #: the key saves are signed with (found once; see :mod:`~handoff_files.thread.signatures`)
    keys: KeySource | None = None

    @classmethod
    def checked(
        cls,
        layout: ThreadDir,
        *,
        format: Format | None,  # noqa: A002 -- the store's documented keyword
        keep: int,
        agent_id: str | None,
        thread_id: str | None,
        algorithm: sealing.Algorithm,
        lock_timeout: float,
        durability: Durability,
        on_lock_wait: OnLockWait | None = None,
        kind: Kind | None = None,
        signing_key: KeyChoice = None,
    ) -> ThreadSettings:
        """Check a store's arguments against each other and the directory, and build its settings.

        Reads the directory (which primary exists), writes nothing.

        :param format: wanted format; default: the existing primary's, else JSON.
        :param lock_timeout: seconds a writer waits for another.
        :param on_lock_wait: told whom a writer waits for (see :class:`~handoff_files.foundation.lock.WriterLock`).
        :param kind: the kind of thread the store writes as (None: a plain one).
        :param signing_key: which key signs saves (see :class:`~handoff_files.thread.signatures.KeySource`).
        :returns: the settings.
        :raises HandoffValidationError: for a bad *keep*, *algorithm*, *durability*, *format* or *kind*, or
            a *format* that is not the existing primary's.
        :raises InvalidNameError: if an id given is invalid, or the directory holds no thread yet, is
            given no ids, and no id can be made from its name.
        :raises HandoffError: if the directory is a file, holds both primaries, or cannot be searched.
        """
        path = layout.path
        try:
            not_a_folder = path.exists() and not path.is_dir()
        except OSError as exc:  # a fault while looking is an error naming the thread, never a bare OSError
            msg = f"cannot look at the thread's directory: {exc.strerror or exc}"
            raise HandoffError(path, msg) from exc
        if not_a_folder:
            msg = "is not a directory: give the thread's directory"  # as `handoff run` has always said
            raise HandoffError(path, msg)
        if keep < 1:
            msg = f"keep must be 1 or more (history/ holds the current generation too), not {keep}"
            raise HandoffValidationError(path, msg)
        if algorithm not in sealing.ALGORITHMS:
            msg = f"unknown seal algorithm {algorithm!r}; use one of {', '.join(sealing.ALGORITHMS)}"
            raise HandoffValidationError(path, msg)
        durability = check_durability(durability, path)
        kind = check_kind(kind, path)
        agent_id = None if agent_id is None else check_id(agent_id, "agent_id", path)
        thread_id = None if thread_id is None else check_id(thread_id, "thread_id", path)
        name_id = derive_id(path.name) or ""
        if not name_id and thread_id is None and not layout.holdings():
            # a new thread takes its ids from the folder's name: refuse it now, before anything is
            # created; a thread that holds files has its ids in them, and is read whatever its name
            raise MissingIdsError(path, _no_id_message(path))
        fmt = choose_format(layout, format)
        lock = WriterLock(path, timeout=lock_timeout, on_wait=on_lock_wait)
        recorded = _recorded_ids(layout) if agent_id is None or thread_id is None else (None, None)
        keys = KeySource(signing_key, path)
        return cls(layout, fmt, algorithm, keep, agent_id, thread_id, durability, lock, name_id, recorded, kind, keys)

    @property
    def path(self) -> Path:
        """The thread directory."""
        return self.layout.path

    @property
    def primary(self) -> Path:
        """The primary file, in this thread's format."""
        return self.layout.primary(self.format)

    @property
    def journal(self) -> Journal:
        """The thread's journal."""
        return Journal(self.layout)

    def ids(self, agent_id: str | None, thread_id: str | None) -> tuple[str, str]:
        """The agent and thread ids the next generation carries.

        :param agent_id: the previous generation's agent id, if any.
        :param thread_id: the previous generation's thread id, if any.
        :returns: this writer's ids where it insists on them, else the previous generation's, else
            the ones ``init`` recorded, else (agent) the thread id given, else the id the directory's name gives.
        :raises HandoffValidationError: if this writer insists on a thread id the thread does not have.
        :raises InvalidNameError: if an id must come from the directory's name and none can be made of it.
        """
        if self.thread_id and thread_id and self.thread_id != thread_id:
            msg = f"the thread id is {thread_id!r}, not {self.thread_id!r}; adopt it into a new thread instead"
            raise HandoffValidationError(self.path, msg)
        thread = self.thread_id or thread_id or self.recorded[1]
        # a first save given a thread id only: the agent's is the same, as a folder's name gives both
        agent = self.agent_id or agent_id or self.recorded[0] or self.thread_id or self.recorded[1]
        if (agent is None or thread is None) and not self.name_id:
            raise MissingIdsError(self.path, _no_id_message(self.path))
        return (agent or self.name_id, thread or self.name_id)

    def created_line(self, *, format_given: bool) -> dict[str, Any] | None:
        """The journal's "created" line for ``init``: the format, ids and kind chosen (None: nothing to record).

        Recorded only in a thread with nothing in it yet, and only what was chosen: a format other
        than JSON, ids, or a kind; a later store opened without them keeps them for the first save
        (and a LangGraph thread's kind, for every save: see :mod:`handoff_files.thread.kind`).
        """
        ids = {key: value for key, value in (("agent_id", self.agent_id), ("thread_id", self.thread_id)) if value}
        yaml = format_given and self.format != "json"
        if not (ids or yaml or self.kind) or self.layout.holdings():
            return None
        said = [f"its primary will be {self.format.upper()}"] if yaml else []
        said += [f"its {key.removesuffix('_id')} id is {value!r}" for key, value in ids.items()]
        said += ["it is a LangGraph checkpointer's thread"] if self.kind else []
        chosen = {**({"format": self.format} if yaml else {}), **ids, **({"kind": self.kind} if self.kind else {})}
        return {"summary": f"thread created; {', '.join(said)}", **chosen}

    def record_created(self, *, format_given: bool) -> None:
        """Append the "created" line :meth:`created_line` gives, if any (call under the writers' lock). Writes.

        :raises HandoffWriteError: if the line cannot be written.
        """
        line = self.created_line(format_given=format_given)
        if line is not None:
            self.journal.append("created", generation=None, seal=None, **line)

    @property
    def derived_note(self) -> str | None:
        """What a first save says when the folder's name is not an id itself (None when it is)."""
        if self.name_id == self.layout.path.name or (self.agent_id and self.thread_id):
            return None
        return (
            f"the folder name {self.layout.path.name!r} is not a valid id, so the ids were made from it: "
            f"{self.name_id!r} (give the thread and agent ids to choose them)"
        )


def no_id_reason(name: str) -> str:
    """Why a new thread in a folder called *name* has no ids (what to give is the caller's to say)."""
    return f"no valid id can be made from the folder name {name!r}"


def _no_id_message(path: Path) -> str:
    return f"{no_id_reason(path.name)}: give the ids (thread_id= and agent_id=)"


def _recorded_ids(layout: ThreadDir) -> tuple[str | None, str | None]:
    """The (agent, thread) ids ``init`` recorded, while no primary exists yet; (None, None) if none."""
    if layout.primary_formats():
        return None, None  # the thread's generations carry its ids from now on
    created = first_entry(layout.journal)
    if created is None or created.event != "created":
        return None, None
    agent, thread = (created.extra.get(key) for key in ("agent_id", "thread_id"))
    return (
        check_id(agent, "agent_id", layout.path) if isinstance(agent, str) else None,
        check_id(thread, "thread_id", layout.path) if isinstance(thread, str) else None,
    )


def choose_format(layout: ThreadDir, wanted: Format | None) -> Format:
    """The existing primary's format, checked against the one *wanted*; JSON for a new thread.

    :raises HandoffError: if the thread holds both a JSON and a YAML primary.
    :raises HandoffValidationError: if *wanted* is not a format, or not the existing primary's.
    """
    existing = layout.primary_formats()
    if len(existing) > 1:
        msg = "holds both handoff.json and handoff.yaml; move one away so the primary is unambiguous"
        raise HandoffError(layout.path, msg)
    if wanted is not None and wanted not in EXTENSIONS:
        msg = f"format must be 'json' or 'yaml', not {wanted!r}"
        raise HandoffValidationError(layout.path, msg)
    if existing and wanted is not None and existing[0] != wanted:
        have, want = existing[0].upper(), wanted.upper()
        msg = f"the thread's primary is {have}, not {want}: leave the format out, or ask for {existing[0]}"
        raise HandoffValidationError(layout.path, msg)
    if existing:
        return existing[0]
    if wanted is None:  # a thread made by `init --format yaml` keeps that format for its first save
        created = first_entry(layout.journal)
        chosen = created.extra.get("format") if created is not None and created.event == "created" else None
        return chosen if chosen in EXTENSIONS else "json"
    return wanted
