"""Fault injection: ENOSPC, EIO, EROFS and short writes at every OS call of a save, a restore and an acknowledge.

The operations: a fresh store's save on a thread with generations (it prunes one), a store's
second save (its head cached), a restore, a restore of a thread whose primary is torn (recovery
climbs the ladder), and an acknowledge. Each is first run once through a counting
:class:`~bench.torture.oslayer.FaultLayer` to number its OS calls; then, on a fresh copy of the
same thread each time, every call index is failed with every fault kind, once (later calls
succeed) and persistently (every call from there on fails). After each case the fault is gone
and the thread is checked as a restarted agent would find it: the operation succeeded or raised a
``HandoffError`` naming a path (never another exception), every generation acknowledged before
the fault is restorable bit-exact (the newest by ``restore()``, older ones from ``history/``),
nothing unverified is returned, no temp file is left once a store opens the thread, and the next
save works and chains to the restored seal.
"""

from __future__ import annotations

import os
import random
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.torture import Options, Row
from bench.torture.child import content
from bench.torture.oslayer import FAULT_KINDS, FaultKind, FaultLayer, fault_applies
from handoff_files import Handoff, HandoffError, HandoffStore, Restored, SaveReceipt, UncertainWriteError, load
from handoff_files.foundation.atomic import stray_temps
from handoff_files.thread.mirror import read_mirror

__all__ = ["OPERATIONS", "Case", "Operation", "check_case", "plan", "run", "store_options"]

#: Generations kept in ``history/``: the save under test prunes the oldest, so the prune's
#: ``unlink`` is among the calls faulted too.
KEEP: Final = 3
#: Generations saved before the operation under test.
EARLIER: Final = 3
THREAD: Final = "thread-1"
#: The operations whose calls are faulted.
OPERATIONS: Final = ("save", "save-again", "restore", "restore-damaged", "acknowledge")
# the fields a save fills in itself: two saves of the same content differ only in these
_ENVELOPE_OF_THE_MOMENT: Final = {"created_at", "seal", "parent"}


def store_options(durability: str) -> dict[str, Any]:
    """``HandoffStore`` keywords for *durability*, always said (the default changed once: "full", now "journal")."""
    return {"durability": durability}


@dataclass(frozen=True, slots=True)
class Case:
    """One fault: which operation, at which call, what kind, once or from there on."""

    operation: str
    at: int
    kind: FaultKind
    persistent: bool

    def __str__(self) -> str:
        return f"{self.operation} call {self.at} {self.kind} {'persistent' if self.persistent else 'once'}"


@dataclass
class Operation:
    """An operation under test, its template thread, and what a clean run of it did."""

    name: str
    template: Path
    workdir: Path  # where its threads are copied: always at one depth, as the call count depends on it
    acked: dict[int, Handoff]  # the generations saved before it, as saved
    options: dict[str, Any]
    calls: list[str] = field(default_factory=list)  # names of its OS calls in a clean run
    described: list[str] = field(default_factory=list)
    reference: Handoff | None = None  # for a save: what a clean save wrote

    def copy(self, name: str) -> Path:
        """A fresh copy of the template thread, in ``workdir/name/``.

        Every copy must sit at the same depth, so that no path-dependent call shifts a later
        call's index.
        """
        thread = self.workdir / name / THREAD
        shutil.copytree(self.template, thread, symlinks=True)
        return thread


@dataclass
class Outcome:
    """What one operation under a fault did: its result or the exception it raised."""

    result: Restored | SaveReceipt | None
    error: BaseException | None
    injected: list[str]  # the calls failed or shortened, described
    before: dict[int, Handoff] = field(default_factory=dict)  # generations the operation saved unfaulted first


def _perform(operation: Operation, thread: Path, layer: FaultLayer) -> Outcome:
    """Run *operation* on *thread* with *layer* entered; what it needs first (a store's first save,
    the restore an acknowledge takes in) runs before, unfaulted."""
    store = HandoffStore(thread, keep=KEEP, **operation.options)
    before: dict[int, Handoff] = {}
    if operation.name == "save-again":
        # a store's second save chains from the head it cached in its first
        first = store.save(_content(EARLIER + 1))
        before[first.generation] = load(store.history_dir / f"{first.generation:08d}.json")
    restored = store.restore() if operation.name == "acknowledge" else None
    result: Restored | SaveReceipt | None = None
    error: BaseException | None = None
    try:
        with layer:
            if operation.name == "save":
                result = HandoffStore(thread, keep=KEEP, **operation.options).save(_content(EARLIER + 1))
            elif operation.name == "save-again":
                result = store.save(_content(EARLIER + 2))
            elif operation.name in ("restore", "restore-damaged"):
                result = HandoffStore(thread, keep=KEEP, **operation.options).restore()
            elif restored is not None:
                store.acknowledge(restored)
    except Exception as exc:
        error = exc
    return Outcome(result, error, [layer.describe(index) for index in layer.injected], before)


def _content(step: int) -> dict[str, Any]:
    return content("faults", step, 200)


def _make_templates(workdir: Path, options: dict[str, Any]) -> tuple[Path, Path, dict[int, Handoff]]:
    """A healthy thread with :data:`EARLIER` generations, and a copy whose primary is torn in half."""
    healthy = workdir / "template-healthy" / THREAD
    store = HandoffStore(healthy, keep=KEEP, **options)
    for step in range(1, EARLIER + 1):
        store.save(_content(step))
    acked = {g: load(healthy / "history" / f"{g:08d}.json") for g in range(1, EARLIER + 1)}
    damaged = workdir / "template-damaged" / THREAD
    shutil.copytree(healthy, damaged, symlinks=True)
    primary = damaged / "handoff.json"
    data = primary.read_bytes()
    stat = primary.stat()
    primary.write_bytes(data[: len(data) // 2])
    # keep the torn file's mtime: the loader tells damage from a person's edit by it, and the
    # call sequence of a restore must not change while the run goes on
    os.utime(primary, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return healthy, damaged, acked


def _prepare(workdir: Path, durability: str) -> list[Operation]:
    options = store_options(durability)
    healthy, damaged, acked = _make_templates(workdir, options)
    operations = []
    for name in OPERATIONS:
        template = damaged if name == "restore-damaged" else healthy
        operation = Operation(name, template, workdir, acked, options)
        thread = operation.copy(f"count-{name}")
        counter = FaultLayer()
        outcome = _perform(operation, thread, counter)
        if outcome.error is not None:
            msg = f"{name} fails with no fault injected: {outcome.error!r}"
            raise RuntimeError(msg) from outcome.error
        operation.calls = counter.names()
        operation.described = [counter.describe(i) for i in range(len(counter.calls))]
        if name.startswith("save"):
            operation.reference = load(thread / "handoff.json")
        shutil.rmtree(thread.parent)
        operations.append(operation)
    return operations


def plan(operations: list[Operation]) -> list[Case]:
    """Every (operation, call index, fault kind, once/persistent) case; short writes only at write calls."""
    return [
        Case(operation.name, index, kind, persistent)
        for operation in operations
        for index, name in enumerate(operation.calls)
        for kind in FAULT_KINDS
        if fault_applies(kind, name)
        for persistent in (False, True)
    ]


def _where(error: BaseException) -> str:
    """The deepest frame of the traceback inside the library, as ``file:line``."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if "handoff_files" in frame.filename]
    if not frames:
        return "?"
    frame = frames[-1]
    return f"{Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno} ({frame.line})"


def _same_content(one: Handoff, other: Handoff) -> bool:
    return one.model_dump(exclude=_ENVELOPE_OF_THE_MOMENT) == other.model_dump(exclude=_ENVELOPE_OF_THE_MOMENT)


@dataclass
class Verdict:
    """What one case's checks found (added into the part's row)."""

    lost: int = 0
    torn: int = 0
    leftovers: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (what went wrong, in detail)
    committed: bool = False  # a save that returned with copies left unfinished (after its commit point)
    uncertain: bool = False  # a save that raised UncertainWriteError and whose generation restores

    def fail(self, what: str, detail: str = "") -> None:
        """Record a failed check: *what* names the kind of failure (cases are grouped by it), *detail* this one."""
        self.failures.append((what, detail))


def _check_history_copy(thread: Path, receipt: SaveReceipt, verdict: Verdict) -> None:
    """An acknowledged save's copy in ``history/`` loads, with the receipt's seal."""
    try:
        copy = load(thread / "history" / f"{receipt.generation:08d}.json")
    except HandoffError as exc:
        verdict.lost += 1
        verdict.fail("the acknowledged generation's history/ copy does not load", str(exc))
        return
    if str(copy.seal) != receipt.checksum:
        verdict.torn += 1
        verdict.fail("the acknowledged generation's history/ copy has another seal")


def check_case(case: Case, operation: Operation, thread: Path, outcome: Outcome) -> Verdict:  # noqa: PLR0912, PLR0915 -- one list of checks, read top to bottom
    """Check the thread after *case*, the fault gone; returns what was lost, torn or left behind.

    :param thread: the thread the operation ran on, now to be opened again with no fault.
    """
    verdict = Verdict()
    acked = {**operation.acked, **outcome.before}
    newest = max(acked)
    error = outcome.error
    # the operation itself: success, or a HandoffError that names a path
    if error is not None and not isinstance(error, HandoffError):
        verdict.torn += 1
        verdict.fail(f"{type(error).__name__} escaped, not a HandoffError, at {_where(error)}", str(error))
    elif isinstance(error, HandoffError) and not (Path(error.path).is_absolute() and str(error).startswith(error.path)):
        verdict.fail(f"the error names no path: {error!r}")
    if isinstance(outcome.result, Restored):
        returned = outcome.result
        if returned.source == "rebuilt" or returned.handoff.seal is None:
            verdict.torn += 1
            verdict.fail(f"restore under the fault returned unsealed data ({returned.source})")
        elif returned.handoff != acked.get(returned.generation):
            verdict.torn += 1
            verdict.fail(f"restore under the fault returned generation {returned.generation}, not as saved")
        elif returned.generation != newest:
            verdict.fail(
                f"restore under the fault returned generation {returned.generation}, not the newest, "
                f"{newest} (problems: {'; '.join(returned.problems) or 'none'})"
            )
    # a restarted agent, the fault gone
    try:
        store = HandoffStore(thread, keep=KEEP, **operation.options)
    except HandoffError as exc:
        verdict.lost += len(acked)
        verdict.fail(f"the thread no longer opens: {exc}")
        return verdict
    left = stray_temps(thread) + stray_temps(thread / "history")
    if left:
        verdict.leftovers += len(left)
        verdict.fail(f"temp files left after the next open: {', '.join(p.name for p in left)}")
    try:
        after = store.restore()
    except HandoffError as exc:
        verdict.lost += 1
        verdict.fail(f"restore after the fault raised {type(exc).__name__}: {exc}")
        return verdict
    if after.source == "rebuilt" or after.handoff.seal is None:
        verdict.lost += 1
        verdict.fail(f"restore after the fault rebuilt generation {after.generation}: its sealed content is lost")
    elif isinstance(outcome.result, SaveReceipt):
        receipt = outcome.result
        verdict.committed = bool(receipt.unfinished)
        if after.generation != receipt.generation or str(after.handoff.seal) != receipt.checksum:
            verdict.lost += 1
            verdict.fail(f"the save returned generation {receipt.generation}, restore gives {after.generation}")
        elif (after.problems or after.source != "primary") and not receipt.unfinished:
            # a receipt that names no unfinished copy promises every channel was written
            verdict.fail(f"a save that returned left the thread unclean: {'; '.join(after.problems)}")
        if not receipt.unfinished or not operation.options:  # a journal-first save may not have its copy
            _check_history_copy(thread, receipt, verdict)
    elif after.generation == newest + 1 and operation.name.startswith("save") and operation.reference is not None:
        # the save raised, yet its generation restores: only its commit point's own flush may have
        # failed (UncertainWriteError says so); any other error after the commit point is a receipt
        verdict.uncertain = True
        if not isinstance(error, UncertainWriteError):
            verdict.fail(
                "a save raised after its commit point: the generation exists, but the error says it failed",
                repr(error),
            )
        if not _same_content(after.handoff, operation.reference) or after.handoff.parent != str(acked[newest].seal):
            verdict.torn += 1
            verdict.fail(f"generation {after.generation} restored after a failed save is not what was saved")
    elif after.generation < newest:
        verdict.lost += 1
        verdict.fail(f"generation {newest} was acknowledged; restore now returns {after.generation}")
    elif after.generation != newest or after.handoff != acked[newest]:
        verdict.torn += 1
        verdict.fail(f"restore returned generation {after.generation}, not as saved")
    if operation.name == "acknowledge" and error is None:
        entries, problems = store.journal.entries()
        last = entries[-1] if entries else None
        if problems or last is None or last.event != "resumed" or last.generation != newest:
            verdict.fail("acknowledge returned, but the journal's last line is not its 'resumed' line")
        # state.json's note of the restore is best effort (acknowledge skips it when state.json
        # cannot be read), but state.json must still verify
        try:
            read_mirror(store.mirror_path)
        except HandoffError as exc:
            verdict.fail("state.json does not verify after acknowledge", str(exc))
    # older acknowledged generations, from history/
    for generation, handoff in acked.items():
        if generation <= after.generation - KEEP or generation == after.generation:
            continue  # pruned by a committed save, as keep says; or checked above
        try:
            kept = load(thread / "history" / f"{generation:08d}.json")
        except HandoffError as exc:
            verdict.lost += 1
            verdict.fail(f"acknowledged generation {generation} no longer loads from history/: {exc}")
            continue
        if kept != handoff:
            verdict.torn += 1
            verdict.fail(f"history/ holds generation {generation}, but not as saved")
    # the next save works and chains
    try:
        receipt = store.save(_content(99))
        following = load(store.primary)
    except HandoffError as exc:
        verdict.fail(f"the next save failed: {exc}")
        return verdict
    if receipt.generation <= after.generation or following.parent != str(after.handoff.seal):
        verdict.fail(
            f"the next save is generation {receipt.generation} with parent {following.parent}; "
            f"expected > {after.generation} chained to {after.handoff.seal}"
        )
    return verdict


def run(options: Options) -> Row:
    """Inject every fault kind at every OS call of each operation; ``options.count`` > 0 samples that many cases."""
    row = Row("faults")
    started = time.monotonic()
    try:
        operations = _prepare(options.workdir, options.durability)
    except (RuntimeError, HandoffError) as exc:
        row.fail(f"cannot set up: {exc}")
        return row
    by_name = {operation.name: operation for operation in operations}
    cases = plan(operations)
    if 0 < options.count < len(cases):
        cases = sorted(
            random.Random(options.seed).sample(cases, options.count),
            key=lambda c: (OPERATIONS.index(c.operation), c.at),
        )
    counts = ", ".join(f"{operation.name} {len(operation.calls)}" for operation in operations)
    options.progress(f"OS calls: {counts}; {len(cases):,} cases")
    committed = uncertain = 0
    kinds: dict[str, list[tuple[Case, str]]] = {}  # each kind of failure, with the cases that met it
    report = _every(max(1, len(cases) // 10), options.progress)
    for number, case in enumerate(cases):
        operation = by_name[case.operation]
        thread = operation.copy(f"case-{number}")
        outcome = _perform(operation, thread, FaultLayer(case.kind, case.at, persistent=case.persistent))
        verdict = check_case(case, operation, thread, outcome)
        if not outcome.injected or not outcome.injected[0].startswith(f"#{case.at} {operation.calls[case.at]}("):
            # the case must fault the call it was planned for: the calls before it are the counted ones
            verdict.fail("the calls diverged from the counted run", f"faulted {outcome.injected[:1]}")
        shutil.rmtree(thread.parent)
        row.cases += 1
        row.faults += len(outcome.injected)
        row.lost += verdict.lost
        row.torn += verdict.torn
        row.leftovers += verdict.leftovers
        committed += verdict.committed
        uncertain += verdict.uncertain
        for what, detail in verdict.failures:
            kinds.setdefault(f"{case.operation}: {what}", []).append((case, detail))
        report(number + 1, f"{number + 1:,}/{len(cases):,} cases, {row.lost} lost, {row.torn} torn")
    for what, met in kinds.items():
        first, detail = met[0]
        row.fail(f"{what} ({len(met)} cases; first: {first}{': ' + detail if detail else ''})")
    row.notes = (
        f"OS calls per operation: {counts}; {committed} saves committed their generation and named the copies "
        f"left unfinished; {uncertain} raised UncertainWriteError with their generation in place; "
        f"{time.monotonic() - started:.1f} s"
    )
    options.progress(row.notes)
    return row


def _every(step: int, progress: Callable[[str], None]) -> Callable[[int, str], None]:
    def report(done: int, line: str) -> None:
        if done % step == 0:
            progress(line)

    return report
