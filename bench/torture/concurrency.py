"""Torture part ``concurrency``: 8 writers save into one thread while readers read, and lock holders are SIGKILLed.

Writers and readers are forked from the fork server (:mod:`bench.torture.child`). Every few dozen
acknowledged saves the parent finds the process holding the writers' lock (in ``/proc/locks``),
kills it, and starts it again to continue from its last acknowledged step. At the end every
acknowledgement is checked against ``history/`` (kept whole), the generations against each other
and their chain, and the readers' reports: a read fails on any error or on an answer that is not a
sealed generation from an allowed source.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.torture import Options, Row
from bench.torture.child import Ack, Child, Zygote, open_store, size_of
from bench.torture.kill_checks import Ledger, check_chain, check_journal, leftovers, matches, seal_text
from handoff_files import Handoff, HandoffError

__all__ = ["READERS", "WRITERS", "Writer", "check_readers", "check_saves", "lock_holder", "run"]

WRITERS: Final = 8
READERS: Final = 3
#: Padding per save, cycled by step: mostly small saves, a large one now and then.
SIZES: Final = (1000, 1000, 1000, 100_000)
#: Reads the readers must make while the writers run, per save each writer makes: evidence that they
#: raced the writers, not a safety check (every read is checked whatever their number). It was 100
#: until the writers stopped listing history/ at each save: the writing window shrank, and at the
#: full count (8 x 1,000 saves, 8,000+ files kept) an idle run read 63,048 times in 228 s of writing
#: (~8 reads per save; the readers' own restore lists history/ when it opens the store).
READS_PER_SAVE: Final = 50
#: A holder is killed after every KILL_EVERY acknowledged saves (drawn anew each time).
KILL_EVERY: Final = (10, 60)
#: A writer sleeps past a waiter's longest poll (20 ms) after this many saves, so the lock changes hands.
YIELD_EVERY: Final = 10
PROGRESS_SECONDS: Final = 5.0


def lock_holder(directory: Path) -> int | None:
    """The pid holding the thread's writers' lock now, from ``/proc/locks`` (the lock is a flock)."""
    try:
        st = (directory / ".lock").stat()
        table = Path("/proc/locks").read_text("ascii", "replace")
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        # "3: FLOCK  ADVISORY  WRITE 4242 00:1f:1234 0 EOF"; a "->" line is a waiter, not the holder
        words = line.split()
        if len(words) > 5 and words[1] == "FLOCK" and words[5] == device:
            return int(words[4])
    return None


@dataclass(slots=True)
class Writer:
    """One writer across its restarts: the process now running, and every save it acknowledged."""

    name: str
    acks: list[Ack] = field(default_factory=list)
    child: Child | None = None
    starts: int = 0
    done: bool = False


def check_saves(
    directory: Path, acks: Mapping[str, list[Ack]], count: int, row: Row, *, durability: str, where: str
) -> dict[int, Handoff]:
    """Check every acknowledged save against the thread; returns the generations ``history/`` holds.

    Fails on: a writer short of *count* saves or going back, a generation acknowledged twice, an
    acknowledged generation missing or sealed otherwise (``lost``), a generation holding a save
    nobody attempted, a broken chain (``torn``), a restore of the end state that is not clean.
    """
    ledger = Ledger()
    owners = _check_acks(acks, count, row, ledger, where)
    thread = check_chain(directory, row, contiguous=durability == "full", where=where)
    for name, listed in acks.items():
        for ack in listed:
            handoff = thread.get(ack.generation)
            if handoff is None or seal_text(handoff) != ack.checksum:
                row.lost += 1
                row.fail(f"{name}'s step {ack.step} (generation {ack.generation}) is not in history/: {where}")
            elif not matches(handoff, name, ack.step, size_of(SIZES, ack.step)):
                row.torn += 1
                row.fail(f"generation {ack.generation} does not hold {name}'s step {ack.step}: {where}")
    for generation, handoff in thread.items():
        # one not acknowledged: a save its writer was killed in after the commit, so some writer's step
        if generation not in owners and not _attempted(handoff):
            row.torn += 1
            row.fail(f"generation {generation} holds no save a writer attempted: {where}")
    check_journal(directory, row, ledger, where)
    _check_end_state(directory, max(thread, default=0), row, durability=durability, where=where)
    return thread


def _check_acks(acks: Mapping[str, list[Ack]], count: int, row: Row, ledger: Ledger, where: str) -> dict[int, str]:
    """Each writer's acknowledgements: steps 1..count, generations rising, none shared; returns their owners."""
    owners: dict[int, str] = {}
    for name, listed in acks.items():
        steps = [ack.step for ack in listed]
        if steps != list(range(1, count + 1)):
            row.fail(f"{name} acknowledged steps {steps[:5]}… ({len(steps)}), not 1..{count}: {where}")
        generations = [ack.generation for ack in listed]
        if any(a >= b for a, b in itertools.pairwise(generations)):
            row.fail(f"{name}'s generations do not strictly increase: {where}")
        for ack in listed:
            if ack.generation in owners:
                row.lost += 1
                row.fail(f"generation {ack.generation} acknowledged to {owners[ack.generation]} and {name}: {where}")
            owners[ack.generation] = name
            ledger.record(ack.generation, ack.checksum, row, where)
    return owners


def _attempted(handoff: Handoff) -> bool:
    data = handoff.state.data
    writer, step = data.get("writer"), data.get("step")
    return isinstance(writer, str) and isinstance(step, int) and matches(handoff, writer, step, size_of(SIZES, step))


def _check_end_state(directory: Path, newest: int, row: Row, *, durability: str, where: str) -> None:
    """Once every writer is done, a fresh store leaves no temp file and restores the newest generation cleanly."""
    store = open_store(directory, keep=1, durability=durability)
    left = leftovers(directory)
    if left:
        row.leftovers += len(left)
        row.fail(f"temp files left after opening the thread: {[path.name for path in left]}: {where}")
    try:
        restored = store.restore()
    except HandoffError as exc:
        row.lost += 1
        row.fail(f"the end state does not restore: {exc}: {where}")
        return
    if (restored.source, restored.generation, restored.problems) != ("primary", newest, ()):
        row.fail(f"the end state restores {restored.source} {restored.generation} {restored.problems}: {where}")


class _Run:
    """One run: the fork server, the writers across their restarts, the kills."""

    def __init__(self, options: Options, zygote: Zygote, row: Row) -> None:
        self.options = options
        self.zygote = zygote
        self.row = row
        self.rng = random.Random(options.seed)
        self.directory = options.workdir / "thread"
        self.keep = WRITERS * options.count * 2 + 100  # history/ keeps every generation, killed saves' too
        self.writers = {f"w{number}": Writer(f"w{number}") for number in range(1, WRITERS + 1)}

    def start(self, writer: Writer) -> None:
        """Start *writer* (again): it continues after its last acknowledged step."""
        done = len(writer.acks)
        writer.child = self.zygote.start(
            "writer",
            f"{writer.name}.{writer.starts}",
            dir=str(self.directory),
            writer=writer.name,
            start=done + 1,
            count=self.options.count - done,
            sizes=list(SIZES),
            keep=self.keep,
            durability=self.options.durability,
            yield_every=YIELD_EVERY,
        )
        writer.starts += 1

    def reap(self) -> None:
        """Collect the writers that ended; start again the ones killed before their last save."""
        for writer in self.writers.values():
            child = writer.child
            if child is None or child.code is None:
                continue
            writer.acks += child.acks
            del self.zygote.children[child.tag]
            writer.child = None
            if child.errors or child.code not in (0, -signal.SIGKILL):
                self.row.fail(f"{child.tag} ended with exit code {child.code}: {child.errors[:1]}")
                writer.done = True
            elif len(writer.acks) >= self.options.count:
                writer.done = True
            else:
                self.start(writer)

    def acked(self) -> int:
        """Saves acknowledged so far, by every writer."""
        return sum(len(w.acks) + (len(w.child.acks) if w.child else 0) for w in self.writers.values())

    def drive(self) -> None:
        """Run the writers to the end, killing whoever holds the lock every few dozen saves."""
        for writer in self.writers.values():
            self.start(writer)
        next_kill = self.rng.randint(*KILL_EVERY)
        reported = time.monotonic()
        while not all(writer.done for writer in self.writers.values()):
            self.zygote.pump(0.002)
            self.reap()
            acked = self.acked()
            if acked >= next_kill:
                holder = lock_holder(self.directory)
                live = {w.child.pid for w in self.writers.values() if w.child is not None and w.child.code is None}
                # readers take the lock for a moment too (housekeeping): only writers are killed
                if holder in live:
                    os.kill(holder, signal.SIGKILL)
                    self.row.kills += 1
                    next_kill = acked + self.rng.randint(*KILL_EVERY)
            if time.monotonic() - reported > PROGRESS_SECONDS:
                reported = time.monotonic()
                total = WRITERS * self.options.count
                self.options.progress(f"{acked:,}/{total:,} saves, {self.row.kills} holders killed")


def check_readers(readers: list[Child], wanted: int, row: Row) -> tuple[int, int]:
    """Every reader reported, none failed, and together they read at least *wanted* times; returns (reads, failed)."""
    reads = sum(reader.reads[0] for reader in readers if reader.reads)
    failed = sum(reader.reads[1] for reader in readers if reader.reads)
    for reader in readers:
        for what in reader.errors + reader.fails:
            row.fail(f"{reader.tag}: {what}")
        if reader.reads is None:
            row.fail(f"{reader.tag} never reported (exit code {reader.code})")
    if failed:
        row.fail(f"{failed} of {reads:,} reads failed")
    if reads < wanted:
        row.fail(f"only {reads:,} reads while the writers ran; the part asks for {wanted:,}")
    return reads, failed


def run(options: Options) -> Row:
    """8 writers x ``options.count`` saves, lock holders killed; ``cases`` counts saves, ``kills`` holders killed."""
    row = Row("concurrency")
    stop = options.workdir / "stop"
    sources = ["primary", "history", "journal"] if options.durability == "journal" else ["primary", "history"]
    started = time.monotonic()
    readers: list[Child] = []
    writing = 0.0
    try:
        with Zygote(options.workdir / "children.log") as zygote:
            job = _Run(options, zygote, row)
            readers += [
                zygote.start(
                    "reader",
                    f"reader{number}",
                    dir=str(job.directory),
                    stop=str(stop),
                    sources=sources,
                    keep=job.keep,
                    durability=options.durability,
                )
                for number in range(1, READERS + 1)
            ]
            job.drive()
            writing = time.monotonic() - started
            stop.touch()
            for reader in readers:
                zygote.wait(reader, timeout=60)
    except (TimeoutError, RuntimeError) as exc:  # the fork server died or a child hung
        row.fail(f"the part stopped early: {exc}")
        return row
    reads, failed = check_readers(readers, READS_PER_SAVE * options.count, row)
    acks = {name: writer.acks for name, writer in job.writers.items()}
    row.cases = sum(map(len, acks.values()))
    thread = check_saves(
        job.directory, acks, options.count, row, durability=options.durability, where=f"seed {options.seed}"
    )
    owner = {ack.generation: name for name, listed in acks.items() for ack in listed}
    switches = sum(a != b for a, b in itertools.pairwise(owner[g] for g in sorted(owner)))
    row.notes = (
        f"{reads:,} reads ({failed} failed) in {writing:.0f} s of writing; {row.cases:,} saves, "
        f"{len(thread) - len(owner)} more committed by killed holders; the lock changed hands {switches:,} times"
    )
    options.progress(row.notes)
    return row
