"""What the kill parts check after a kill: nothing acknowledged lost, nothing torn returned, no temp file left."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.torture import Row
from bench.torture.child import Ack, content, open_store, size_of
from handoff_files import Handoff, HandoffContent, HandoffError, NoHandoffError, Restored, load
from handoff_files.foundation.atomic import stray_temps
from handoff_files.thread.journal import Journal

__all__ = [
    "ALLOWED_PROBLEMS",
    "CHANNELS",
    "Before",
    "Ledger",
    "channels",
    "check_after_kill",
    "check_chain",
    "check_journal",
    "check_next_save",
    "journal_seals",
    "leftovers",
    "matches",
    "seal_text",
]

#: What a restore may report after a kill: a save cut short between its commit and its last write
#: leaves channels behind, or a torn journal tail. Besides, a channel no save has written yet may
#: be missing (see :data:`CHANNELS`). Anything else fails.
ALLOWED_PROBLEMS: Final = ("interrupted", "torn line")
#: The channels a restore reports missing, by the words it uses; once seen, one must never go missing.
CHANNELS: Final = {
    "handoff.json": "handoff.json is missing",
    "state.json": "state.json is missing",
    "journal": "the journal has no save recorded",
}


def leftovers(directory: Path) -> list[Path]:
    """Temp files in the thread and ``history/``: the store's own pattern, and any dot-file ending in ``.tmp``."""
    found = set(stray_temps(directory)) | set(stray_temps(directory / "history"))
    for folder in (directory, directory / "history"):
        # wider than the store's pattern: a temp file it does not recognise is still left behind
        if folder.is_dir():
            found.update(path for path in folder.iterdir() if path.name.startswith(".") and path.name.endswith(".tmp"))
    return sorted(found)


def seal_text(handoff: Handoff) -> str | None:
    """A handoff's seal as receipts and ``parent`` name it (``algorithm:digest``)."""
    return None if handoff.seal is None else str(handoff.seal)


def matches(handoff: Handoff, writer: str, step: int, size: int) -> bool:
    """Whether *handoff* holds exactly the five layers *writer* saves at *step* (the envelope aside)."""
    expected = HandoffContent.model_validate(content(writer, step, size)).model_dump(mode="json")
    return handoff.content().model_dump(mode="json") == expected


@dataclass(frozen=True, slots=True)
class Before:
    """What a killed writer built on, and what it acknowledged before the kill."""

    generation: int  # the generation restored before the writer started (0: an empty thread)
    seal: str | None
    writer: str  # the name its content carries
    sizes: tuple[int, ...]
    first_step: int  # the step of its first save
    acks: Sequence[Ack]


@dataclass(slots=True)
class Ledger:
    """Every generation the parent saw acknowledged or restored, with its seal, and the files already verified."""

    seals: dict[int, str] = field(default_factory=dict)
    verified: set[tuple[str, int, int, int]] = field(default_factory=set)  # (path, inode, size, mtime)
    bad: set[tuple[str, int, int, int]] = field(default_factory=set)  # files reported once already
    conflicts: set[int] = field(default_factory=set)  # generations reported with two seals already
    channels: set[str] = field(default_factory=set)  # channels seen written: they may never go missing

    def record(self, generation: int, seal: str | None, row: Row, where: str) -> None:
        """Note *generation*'s seal; a second, different seal for it means a generation was reused."""
        if seal is None:
            return
        known = self.seals.setdefault(generation, seal)
        if known != seal and generation not in self.conflicts:
            self.conflicts.add(generation)
            row.lost += 1
            row.fail(f"generation {generation} was sealed twice ({known[:20]}…, then {seal[:20]}…): {where}")


def _unexpected(restored: Restored, present: set[str]) -> list[str]:
    allowed = [*ALLOWED_PROBLEMS, *(said for name, said in CHANNELS.items() if name not in present)]
    return [problem for problem in restored.problems if not any(ok in problem for ok in allowed)]


def channels(directory: Path) -> set[str]:
    """The channels of :data:`CHANNELS` the thread holds now."""
    present = {name for name in ("handoff.json", "state.json") if (directory / name).exists()}
    if Journal(directory).last("saved")[0] is not None:
        present.add("journal")
    return present


def check_after_kill(
    directory: Path, before: Before, row: Row, ledger: Ledger, *, keep: int, durability: str, where: str
) -> Restored | None:
    """Open the thread as a restarted agent would, restore, and check it against what was acknowledged.

    Counts into *row*: ``leftovers`` (temp files after the open), ``lost`` (an acknowledged
    generation not restored, or reused), ``torn`` (a restore or file holding anything but a save
    that was acknowledged or attempted). Returns what was restored (None for a thread with nothing).
    """
    acks = before.acks
    expected = list(range(before.generation + 1, before.generation + 1 + len(acks)))
    if [ack.generation for ack in acks] != expected:
        row.lost += 1
        row.fail(f"acknowledged generations {[a.generation for a in acks]}, expected {expected}: {where}")
    for ack in acks:
        ledger.record(ack.generation, ack.checksum, row, where)
    store = open_store(directory, keep=keep, durability=durability)  # opening removes a dead writer's temps
    left = leftovers(directory)
    if left:
        row.leftovers += len(left)
        row.fail(f"temp files left after opening the thread: {[path.name for path in left]}: {where}")
    last_generation, last_seal = (acks[-1].generation, acks[-1].checksum) if acks else (before.generation, before.seal)
    try:
        restored = store.restore()
    except NoHandoffError as exc:
        if last_generation:
            row.lost += 1
            row.fail(f"nothing restorable, generation {last_generation} was acknowledged ({exc}): {where}")
        return None
    generation, seal = restored.generation, seal_text(restored.handoff)
    allowed_sources = ("primary", "history", "journal") if durability == "journal" else ("primary", "history")
    if restored.source not in allowed_sources or seal is None:
        row.lost += 1
        row.fail(f"restored {restored.source} generation {generation} (unsealed or rebuilt): {where}")
        return restored
    unexpected = _unexpected(restored, ledger.channels)
    if unexpected:
        row.fail(f"restore reported {unexpected}: {where}")
    _judge(restored, before, (last_generation, last_seal), row, where)
    if generation == last_generation and seal != last_seal:
        ledger.conflicts.add(generation)  # counted as lost already
    ledger.record(generation, seal, row, where)
    ledger.channels |= channels(directory)
    newest_file = _check_files(directory, row, ledger, where)
    if newest_file > generation:
        row.lost += 1
        row.fail(f"a file holds generation {newest_file}, but restore returned {generation}: {where}")
    return restored


def _judge(restored: Restored, before: Before, last: tuple[int, str | None], row: Row, where: str) -> None:
    """Compare the restored generation with the last acknowledged one (or the one before the writer)."""
    generation, seal = restored.generation, seal_text(restored.handoff)
    last_generation, last_seal = last
    if generation < last_generation:
        row.lost += 1
        row.fail(f"restored generation {generation}, older than acknowledged {last_generation}: {where}")
    elif generation == last_generation:
        if seal != last_seal:
            row.lost += 1
            row.fail(f"generation {generation} restored with another seal than acknowledged: {where}")
    elif generation == last_generation + 1:
        # a save the kill cut after its commit (or before its ACK reached the pipe): it must be
        # exactly the save that was attempted, chained to the last acknowledged one
        step = before.first_step + len(before.acks)
        if not matches(restored.handoff, before.writer, step, size_of(before.sizes, step)):
            row.torn += 1
            row.fail(f"restored generation {generation} is not {before.writer}'s step {step}: {where}")
        elif restored.handoff.parent != last_seal:
            row.torn += 1
            row.fail(f"restored generation {generation}'s parent is not generation {last_generation}: {where}")
    else:
        row.torn += 1
        row.fail(f"restored generation {generation}, never attempted (last acknowledged {last_generation}): {where}")


def _check_files(directory: Path, row: Row, ledger: Ledger, where: str) -> int:
    """Load the primary and every history generation not verified before; returns the newest generation seen."""
    newest = 0
    history = directory / "history"
    names = sorted(os.listdir(history)) if history.is_dir() else []
    paths = [history / name for name in names if name.endswith(".json") and name[:-5].isdigit()]
    for path in [directory / "handoff.json", *paths]:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        named = int(path.name[:-5]) if path.parent == history else 0
        if key in ledger.verified:
            newest = max(newest, named)
            continue
        if key in ledger.bad:
            continue
        try:
            handoff = load(path)
        except HandoffError as exc:
            ledger.bad.add(key)
            row.torn += 1
            row.fail(f"{path.relative_to(directory)} does not verify ({exc.reason}): {where}")
            continue
        if named and handoff.generation != named:
            row.torn += 1
            row.fail(f"{path.relative_to(directory)} holds generation {handoff.generation}: {where}")
        ledger.record(handoff.generation, seal_text(handoff), row, f"{path.name}, {where}")
        ledger.verified.add(key)
        newest = max(newest, handoff.generation)
    return newest


def check_next_save(
    directory: Path, restored: Restored | None, row: Row, *, keep: int, durability: str, where: str
) -> None:
    """Save once more after a kill: it must work, take the next generation and chain to what was restored."""
    store = open_store(directory, keep=keep, durability=durability)
    try:
        receipt = store.save(content("next", 1, 1000))
        again = open_store(directory, keep=keep, durability=durability).restore()
    except HandoffError as exc:
        row.fail(f"the save after the kill failed: {exc}: {where}")
        return
    generation = restored.generation if restored is not None else 0
    parent = seal_text(restored.handoff) if restored is not None else None
    if receipt.generation != generation + 1:
        row.fail(f"the save after restoring generation {generation} became {receipt.generation}: {where}")
    if (again.source, again.generation, seal_text(again.handoff)) != ("primary", receipt.generation, receipt.checksum):
        row.fail(f"after the next save, restore gave {again.source} generation {again.generation}: {where}")
    elif again.handoff.parent != parent:
        row.torn += 1
        row.fail(f"the next save's parent is not the restored generation's seal: {where}")
    if again.problems:
        row.fail(f"after the next save, restore still reports {list(again.problems)}: {where}")


def check_chain(directory: Path, row: Row, *, contiguous: bool, where: str) -> dict[int, Handoff]:
    """Load every history generation; each ``parent`` must be its predecessor's seal (journal seals fill gaps).

    :param contiguous: also fail on a generation missing from ``history/`` that no journal line
        accounts for (a thread that pruned nothing).
    :returns: the generations, by number.
    """
    found: dict[int, Handoff] = {}
    history = directory / "history"
    for name in sorted(os.listdir(history)) if history.is_dir() else []:
        if not (name.endswith(".json") and name[:-5].isdigit()):
            continue
        try:
            found[int(name[:-5])] = load(history / name)
        except HandoffError as exc:
            row.torn += 1
            row.fail(f"history/{name} does not verify ({exc.reason}): {where}")
    seals = journal_seals(directory)
    numbers = sorted(found)
    for number in numbers:
        parent = found[number].parent
        if number == 1:
            if parent is not None:
                row.torn += 1
                row.fail(f"generation 1 names a parent: {where}")
            continue
        before = found.get(number - 1)
        known = seal_text(before) if before is not None else seals.get(number - 1)
        if known is None:
            if contiguous and number != numbers[0]:
                row.lost += 1
                row.fail(f"generation {number - 1} is in neither history/ nor the journal: {where}")
        elif parent != known:
            row.torn += 1
            row.fail(f"generation {number}'s parent is not generation {number - 1}'s seal: {where}")
    return found


def journal_seals(directory: Path) -> dict[int, str]:
    entries, _ = Journal(directory).entries()
    return {
        entry.generation: entry.seal for entry in entries if entry.event == "saved" and entry.generation and entry.seal
    }


def check_journal(directory: Path, row: Row, ledger: Ledger, where: str) -> int:
    """Every journal line must check out (a torn tail aside) and no generation be saved with two seals.

    :returns: the number of "saved" lines read.
    """
    entries, problems = Journal(directory).entries()
    for problem in problems:
        if "torn line" not in problem:
            row.torn += 1
            row.fail(f"journal: {problem}: {where}")
    saved = 0
    for entry in entries:
        if entry.event == "saved" and entry.generation is not None:
            saved += 1
            ledger.record(entry.generation, entry.seal, row, f"journal, {where}")
    return saved
