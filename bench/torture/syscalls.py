"""Torture part ``syscalls``: strace kills a save at each of its system calls in turn; the thread is checked after each.

For each scenario (the first save of a thread, a fresh store's save on a thread with generations,
a store's second save with its head cached) a dry run traces one save with ``strace -f`` to list
its system calls. Then, for every occurrence N of every call, a child opens the store, waits on a
signal while strace attaches (so counting starts there, not at interpreter start), and saves with
``-e inject=CALL:signal=SIGKILL:when=OFFSET+N``: the kernel kills it on entry to that call. The
parent then opens the thread, restores, checks against what was acknowledged
(:func:`bench.torture.kill_checks.check_after_kill`), saves once more and checks the chain.
"""

from __future__ import annotations

import os
import random
import re
import select
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from typing import IO, Final

from bench.torture import Options, Row
from bench.torture.child import BEGIN_MARK, END_MARK, Child, Zygote, content, open_store
from bench.torture.kill_checks import CHANNELS, Before, Ledger, check_after_kill, check_chain, check_next_save

__all__ = ["SCENARIOS", "Point", "Scenario", "Trace", "ensure_strace", "landed", "parse_trace", "points_of", "run"]

KEEP: Final = 10
SIZE: Final = 1000
WRITER: Final = "s"
PROGRESS_SECONDS: Final = 5.0
_PID_PREFIX: Final = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)")
_CALL: Final = re.compile(r"^([a-z_][a-z0-9_]*)\(")
_TEMP_NAME: Final = re.compile(r"\.[a-z0-9_]{8}\.tmp")


@dataclass(frozen=True, slots=True)
class Scenario:
    """A save to kill: on a thread of ``prior`` generations, after ``prepare`` saves through the same store."""

    name: str
    prior: int
    prepare: int


SCENARIOS: Final = (
    Scenario("new-thread", 0, 0),  # the first save: creates the directories, nothing to scan
    Scenario("reopened", 3, 0),  # a fresh store on a thread with generations: scans the disk for its head
    Scenario("same-store", 3, 1),  # a store's next save: its head is cached, the disk is not scanned
)


@dataclass(frozen=True, slots=True)
class Point:
    """The *occurrence*-th call of *call* within one save: the kernel kills the child on entry to it."""

    scenario: Scenario
    call: str
    occurrence: int
    offset: int  # calls of this name between strace's attach and the save's start
    line: str  # the dry run's line for it, normalised

    @property
    def when(self) -> int:
        """strace's ``when=``: the count from the attach."""
        return self.offset + self.occurrence


@dataclass(frozen=True, slots=True)
class Trace:
    """One traced save: the calls before it (by name) and the calls it made, in order, with their lines."""

    before: Counter[str]
    calls: list[tuple[str, str]]  # (name, normalised line)
    killed: bool  # the log ends with the process killed by SIGKILL


def _normalise(line: str) -> str:
    # the arguments as the call was entered: what a temp name's random part, an address or a time
    # stamp in the data looked like differs from run to run
    line = _TEMP_NAME.sub(".R.tmp", line)
    if line.startswith(("pwrite64(", "pread64(")):
        # the lock's holder record (foundation/lock.py): its pid's digit count shifts where strace
        # cuts the string, so the data is not compared, only the call
        line = re.sub(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?', '"…"', line)
    line = re.sub(r"0x[0-9a-f]+", "0x?", line)
    line = re.sub(r"\d", "9", line)
    line = line.split(" <unfinished", 1)[0]
    if " = " in line:  # the return value, "?" for a killed call
        line = line.rsplit(" = ", 1)[0]
    return line.rstrip().removesuffix(")").rstrip(", ")


def parse_trace(text: str) -> Trace:
    """Read an strace log of one save-once child: the calls before ``BEGIN_MARK``, those up to ``END_MARK``."""
    before: Counter[str] = Counter()
    calls: list[tuple[str, str]] = []
    phase = "before"
    killed = False
    for raw in text.splitlines():
        line = _PID_PREFIX.sub("", raw)
        if line.startswith("+++ killed by SIGKILL"):
            killed = True
        match = _CALL.match(line)
        if match is None:  # "<... resumed>", "--- SIGUSR1 ---", "+++ exited +++"
            continue
        name = match.group(1)
        if phase == "before":
            before[name] += 1
            if BEGIN_MARK in line:
                phase = "save"
        elif phase == "save":
            if END_MARK in line:
                phase = "after"
                continue
            calls.append((name, _normalise(line)))
    return Trace(before, calls, killed)


def points_of(scenario: Scenario, trace: Trace) -> list[Point]:
    """Every call of a traced save as a kill point."""
    seen: Counter[str] = Counter()
    points = []
    for name, line in trace.calls:
        seen[name] += 1
        points.append(Point(scenario, name, seen[name], trace.before[name], line))
    return points


def ensure_strace() -> str | None:
    """Make sure strace is installed (apt-get as root when it is not); returns why it cannot be, or None."""
    if shutil.which("strace"):
        return None
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or apt is None:
        return "strace is not installed, and installing it needs root and apt-get: run `apt-get install strace`"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    output = ""
    # the package lists may be missing (a fresh container): install, else update and install again
    for argv in (
        [apt, "install", "-y", "-qq", "strace"],
        [apt, "update", "-qq"],
        [apt, "install", "-y", "-qq", "strace"],
    ):
        done = subprocess.run(
            argv, check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=900
        )
        output = (done.stdout + done.stderr).strip()
        if shutil.which("strace"):
            return None
    return f"strace is not installed and `apt-get install strace` failed: {output[-300:]}"


class _Run:
    """One part run: the fork server, the thread directory and its templates, the strace logs."""

    def __init__(self, options: Options, zygote: Zygote, row: Row) -> None:
        self.options = options
        self.zygote = zygote
        self.row = row
        self.directory = options.workdir / "thread"
        self.log = options.workdir / "strace.log"
        self.count = 0
        self.seals: dict[str, str] = {}

    def reset(self, scenario: Scenario) -> str | None:
        """Put the scenario's thread in place (the same path every time, so traces compare line by line).

        :returns: the seal of its newest generation (None for an empty thread).
        """
        shutil.rmtree(self.directory, ignore_errors=True)
        if not scenario.prior:
            return None
        kept = self.options.workdir / f"template-{scenario.name}"
        if scenario.name not in self.seals:
            # saved once, then copied in before each case
            store = open_store(self.directory, keep=KEEP, durability=self.options.durability)
            for step in range(1, scenario.prior + 1):
                self.seals[scenario.name] = store.save(content("t", step, SIZE)).checksum
            shutil.copytree(self.directory, kept)
        else:
            shutil.copytree(kept, self.directory)
        return self.seals[scenario.name]

    def traced_save(self, scenario: Scenario, inject: Point | None) -> tuple[Child, str, str]:
        """Run one save-once child under strace; returns it (ended), the strace log and strace's stderr."""
        self.count += 1
        child = self.zygote.start(
            "save-once",
            f"c{self.count}",
            dir=str(self.directory),
            writer=WRITER,
            sizes=[SIZE],
            keep=KEEP,
            durability=self.options.durability,
            prepare=scenario.prepare,
        )
        self.zygote.until(lambda: child.ready or child.code is not None, 60, f"{child.tag} to be ready")
        argv = ["strace", "-f", "-p", str(child.pid), "-o", str(self.log)]
        if inject is not None:
            argv += ["-e", f"trace={inject.call}", "-e", f"inject={inject.call}:signal=SIGKILL:when={inject.when}"]
        tracer = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = tracer.stderr
        if stderr is None:
            msg = "strace has no stderr pipe"
            raise RuntimeError(msg)
        said = _wait_attached(stderr, timeout=30)
        if "attached" in said and child.code is None:
            os.kill(child.pid, signal.SIGUSR1)
        else:
            self.zygote.kill(child)
        self.zygote.wait(child, timeout=60)
        try:
            tracer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()
        said += stderr.read().decode("utf-8", "replace")
        stderr.close()
        del self.zygote.children[child.tag]
        text = self.log.read_text("utf-8", "replace") if self.log.exists() else ""
        return child, text, said.strip()


def _wait_attached(stream: IO[bytes], timeout: float) -> str:
    """strace's stderr up to its "attached" line (or its exit, or the timeout)."""
    said = b""
    deadline = time.monotonic() + timeout
    fd = stream.fileno()
    while b"attached" not in said and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        said += chunk
    return said.decode("utf-8", "replace")


def _entries(text: str, call: str) -> list[str]:
    """The normalised lines of every entry of *call* in an strace log."""
    found = []
    for raw in text.splitlines():
        line = _PID_PREFIX.sub("", raw)
        match = _CALL.match(line)
        if match is not None and match.group(1) == call:
            found.append(_normalise(line))
    return found


def landed(point: Point, child: Child, text: str) -> str | None:
    """Whether the injected kill hit the point inside the save; returns what went wrong, or None."""
    traced = child.acks[-1].step if child.acks else 0
    if child.code != -signal.SIGKILL:
        return f"the child was not killed (exit code {child.code})"
    if not child.begun:
        return "the kill landed before the save began"
    if traced > point.scenario.prepare:
        return "the kill landed after the save was acknowledged"
    entered = _entries(text, point.call)
    if "+++ killed by SIGKILL" not in text or not entered:
        return "strace's log shows no kill"
    # every entry of the call since the attach is in the log, the killed one last: it must be the
    # when-th, with the arguments the dry run's call had (the log shows a killed call's input only)
    if len(entered) != point.when or not point.line.startswith(entered[-1]):
        return f"killed at {point.call} #{len(entered)} ({entered[-1]!r}), not #{point.when} ({point.line!r})"
    return None


def run(options: Options) -> Row:
    """Kill one save at every system call it makes (``options.count`` > 0: that many points, drawn at random)."""
    row = Row("syscalls")
    why = ensure_strace()
    if why is not None:
        row.fail(why)
        return row
    started = time.monotonic()
    per_call: Counter[str] = Counter()
    try:
        with Zygote(options.workdir / "children.log") as zygote:
            job = _Run(options, zygote, row)
            points = _points(job)
            per_call.update(point.call for point in points)
            reported = time.monotonic()
            for number, point in enumerate(points, 1):
                _case(job, point, row)
                if time.monotonic() - reported > PROGRESS_SECONDS:
                    reported = time.monotonic()
                    options.progress(f"{number:,}/{len(points):,} kill points, {len(row.failures)} failures")
    except (TimeoutError, RuntimeError) as exc:  # the fork server died or a child hung
        row.fail(f"the part stopped early: {exc}")
    elapsed = time.monotonic() - started
    calls = ", ".join(f"{name} {count}" for name, count in per_call.most_common())
    row.notes = f"{row.cases:,} points in {elapsed:.0f} s over {len(SCENARIOS)} scenarios; calls: {calls}"
    options.progress(row.notes)
    return row


def _points(job: _Run) -> list[Point]:
    """Trace one save per scenario (a dry run) and list its calls; ``count`` > 0 draws that many at random."""
    points: list[Point] = []
    for scenario in SCENARIOS:
        job.reset(scenario)
        child, text, said = job.traced_save(scenario, None)
        trace = parse_trace(text)
        if child.code != 0 or not trace.calls:
            job.row.fail(f"the dry run of {scenario.name} failed (exit {child.code}; strace: {said[-300:]})")
            continue
        points += points_of(scenario, trace)
    count = job.options.count
    if count:
        chosen = set(random.Random(job.options.seed).sample(range(len(points)), min(count, len(points))))
        points = [point for index, point in enumerate(points) if index in chosen]
    return points


def _case(job: _Run, point: Point, row: Row) -> None:
    scenario, options = point.scenario, job.options
    where = f"{scenario.name}, {point.call} #{point.occurrence} (strace when={point.when})"
    template_seal = job.reset(scenario)
    child, text, said = job.traced_save(scenario, point)
    row.cases += 1
    if child.errors:
        row.fail(f"child said {child.errors[0]}: {where}")
    problem = landed(point, child, text)
    if problem is not None:
        row.fail(f"{problem} (strace: {said[-200:]}): {where}")
    else:
        row.kills += 1
    ledger = Ledger()
    if scenario.prior:
        ledger.channels.update(CHANNELS)  # the template's saves wrote every channel
    prepared = [ack for ack in child.acks if ack.step <= scenario.prepare]
    for ack in prepared:
        ledger.record(ack.generation, ack.checksum, row, where)
    generation = scenario.prior + len(prepared)
    seal = prepared[-1].checksum if prepared else template_seal
    # the killed save itself was never acknowledged: the kill was on its way in, or its ACK was
    before = Before(generation, seal, WRITER, (SIZE,), scenario.prepare + 1, [])
    restored = check_after_kill(
        job.directory, before, row, ledger, keep=KEEP, durability=options.durability, where=where
    )
    check_next_save(job.directory, restored, row, keep=KEEP, durability=options.durability, where=where)
    check_chain(job.directory, row, contiguous=True, where=where)
