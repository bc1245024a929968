"""Simulated power loss: every crash state a model of the disk allows during traced saves, checked by a real restore.

The write path is traced, not guessed: real saves run on a real directory through a
:class:`Recorder` (an :class:`~bench.torture.oslayer.Layer`), which logs each filesystem operation
(create, mkdir, write and pwrite with their offsets and bytes, ftruncate, rename/replace, exchange, link,
unlink, and fsync/fdatasync of a file or of a directory) and the moments saves were acknowledged
(``save()`` returned). The disk model, in the manner of the ALICE and CrashMonkey studies:

* the durable state starts as a snapshot of the directory before the traced saves;
* an fsync (or fdatasync) of a file makes that file's earlier writes and truncations durable;
  an fsync of a directory makes that directory's earlier creates, mkdirs, renames, links and
  unlinks durable; a rename carries the inode, whose content is whatever of its data is durable;
* a crash after *k* operations leaves the durable state plus any subset of the operations before
  *k* that were not yet durable, applied in program order, so a later operation may persist while
  an earlier one does not (the reorderings ALICE found); a write that persists may persist whole,
  only a prefix of it (block-aligned past one block), or only as the size it gave the file, the new
  bytes zeros or garbage.

Each crash point's combinations are enumerated when there are at most :data:`ENUMERATE_LIMIT`,
and sampled (seeded) beyond that; identical crash states are checked once. Each state is written
into a fresh real directory, then a real ``HandoffStore(dir).restore()`` must return a generation at
least as new as the last one acknowledged before the crash, exactly as saved; the store's opening
must leave no temp file; and one more save must succeed with a higher generation, chained to the
restored seal. Two deliberately broken writers (the directory fsyncs, or the file fsyncs, turned
into no-ops during the traced saves) go through the same model: losing acknowledged generations
there is the proof that the model can catch a writer that is not durable.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import shutil
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from bench.torture import Options, Row
from bench.torture.child import content
from bench.torture.faults import store_options
from bench.torture.oslayer import DIR, REAL, Broken, Op, Recorder, parent
from handoff_files import Handoff, HandoffError, HandoffStore, NoHandoffError, Restored, load
from handoff_files.foundation.atomic import stray_temps
from handoff_files.thread import copyback
from handoff_files.thread import journal as journal_module
from handoff_files.thread.history import load_generation
from handoff_files.thread.journal import ROTATE_BYTES, Journal

__all__ = [
    "BROKEN_WRITERS",
    "SCENARIOS",
    "Disk",
    "Op",
    "Recorder",
    "Scenario",
    "Tally",
    "Trace",
    "check_state",
    "crash_states",
    "run",
    "run_states",
    "trace",
]

#: At most this many combinations of a crash point's pending operations are enumerated; past it, sampled.
ENUMERATE_LIMIT: Final = 128
BLOCK: Final = 4096
THREAD: Final = "thread-1"
#: The broken writers, each of which the model must catch losing acknowledged generations.
BROKEN_WRITERS: Final[tuple[Broken, ...]] = ("no-dir-fsync", "no-file-fsync")
#: What a crash left of a pending operation: ``full``, ``drop``; for a write also ``prefix:N`` (its
#: first N bytes), ``blocks:MASK`` (only the file blocks whose bit is set, the others zeros or old
#: bytes), ``zeros`` or ``garbage`` (the size it gave the file, none of its bytes).
Outcome = str
#: Past this many blocks a write's block masks are a few patterns, not all of them.
_ALL_MASKS_UP_TO: Final = 4
_GARBAGE: Final = b"\xa5Z\x00}\xff{"  # what stale blocks may hold: no newline, bytes JSON cannot start with

# -- the model ---------------------------------------------------------------------------------


def outcomes(op: Op) -> tuple[Outcome, ...]:
    """What a crash may leave of *op* while it is not durable."""
    if op.kind != "write":
        return ("full", "drop")
    found: list[Outcome] = ["full", "drop"]
    cuts = block_cuts(op)
    if cuts:
        # a write across blocks: its file blocks persist independently
        found += [f"prefix:{cut}" for cut in cuts]
        every = (1 << (len(cuts) + 1)) - 1
        if len(cuts) + 1 <= _ALL_MASKS_UP_TO:
            masks = list(range(1, every))
        else:
            masks = [every & 0x5555_5555_5555, every & 0xAAAA_AAAA_AAAA, every - 1, every >> 1]
        found += [f"blocks:{mask}" for mask in masks if mask not in (0, every)]
    elif len(op.data) > 1:
        found.append(f"prefix:{len(op.data) // 2}")  # a torn sector
    if op.extends:
        found += ["zeros", "garbage"]
    return tuple(dict.fromkeys(found))


def block_cuts(op: Op) -> list[int]:
    """Where the file's block boundaries fall inside a write, as offsets into its bytes."""
    first = (op.offset // BLOCK + 1) * BLOCK
    return [boundary - op.offset for boundary in range(first, op.offset + len(op.data), BLOCK)]


@dataclass
class Disk:
    """A directory tree in memory: names (relative paths) to inodes (``DIR`` for a directory), inodes to bytes."""

    names: dict[str, int] = field(default_factory=dict)
    data: dict[int, bytes] = field(default_factory=dict)

    @classmethod
    def snapshot(cls, root: Path) -> Disk:
        """Read a real tree (hard links share an inode), using the real ``os`` functions."""
        disk = cls({".": DIR})
        inodes: dict[int, int] = {}
        pending = ["."]
        while pending:
            directory = pending.pop()
            for name in sorted(REAL["listdir"](root / directory)):
                relative = name if directory == "." else f"{directory}/{name}"
                st = REAL["lstat"](root / relative)
                if stat.S_ISDIR(st.st_mode):
                    disk.names[relative] = DIR
                    pending.append(relative)
                elif stat.S_ISREG(st.st_mode):
                    if st.st_ino not in inodes:
                        inodes[st.st_ino] = len(inodes)
                        # the lock file's bytes are its holder's advisory record (foundation/lock.py),
                        # written outside the modelled calls and never read for durability
                        advisory = name == ".lock"
                        disk.data[inodes[st.st_ino]] = b"" if advisory else (root / relative).read_bytes()
                    disk.names[relative] = inodes[st.st_ino]
                else:
                    msg = f"{root / relative}: only directories and regular files are modelled"
                    raise RuntimeError(msg)
        return disk

    def copy(self) -> Disk:
        """An independent copy (bytes are immutable, so the dicts are enough)."""
        return Disk(dict(self.names), dict(self.data))

    def new_inode(self) -> int:
        """A number no inode of this disk has."""
        return max(self.data, default=-1) + 1

    def apply(self, op: Op, outcome: Outcome = "full") -> None:
        """Apply what a crash left of *op*; operations whose directory does not exist leave nothing."""
        if outcome == "drop" or op.kind == "sync":
            return
        if op.kind == "write":
            self.data[op.inode] = _written(self.data.get(op.inode, b""), op, outcome)
        elif op.kind == "truncate":
            old = self.data.get(op.inode, b"")
            self.data[op.inode] = old[: op.offset].ljust(op.offset, b"\0")
        elif op.kind in ("create", "mkdir"):
            if self.names.get(parent(op.path)) == DIR and op.path not in self.names:
                self.names[op.path] = DIR if op.kind == "mkdir" else op.inode
                if op.kind == "create":
                    self.data.setdefault(op.inode, b"")
        elif op.kind in ("rename", "link"):
            if self.names.get(parent(op.dest)) != DIR or self.names.get(op.dest) == DIR:
                return
            if op.kind == "rename" and self.names.get(op.path) == op.inode:
                del self.names[op.path]
            self.names[op.dest] = op.inode
            self.data.setdefault(op.inode, b"")
        elif op.kind == "exchange":
            if self.names.get(parent(op.dest)) != DIR or self.names.get(parent(op.path)) != DIR:
                return
            self.names[op.path], self.names[op.dest] = op.other, op.inode
            self.data.setdefault(op.inode, b"")
            self.data.setdefault(op.other, b"")
        elif op.kind == "unlink" and self.names.get(op.path) == op.inode:
            del self.names[op.path]

    def key(self) -> tuple[tuple[str, int, int], ...]:
        """What identifies the state on disk: each name with its content's length and hash.

        ``hash()`` of a bytes object is computed once and cached in it, and states share their
        unchanged files' bytes, so this stays cheap over thousands of states; a collision could
        only make one state go unchecked, never a wrong state pass.
        """
        return tuple(
            (name, -1, 0) if inode == DIR else (name, len(self.data[inode]), hash(self.data[inode]))
            for name, inode in sorted(self.names.items())
        )

    def materialise(self, root: Path) -> None:
        """Write the tree under *root* (files 0600, directories 0700, shared inodes as hard links)."""
        written: dict[int, Path] = {}
        for name, inode in sorted(self.names.items(), key=lambda item: (item[0].count("/"), item[0])):
            target = root / name
            if inode == DIR:
                target.mkdir(mode=0o700, exist_ok=True)
            elif inode in written:
                os.link(written[inode], target)
            else:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    os.write(fd, self.data[inode])
                finally:
                    os.close(fd)
                written[inode] = target


def _written(old: bytes, op: Op, outcome: Outcome) -> bytes:
    """A file's bytes after *op* persisted as *outcome* (see :data:`Outcome`)."""
    end = op.offset + len(op.data)
    if outcome in ("zeros", "garbage"):
        # the size reached disk, the new blocks did not: what was there keeps its bytes, the rest reads as fill
        if end <= len(old):
            return old
        fill = b"\0" if outcome == "zeros" else _GARBAGE
        return old + (fill * (end // len(fill) + 1))[len(old) : end]
    if outcome.startswith("prefix:"):
        return _overlay(old, op.offset, op.data[: int(outcome.removeprefix("prefix:"))])
    if outcome.startswith("blocks:"):
        mask = int(outcome.removeprefix("blocks:"))
        edges = [0, *block_cuts(op), len(op.data)]
        result = _written(old, op, "zeros")
        for index, (start, stop) in enumerate(itertools.pairwise(edges)):
            if mask >> index & 1:
                result = _overlay(result, op.offset + start, op.data[start:stop])
        return result
    return _overlay(old, op.offset, op.data)


def _overlay(old: bytes, offset: int, data: bytes) -> bytes:
    return old[:offset].ljust(offset, b"\0") + data + old[offset + len(data) :]


# -- tracing scenarios -----------------------------------------------------------------------


Setup = Literal["", "torn-primary", "torn-journal", "stray-temps", "full-journal", "rotating"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A thread as the traced saves find it, and the saves traced."""

    name: str
    earlier: int  # generations saved (untraced) before
    traced: int  # saves traced
    size: int = 200  # padding bytes per save
    keep: int = 10
    format: Literal["json", "yaml"] = "json"
    #: what a crash or a person left before the traced saves: the primary torn in half, a journal
    #: line cut short, a dead writer's temp files, or a journal past its rotation size; "rotating":
    #: the traced saves rotate the journal every ROTATE_LINES saves (the older file's kept
    #: generations are then only in history/, whose copies a journal-first save left unflushed)
    setup: Setup = ""


#: One traced round each, cycled.
SCENARIOS: Final = (
    Scenario("saves on a thread", earlier=2, traced=2),
    Scenario("first saves of a new thread", earlier=0, traced=2),
    Scenario("multi-block saves", earlier=1, traced=2, size=10_000),
    Scenario("saves that prune history", earlier=2, traced=2, keep=2),
    Scenario("a save over a torn primary", earlier=2, traced=1, setup="torn-primary"),
    Scenario("a save after a crash mid-append", earlier=2, traced=1, setup="torn-journal"),
    Scenario("a save after a dead writer's temp files", earlier=2, traced=1, setup="stray-temps"),
    Scenario("a save that rotates the journal", earlier=1, traced=2, setup="full-journal"),
    Scenario("saves of a YAML thread", earlier=1, traced=2, format="yaml"),
    Scenario("saves across two journal rotations", earlier=1, traced=17, keep=100, setup="rotating"),
)


def _set_up(setup: Setup, thread: Path) -> None:
    """Leave what *setup* names in *thread* (untraced: part of the durable state the trace starts from)."""
    if setup == "torn-primary":
        primary = thread / "handoff.json"
        primary.write_bytes(primary.read_bytes()[: primary.stat().st_size // 2])
    elif setup == "torn-journal":
        with (thread / "journal.jsonl").open("ab") as journal:
            journal.write(b'{"at": "2025-01-01T00:00:00.000Z", "event": "sav')
    elif setup == "stray-temps":
        for temp in (thread / ".handoff.json.deadbeef.tmp", thread / "history" / ".00000009.json.deadbeef.tmp"):
            temp.write_bytes(b'{"schema_version": "2.0", "gen')
            temp.chmod(0o600)
    elif setup == "full-journal":
        # one long, valid line takes the journal past its rotation size: the next save rotates it
        Journal(thread).append("restored", generation=None, seal=None, summary="padding", padding="x" * ROTATE_BYTES)


@dataclass(frozen=True, slots=True)
class Ack:
    """A save that returned: after how many operations, and what it saved."""

    after: int
    generation: int


@dataclass
class Trace:
    """The operations of one round's traced saves, over the durable state they started from."""

    scenario: Scenario
    durable: Disk
    ops: list[Op]
    acks: list[Ack]
    generations: dict[int, Handoff]  # every generation saved, before and during the trace, as saved
    before: int  # the newest generation acknowledged before the trace (0: none)
    durability: str
    skipped: int = 0  # fsyncs a broken writer left out

    def acknowledged(self, crash_point: int) -> int:
        """The newest generation acknowledged when a crash comes after *crash_point* operations."""
        return max([self.before, *(ack.generation for ack in self.acks if ack.after <= crash_point)])


def _save_content(step: int, size: int) -> dict[str, Any]:
    return content("powerloss", step, size)


def _store_options(scenario: Scenario, durability: str) -> dict[str, Any]:
    return {"keep": scenario.keep, "format": scenario.format, **store_options(durability)}


def _history_file(store: HandoffStore, generation: int) -> Path:
    return store.history_dir / f"{generation:08d}{store.primary.suffix}"


def trace(scenario: Scenario, root: Path, durability: str, broken: Broken | None = None) -> Trace:
    """Build the scenario's thread under *root*, then trace its saves.

    :raises RuntimeError: if the model and the real tree disagree after the trace (an untraced operation).
    """
    options = _store_options(scenario, durability)
    thread = root / THREAD
    root.mkdir(parents=True, exist_ok=True)
    generations: dict[int, Handoff] = {}
    if scenario.earlier:
        store = HandoffStore(thread, **options)
        for step in range(1, scenario.earlier + 1):
            receipt = store.save(_save_content(step, scenario.size))
            generations[receipt.generation] = load(_history_file(store, receipt.generation))
        _set_up(scenario.setup, thread)
    durable = Disk.snapshot(root)
    sizes = {inode: len(data) for inode, data in durable.data.items()}
    recorder = Recorder(root, durable.names, sizes, broken=broken)
    acks = []
    with recorder, _rotating(scenario.setup == "rotating"):
        store = HandoffStore(thread, **options)
        for step in range(scenario.earlier + 1, scenario.earlier + scenario.traced + 1):
            receipt = store.save(_save_content(step, scenario.size))
            acks.append(Ack(len(recorder.ops), receipt.generation))
            with recorder.paused():
                generations[receipt.generation] = load(_history_file(store, receipt.generation))
    replayed = durable.copy()
    for op in recorder.ops:
        replayed.apply(op)
    if Disk.snapshot(root).key() != replayed.key():
        msg = f"{scenario.name}: the model and the real tree differ after the trace: an operation was not traced"
        raise RuntimeError(msg)
    return Trace(scenario, durable, recorder.ops, acks, generations, scenario.earlier, durability, recorder.skipped)


@contextmanager
def _rotating(on: bool) -> Iterator[None]:
    """With *on*, rotate the journal every ROTATE_LINES saves, and flush a rotation's copies in this thread.

    The recorder follows the thread that entered it; a rotation flushes the copies it keeps from
    a pool of threads (:mod:`handoff_files.thread.copyback`), the same flushes, made here one by one.
    """
    if not on:
        yield
        return
    saved = {(journal_module, "ROTATE_BYTES"): 1, (copyback, "_FLUSHERS"): 1}
    before = {where: getattr(*where) for where in saved}
    for (module, name), value in saved.items():
        setattr(module, name, value)  # a Final of the library's, changed for the trace only
    try:
        yield
    finally:
        for (module, name), value in before.items():
            setattr(module, name, value)


# -- crash states ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CrashState:
    """What a crash after ``point`` operations left: the tree, and how many pending operations it dropped or tore."""

    point: int
    disk: Disk
    altered: int  # pending operations not persisted whole


def _durable_from(ops: list[Op]) -> list[float]:
    """For each operation, the index of the sync after which it is durable (infinity: never in the trace)."""
    after = [math.inf] * len(ops)
    for index, op in enumerate(ops):
        if op.kind == "sync":
            continue
        waits = set(op.directories()) if op.namespace else None
        for later in range(index + 1, len(ops)):
            sync = ops[later]
            if sync.kind != "sync":
                continue
            if waits is None and sync.inode == op.inode:
                after[index] = later
                break
            if waits is not None and sync.inode == DIR:
                waits.discard(sync.path)
                if not waits:
                    after[index] = later
                    break
    return after


def crash_states(
    ops: list[Op],
    durable: Disk,
    rng: random.Random,
    *,
    limit: int | None = None,
    start: int = 0,
    unique: bool = True,
) -> Iterator[CrashState]:
    """The crash states the model allows after each prefix of *ops*, enumerated or (past the limit) sampled.

    :param limit: yield at most this many, chosen at random (seeded) among all the candidates.
    :param start: only crashes after at least this many operations.
    :param unique: yield identical states (by :meth:`Disk.key`) once, across crash points.
    """
    durable_from = _durable_from(ops)
    by_point: list[list[tuple[int, dict[int, Outcome]]]] = []
    for point in range(start, len(ops) + 1):
        pending = [i for i in range(point) if ops[i].kind != "sync" and durable_from[i] >= point]
        choices = [outcomes(ops[i]) for i in pending]
        vectors: Iterable[tuple[Outcome, ...]]
        if math.prod(len(c) for c in choices) <= ENUMERATE_LIMIT:
            vectors = itertools.product(*choices)
        else:
            vectors = [tuple(rng.choice(c) for c in choices) for _ in range(ENUMERATE_LIMIT)]
        by_point.append([(point, dict(zip(pending, vector, strict=True))) for vector in vectors])
    candidates = [candidate for group in by_point for candidate in group]
    if limit is not None and limit < len(candidates):
        # building a state costs more than choosing one, so choose first: a random candidate of
        # each crash point in turn, so that points with many candidates do not crowd out the rest
        for group in by_point:
            rng.shuffle(group)
        rng.shuffle(by_point)
        candidates = [c for turn in itertools.zip_longest(*by_point) for c in turn if c is not None]
    seen: set[tuple[tuple[str, int, int], ...]] = set()
    yielded = 0
    for point, chosen in candidates:
        if limit is not None and yielded >= limit:
            return
        disk = durable.copy()
        for index in range(point):
            disk.apply(ops[index], chosen.get(index, "full"))
        if unique:
            key = disk.key()
            if key in seen:
                continue
            seen.add(key)
        yielded += 1
        yield CrashState(point, disk, sum(outcome != "full" for outcome in chosen.values()))


# -- checking a crash state ------------------------------------------------------------------


@dataclass
class Tally:
    """What the crash states of one writer came to."""

    states: int = 0
    points: set[tuple[int, int]] = field(default_factory=set)  # (round, crash point)
    altered: int = 0
    lost: int = 0
    torn: int = 0
    leftovers: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    failures: dict[str, list[str]] = field(default_factory=dict)  # kind of failure -> where it was met

    def fail(self, what: str, where: str) -> None:
        """Record a failed check of one kind, with where it was met."""
        self.failures.setdefault(what, []).append(where)


def check_state(state: CrashState, run_trace: Trace, where: Path, tally: Tally, label: str) -> None:
    """Materialise *state* under *where* and check it as a restarted agent would find it; add to *tally*."""
    state.disk.materialise(where)
    thread = where / THREAD
    tally.states += 1
    tally.altered += state.altered
    acknowledged = run_trace.acknowledged(state.point)
    context = f"{label}, crash after op {state.point}/{len(run_trace.ops)}, generation {acknowledged} acknowledged"
    try:
        store = HandoffStore(thread, **_store_options(run_trace.scenario, run_trace.durability))
    except HandoffError as exc:
        tally.lost += 1
        tally.fail(f"the thread does not open: {type(exc).__name__}", f"{context}: {exc}")
        return
    left = stray_temps(thread) + stray_temps(thread / "history")
    if left:
        tally.leftovers += len(left)
        tally.fail("temp files left after the store opened the thread", f"{context}: {[p.name for p in left]}")
    restored = _check_restore(store, run_trace, acknowledged, tally, context)
    _check_kept(store, run_trace, acknowledged=acknowledged, restored=restored, tally=tally, context=context)
    try:
        receipt = store.save(_save_content(999, 10))
        following = load(store.primary)
    except HandoffError as exc:
        tally.fail(f"the next save failed: {type(exc).__name__}", f"{context}: {exc}")
        return
    floor = restored.generation if restored is not None else 0
    seal = str(restored.handoff.seal) if restored is not None and restored.handoff.seal else None
    if receipt.generation <= floor or (seal is not None and following.parent != seal):
        tally.fail(
            "the next save does not follow the restored generation",
            f"{context}: generation {receipt.generation}, parent {following.parent}; restored {floor}, {seal}",
        )


def _check_kept(
    store: HandoffStore, run_trace: Trace, *, acknowledged: int, restored: Restored | None, tally: Tally, context: str
) -> None:
    """Every acknowledged generation the thread keeps (its newest ``keep``) is in ``history/`` or a journal, whole."""
    newest = restored.generation if restored is not None else acknowledged
    kept = [g for g in run_trace.generations if newest - run_trace.scenario.keep < g <= acknowledged]
    if not kept:
        return
    journaled = {
        entry.generation: document
        for entry, document in Journal(store.layout).committed_documents()
        if document is not None and entry.generation is not None
    }
    for generation in kept:
        try:
            found = load_generation(store.layout, generation)
        except HandoffError:
            found = None
        if found == run_trace.generations[generation] or generation in journaled:
            continue
        tally.lost += 1
        tally.fail("an acknowledged generation the thread keeps was lost", f"{context}: generation {generation}")


def _check_restore(
    store: HandoffStore, run_trace: Trace, acknowledged: int, tally: Tally, context: str
) -> Restored | None:
    """Restore, and count what the restore lost or tore; returns what it restored."""
    try:
        restored = store.restore()
    except NoHandoffError as exc:
        tally.sources["nothing"] += 1
        if acknowledged:
            tally.lost += 1
            tally.fail("NoHandoffError for a thread with an acknowledged generation", f"{context}: {exc}")
        return None
    except HandoffError as exc:
        tally.lost += 1
        tally.fail(f"restore raised {type(exc).__name__}", f"{context}: {exc}")
        return None
    except Exception as exc:
        tally.torn += 1
        tally.fail(f"restore raised {type(exc).__name__}, not a HandoffError", f"{context}: {exc}")
        return None
    tally.sources[restored.source] += 1
    if restored.source == "rebuilt":
        tally.lost += 1
        tally.fail("restore rebuilt a generation (its sealed content lost)", context)
    elif restored.generation < acknowledged:
        tally.lost += 1
        tally.fail(
            "an acknowledged generation was lost",
            f"{context}: restore returned {restored.generation} from the {restored.source}",
        )
    elif restored.handoff != run_trace.generations.get(restored.generation):
        tally.torn += 1
        tally.fail("restore returned a generation not as it was saved", f"{context}: {restored.generation}")
    return restored


def run_states(
    budget: int,
    *,
    workdir: Path,
    seed: int,
    durability: str,
    broken: Broken | None = None,
    progress: Callable[[str], None] | None = None,
) -> Tally:
    """Trace rounds of :data:`SCENARIOS` and check their crash states until *budget* states are checked.

    Each round checks at most its share of the budget (budget / number of scenarios, so every
    scenario gets its turn); a round with more states than that checks a seeded sample of them.
    A *broken* writer's states are taken only after its first save returned: before it, there is
    nothing acknowledged to lose, and the budget is for catching it.
    """
    tally = Tally()
    # a broken writer may lose only in some scenarios (a journal-first writer without directory
    # fsyncs, only in a new thread): at least 20 states each, so one is not missed by chance
    share = max(20 if broken else 1, math.ceil(budget / len(SCENARIOS)))
    for number in itertools.count():
        if tally.states >= budget:
            break
        scenario = SCENARIOS[number % len(SCENARIOS)]
        rng = random.Random(f"{seed}/{number}/{broken}")
        round_dir = workdir / f"round-{number}"
        run_trace = trace(scenario, round_dir / "traced", durability, broken)
        allowed = min(share, budget - tally.states)
        start = run_trace.acks[0].after if broken else 0
        found = crash_states(run_trace.ops, run_trace.durable, rng, limit=allowed, start=start)
        states = sorted(found, key=lambda state: state.point)
        label = f"round {number} ({scenario.name}{', ' + broken if broken else ''})"
        for index, state in enumerate(states):
            where = round_dir / f"state-{index}"
            where.mkdir()
            check_state(state, run_trace, where, tally, label)
            tally.points.add((number, state.point))
            shutil.rmtree(where)
        shutil.rmtree(round_dir)
        if progress is not None:
            progress(
                f"{label}: {len(run_trace.ops)} ops, {len(states)} states; "
                f"{tally.states:,} so far, {tally.lost} lost, {tally.torn} torn"
            )
    return tally


def run(options: Options) -> Row:
    """Check ``options.count`` crash states of the real writer, then catch the two broken writers."""
    row = Row("powerloss")
    started = time.monotonic()
    try:
        store_options(options.durability)
    except RuntimeError as exc:
        row.fail(str(exc))
        return row
    tally = run_states(
        options.count,
        workdir=options.workdir / "writer",
        seed=options.seed,
        durability=options.durability,
        progress=options.progress,
    )
    row.cases = tally.states
    row.faults = tally.altered
    row.lost = tally.lost
    row.torn = tally.torn
    row.leftovers = tally.leftovers
    for what, where in tally.failures.items():
        row.fail(f"{what} ({len(where)} states; first: {where[0]})")
    caught = []
    for broken in BROKEN_WRITERS:
        budget = max(50, options.count // 4)
        found = run_states(
            budget, workdir=options.workdir / broken, seed=options.seed, durability=options.durability, broken=broken
        )
        verdict = "caught" if found.lost or found.torn else "NOT CAUGHT"
        caught.append(f"{broken}: {found.lost} lost, {found.torn} torn in {found.states:,} states ({verdict})")
        options.progress(f"broken writer {caught[-1]}")
        if verdict != "caught":
            row.fail(f"the model did not catch the broken writer {broken} losing anything")
    sources = ", ".join(f"{source} {count}" for source, count in sorted(tally.sources.items()))
    row.notes = (
        f"{tally.states:,} crash states at {len(tally.points):,} crash points ({tally.altered:,} operations "
        f"dropped or torn); restored from: {sources}; broken writers: {'; '.join(caught)}; "
        f"{time.monotonic() - started:.1f} s"
    )
    options.progress(row.notes)
    return row
