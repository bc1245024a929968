"""The journal: an append-only ``journal.jsonl``, one human-readable, self-checking JSON line per event."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import orjson

from handoff_files.format.codec import MAX_FILE_BYTES, parse_json
from handoff_files.format.seal import self_check
from handoff_files.foundation.atomic import fsync_dir, write_all
from handoff_files.foundation.clock import iso_z
from handoff_files.foundation.errors import HandoffError, HandoffNotFoundError, HandoffWriteError, UncertainWriteError
from handoff_files.foundation.safe_open import open_regular
from handoff_files.thread.layout import JOURNAL_NAME, ThreadDir
from handoff_files.thread.tail import cut_torn_tail, first_line, read_backwards, read_whole, torn

__all__ = [
    "DOCUMENT",
    "EVENTS",
    "JOURNAL_NAME",
    "SAVE_EVENTS",
    "Entry",
    "Journal",
    "JournalProblem",
    "first_entry",
    "torn",
]

#: The events a journal records.
EVENTS: Final = frozenset(
    {
        "saved",
        "restored",
        "resumed",
        "unacknowledged",
        "hook",
        "created",
        "pruned",
        "migrated",
        "sealed",
        "repaired",
        "adopted",
        "exported",
        "transferred",
        "rotated",
        "document",
    }
)
#: The journal events that record a new generation.
SAVE_EVENTS: Final = ("saved", "sealed", "migrated", "adopted")
#: Past this size the journal is rotated: the current file becomes ``journal.1.jsonl`` (the one
#: before that is dropped), so the journal never grows without bound. A rotation makes a
#: journal-first save's copies durable first (a few fsyncs), so it is kept rare, as SQLite keeps
#: its WAL checkpoints (every 1,000 pages, ~4 MB).
ROTATE_BYTES: Final = 4 << 20
#: ... or, for long lines, past this many lines of the size being appended: a thread of 1 MB
#: journal-first saves rotates every eighth save, not every one.
ROTATE_LINES: Final = 8
#: A journal-first save writes two lines at once: a "document" line holding the whole sealed
#: document under this key, then its ordinary, small event line. The event line commits it.
DOCUMENT: Final = "document"
_CHECK_LEN: Final = 16
# a document line holds one handoff (at most MAX_FILE_BYTES as its file) written compactly, whose
# escapes (\u0001 where YAML writes \x01) can make it longer than its file: room for twice that
_LINE_LIMIT: Final = 2 * MAX_FILE_BYTES
#: The largest journal file this library writes: it rotates once past ROTATE_BYTES, or past
#: ROTATE_LINES lines of the size being appended, and one append adds a document line and its
#: event line. A larger one (an 8 GiB sparse file) was put there: it is refused, never read whole.
MAX_JOURNAL_BYTES: Final = ROTATE_BYTES + (ROTATE_LINES + 2) * (_LINE_LIMIT + (64 << 10))
_APPEND: Final = os.O_RDWR | os.O_APPEND


def _check(fields: dict[str, Any]) -> str:
    # a journal-first save's line carries its whole document, which its own seal (named in the
    # line, so covered by this check) verifies: hashing it twice would double the save's cost
    return self_check({key: value for key, value in fields.items() if key != DOCUMENT})[:_CHECK_LEN]


def _encode(fields: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps({**fields, "check": _check(fields)}) + b"\n"
    except (TypeError, ValueError) as exc:  # orjson.JSONEncodeError is a TypeError
        msg = f"a journal line must be JSON: {exc}"
        raise ValueError(msg) from exc


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal line: the event, when, which generation and seal, and a line in plain words."""

    event: str
    at: str
    generation: int | None
    seal: str | None
    summary: str
    extra: dict[str, Any]

    @property
    def journal_first(self) -> bool:
        """Whether this is a journal-first save's line (its document is in the line before it)."""
        return self.extra.get("durability") == "journal"

    def brief(self) -> dict[str, Any]:
        """The line's fields for a person: a journal-first save's document is named, not repeated."""
        fields = self.fields()
        if DOCUMENT in fields:
            fields[DOCUMENT] = f"(the whole sealed generation {self.generation}, as a journal-first save commits it)"
        return fields

    def fields(self) -> dict[str, Any]:
        """The line's JSON object, without its check."""
        return {
            "at": self.at,
            "event": self.event,
            "generation": self.generation,
            "seal": self.seal,
            "summary": self.summary,
            **self.extra,
        }


@dataclass(frozen=True, slots=True)
class JournalProblem:
    """A journal line that does not read: a torn tail (cut by the next append, or the doctor) or a damaged line (lost).

    ``line`` is the damaged line's number in its file (None for a torn tail); ``what`` says it for a person.
    """

    kind: Literal["torn", "damaged"]
    path: Path
    line: int | None
    what: str

    def __str__(self) -> str:
        return self.what


def _torn_problem(path: Path) -> JournalProblem:
    what = f"{path.name} ends in a torn line (a crash mid-append); the next append cuts it"
    return JournalProblem("torn", path, None, what)


def _parse_line(raw: bytes) -> Entry | None:
    """An entry if *raw* is a whole, self-consistent line; None if it is damaged."""
    try:
        fields = parse_json(raw, JOURNAL_NAME, limit=_LINE_LIMIT)
    except (HandoffError, RecursionError):  # the strict reader refuses it: the line is damaged
        return None
    if not isinstance(fields, dict) or not isinstance(fields.get("check"), str):
        return None
    try:
        if _check(fields) != fields["check"]:
            return None
    except (TypeError, ValueError, RecursionError):  # an integer past 64 bits, nesting orjson refuses …
        return None
    known = {"at", "event", "generation", "seal", "summary", "check"}
    generation = fields.get("generation")
    return Entry(
        str(fields.get("event")),
        str(fields.get("at")),
        generation if isinstance(generation, int) and not isinstance(generation, bool) else None,
        fields.get("seal") if isinstance(fields.get("seal"), str) else None,
        str(fields.get("summary", "")),
        {k: v for k, v in fields.items() if k not in known},
    )


class Journal:
    """A thread's journal file. Appends are durable (fdatasync) and made by writers under the lock.

    :param directory: the thread directory, or its :class:`ThreadDir`.
    """

    def __init__(self, directory: str | os.PathLike[str] | ThreadDir) -> None:
        layout = directory if isinstance(directory, ThreadDir) else ThreadDir(directory)
        self.path = layout.journal
        self.previous = layout.previous_journal
        self._layout = layout

    def append(
        self,
        event: str,
        *,
        generation: int | None,
        seal: str | None,
        summary: str,
        before_rotate: Callable[[], None] | None = None,
        document: dict[str, Any] | None = None,
        sync: bool = True,
        at: str | None = None,
        **extra: Any,
    ) -> Entry:
        """Append one event line durably (the caller holds the writers' lock); a torn tail left by a crash is cut first.

        :param before_rotate: called before a rotation drops ``journal.1.jsonl`` (a journal-first
            store makes its files durable there, since older lines may be all that holds them).
        :param document: a journal-first save's whole sealed document: written as a "document"
            line just before the event line, in the same write and the same fdatasync. Only the
            event line after it commits it; a reader parses the long line only when it needs it.
        :param sync: False skips the fdatasync: for a full save's line, whose generation is already
            durable in ``history/`` (a crash may lose the line, never the generation).
        :param at: the line's time (default: now), for a line whose other fields cover it (a proof).
        :raises UncertainWriteError: if the lines were written but their flush failed.
        :raises HandoffWriteError: if the lines cannot be written.
        """
        entry = Entry(event, at or iso_z(), generation, seal, " ".join(summary.split())[:300], extra)
        line = _encode(entry.fields())
        if document is not None:
            held = Entry("document", entry.at, generation, seal, f"the whole sealed generation {generation}", {})
            line = _encode({**held.fields(), DOCUMENT: document}) + line
        written = False
        try:
            # a regular file of ours only: a FIFO would hang the save, a hard link would let a cut or
            # an append change a file outside the thread, a planted 8 GiB file would be scanned whole
            fd, st = open_regular(self.path, _APPEND | os.O_CREAT, max_bytes=MAX_JOURNAL_BYTES)
            created = st.st_size == 0  # new (or empty): its name is made durable with its directory
            try:
                # cut a torn tail first, so neither this line nor a rotation carries it along
                size = os.fstat(fd).st_size if cut_torn_tail(fd, st.st_size) else st.st_size
                if size > max(ROTATE_BYTES, ROTATE_LINES * len(line)):
                    os.close(fd)
                    fd = -1
                    if before_rotate is not None:
                        before_rotate()
                    self._rotate()
                    created = True
                    fd, _ = open_regular(self.path, _APPEND, max_bytes=MAX_JOURNAL_BYTES)
                write_all(fd, line)
                written = True
                if sync:
                    os.fdatasync(fd)
            finally:
                if fd >= 0:
                    os.close(fd)
            if created and sync:
                fsync_dir(self.path.parent)  # a new file's name is durable only with its directory's
        except OSError as exc:
            if written:  # whole lines readers see, but not known to be on disk
                msg = f"appended, but the flush failed, so it may not survive a crash: {exc.strerror or exc}"
                raise UncertainWriteError(self.path, msg) from exc
            msg = f"cannot append to the journal: {exc.strerror or exc}"
            raise HandoffWriteError(self.path, msg) from exc
        return entry

    def cut_torn_tails(self) -> list[Path]:
        """Cut a torn last line off both journal files, durably. Writes; call while holding the writers' lock.

        :returns: the files that were cut.
        :raises HandoffWriteError: if a file cannot be cut.
        """
        cut: list[Path] = []
        for path in (self.path, self.previous):
            try:
                fd, _ = open_regular(path, os.O_RDWR, max_bytes=MAX_JOURNAL_BYTES)
            except HandoffNotFoundError:
                continue
            try:
                if cut_torn_tail(fd):
                    os.fsync(fd)
                    cut.append(path)
            except OSError as exc:
                msg = f"cannot cut the journal's torn line: {exc.strerror or exc}"
                raise HandoffWriteError(path, msg) from exc
            finally:
                with contextlib.suppress(OSError):  # the cut was fsynced, or its error is raised
                    os.close(fd)
        return cut

    def _rotate(self) -> None:
        # drop the older lines, then move the current file to a free name: a rename over an
        # existing file would start its writeback first (see foundation/swap.py); a crash between
        # the two leaves the current file where it was; first, each generation only in the lines dropped is copied back
        from handoff_files.thread.copyback import copy_back  # noqa: PLC0415 -- rare, and it imports this module

        saves = (
            (entry.generation, entry.seal, document) for entry, document in self.committed_documents(self.previous)
        )
        copy_back(saves, self.previous, self._layout, None, dropping=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.previous)
        self.path.rename(self.previous)
        self._start_after_rotation()

    def _start_after_rotation(self) -> None:
        """Start a fresh journal with a line saying where the older lines went; both names made durable."""
        fields = Entry("rotated", iso_z(), None, None, f"older lines moved to {self.previous.name}", {}).fields()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            write_all(fd, _encode(fields))
            os.fdatasync(fd)
        finally:
            os.close(fd)
        fsync_dir(self.path.parent)  # always: a full save's append syncs nothing, a later commit lands here

    def last(self, *events: str) -> tuple[Entry | None, list[str]]:
        """The newest verified line of any of *events*, read from the end (a restore never reads it all).

        :returns: the entry (or None) and the problems met on the way (damaged lines).
        """
        problems: list[str] = []
        if torn(self.path):
            problems.append(_torn_problem(self.path).what)
        for raw, entry in self._backwards(problems):
            if entry is None:
                # quoted as text a person can read: undecodable bytes as \xff, control characters escaped
                text = "".join(
                    c if c.isprintable() else ascii(c)[1:-1] for c in raw[:60].decode(errors="backslashreplace")
                )
                problems.append(f"{self.path.name}: a damaged line was skipped: {text}{'…' if len(raw) > 60 else ''}")
                continue
            if entry.event in events:
                return entry, problems
        return None, problems

    def committed_documents(self, *paths: Path) -> Iterator[tuple[Entry, dict[str, Any] | None]]:
        """Journal-first save lines, newest first, each with the document line written with it (or None).

        A save line whose document line is missing, damaged or another save's is yielded with None:
        a crash can keep the short save line of an unfinished write and lose the long line before
        it, and such a save was never acknowledged (its fdatasync never returned).
        """
        waiting: Entry | None = None
        for _, entry in self._backwards(None, paths):
            if entry is None:
                continue
            if entry.event == "document":
                if waiting is not None:
                    held = entry.extra.get(DOCUMENT)
                    same = (entry.generation, entry.seal) == (waiting.generation, waiting.seal)
                    yield waiting, dict(held) if same and isinstance(held, dict) else None
                    waiting = None
                continue
            if entry.journal_first:
                if waiting is not None:
                    yield waiting, None
                waiting = entry
        if waiting is not None:
            yield waiting, None

    def _backwards(
        self, refused: list[str] | None = None, paths: tuple[Path, ...] = ()
    ) -> Iterator[tuple[bytes, Entry | None]]:
        """Lines newest first (*paths*, default both files); a refused file is noted in *refused* and skipped."""
        for path in paths or (self.path, self.previous):
            try:
                lines = read_backwards(path, max_bytes=MAX_JOURNAL_BYTES, max_line=_LINE_LIMIT)
            except HandoffNotFoundError:
                continue
            except HandoffError as exc:  # a FIFO, a planted 8 GiB file …: the files restore, not this
                if refused is not None:
                    refused.append(f"{path.name}: skipped: {exc.reason}")
                continue
            for raw in lines:
                yield raw, _parse_line(raw)

    def entries(self) -> tuple[list[Entry], list[str]]:
        """Every line, oldest first (both files), with problems for damaged lines and where they are.

        A torn last line is reported as torn; damage in the middle is reported with its line number.
        """
        entries, problems = self.check()
        return entries, [problem.what for problem in problems]

    def check(self) -> tuple[list[Entry], list[JournalProblem]]:
        """Every line, oldest first (both files), and each line that does not read, by kind.

        :returns: the entries, and a :class:`JournalProblem` for each torn tail and damaged line.
        """
        entries: list[Entry] = []
        problems: list[JournalProblem] = []
        for path in (self.previous, self.path):
            with contextlib.suppress(HandoffNotFoundError):
                data = read_whole(path, max_bytes=MAX_JOURNAL_BYTES)
                lines = data.split(b"\n")
                tail = lines.pop() if lines else b""
                for number, raw in enumerate(lines, 1):
                    entry = _parse_line(raw)
                    if entry is None:
                        what = f"{path.name} line {number} is damaged (its check does not match)"
                        problems.append(JournalProblem("damaged", path, number, what))
                    else:
                        entries.append(entry)
                if tail:
                    problems.append(_torn_problem(path))
        return entries, problems


def first_entry(path: Path) -> Entry | None:
    """The journal's first line, if it reads (a thread's "created" line: the format ``init`` chose).

    Reads one line at most, never the whole journal; a missing, empty or damaged first line is None.
    """
    raw = first_line(path, 64 * 1024)
    return _parse_line(raw) if raw is not None else None
