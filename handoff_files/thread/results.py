"""Results: what the store hands back from a save, a restore, a history listing and a migration."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from handoff_files.format.model import Handoff
from handoff_files.thread.signatures import SignatureReport

__all__ = ["Acknowledgement", "HistoryEntry", "MigrationReport", "Restored", "SaveReceipt"]


@dataclass(frozen=True, slots=True)
class SaveReceipt:
    """What a save made durable: returned only once its generation is on disk (its commit point).

    ``unfinished`` names the copies a failure after the commit point left unwritten, each as
    "path: reason" (the primary, ``state.json``, the journal line, or a journal-first save's
    ``history/`` copy): the generation exists and restores; ``handoff doctor --repair`` writes
    them. Never save again because of them: that would make a second generation.
    ``signed_by`` is the fingerprint (``SHA256:…``) of the key that signed the generation, or None.
    On object storage ``path`` is the generation's key under the thread and ``url`` its URL.
    """

    generation: int
    checksum: str
    path: Path
    created_at: dt.datetime
    problems: tuple[str, ...] = ()
    unfinished: tuple[str, ...] = ()
    signed_by: str | None = None
    url: str | None = None

    @property
    def where(self) -> str:
        """Where the generation was written, as a person names it: its path, or its URL on object storage."""
        return self.url or str(self.path)


@dataclass(frozen=True, slots=True)
class Restored:
    """A verified handoff and where it came from, with what was wrong on the way.

    ``source`` is ``"primary"``, ``"history"``, ``"journal"`` (a journal-first save's line) or
    ``"rebuilt"`` for a thread's restore, ``"file"`` for a file read directly. ``edited`` is True
    only for a person's valid but unsealed edit, handed out because the caller asked for it (a
    watcher, or ``restore(accept_edit=…)``). On object storage ``path`` is the object's key under the
    thread and ``url`` its URL (:attr:`where` is either, as a person names it).
    """

    handoff: Handoff
    source: Literal["primary", "history", "journal", "rebuilt", "file"]
    path: Path
    problems: tuple[str, ...] = ()
    edited: bool = False
    #: who signed it, as this user's ``allowed_signers`` sees it; None: unsigned (or not looked up)
    signature: SignatureReport | None = None
    url: str | None = None

    @property
    def generation(self) -> int:
        """The restored generation."""
        return self.handoff.generation

    @property
    def where(self) -> str:
        """Where it was read from, as a person names it: its path, or its URL on object storage."""
        return self.url or str(self.path)


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """An accepted acknowledgement: the generation the agent took in, and whether it gave the briefing's code."""

    generation: int
    source: str
    with_code: bool


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What :meth:`HandoffStore.migrate` did (or, with ``dry_run``, would do).

    ``handoff`` is the migrated content (None when the file was already current); ``receipt``
    the new generation (None on a dry run or when nothing was to be done).
    """

    source: Path
    original_version: str
    handoff: Handoff | None
    notes: tuple[str, ...]
    receipt: SaveReceipt | None
    dry_run: bool


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One file in a thread: a generation in ``history/`` or the primary, verified or not."""

    generation: int | None
    path: Path
    current: bool
    checksum: str | None
    created_at: dt.datetime | None
    problem: str | None
    #: who signed the generation, as ``allowed_signers`` sees it (None: unsigned, or it does not verify)
    signature: SignatureReport | None = None
    #: the object's URL on object storage (``path`` is then its key under the thread)
    url: str | None = None

    @property
    def where(self) -> str:
        """The file's path, or the object's URL on object storage."""
        return self.url or str(self.path)
