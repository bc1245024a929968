"""Torture part ``syscalls``: strace kills a save at each of its system calls in turn; the thread is checked after each.

For each scenario (the first save of a thread, a fresh store's save on a thread with generations,
a store's second save with its head cached) dry runs trace one save with ``strace -f`` to list
its system calls. Then, for every occurrence N of every call, a child opens the store, waits on a
signal while strace attaches (so counting starts there, not at interpreter start), and saves with
``-e inject=CALL:signal=SIGKILL:when=OFFSET+N``: the kernel kills it on entry to that call. The
parent then opens the thread, restores, checks against what was acknowledged
(:func:`bench.torture.kill_checks.check_after_kill`), saves once more and checks the chain.

A plan holds only if a kill run makes the same calls as the dry run up to the planned one. strace
counts ``when=`` per tracee, entries of that one call only (the child has one thread and forks
nothing), so the count is exact; what can differ is the save itself, when it reads anything the
reset does not put back. So:

- every traced save starts from the same state: the thread directory, and the per-user trust
  record a first save adds its new folder to (``thread/trust.py``). The children's record is a
  private one in the work directory (``HANDOFF_FILES_KEY``), emptied before every traced save:
  the user's own record (or a test session's) grows and shrinks with other processes, and a save
  stats every entry of it, so a kill planned past it landed one call off (the zygote's warm-up
  alone left a gone folder in it that only the first dry run saw);
- each scenario is dry-run twice, and two runs that differ (:func:`drift`) fail the row, naming
  the first call where they part; only the calls before it are planned;
- a kill is confirmed against every entry of its call up to the planned one (:func:`landed`), not
  the count alone, so a plan that drifted fails the case instead of passing by a lookalike call.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import subprocess
import time
from collections import Counter
from typing import IO, Final

from bench.torture import Options, Row
from bench.torture.child import Child, Zygote, content, open_store
from bench.torture.kill_checks import CHANNELS, Before, Ledger, check_after_kill, check_chain, check_next_save
from bench.torture.traces import Point, Scenario, Trace, drift, landed, parse_trace, plannable, points_of
from handoff_files.foundation.secret import KEY_ENV

__all__ = [
    "SCENARIOS",
    "Job",
    "Point",
    "Scenario",
    "Trace",
    "drift",
    "ensure_strace",
    "landed",
    "parse_trace",
    "plannable",
    "points_of",
    "run",
]

KEEP: Final = 10
SIZE: Final = 1000
WRITER: Final = "s"
PROGRESS_SECONDS: Final = 5.0

SCENARIOS: Final = (
    Scenario("new-thread", 0, 0),  # the first save: creates the directories, nothing to scan
    Scenario("reopened", 3, 0),  # a fresh store on a thread with generations: scans the disk for its head
    Scenario("same-store", 3, 1),  # a store's next save: its head is cached, the disk is not scanned
)


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


class Job:
    """One part run: the fork server, the thread directory and its templates, the children's trust record, the logs.

    :param options: the part's options (its work directory holds everything the job writes).
    :param row: where the job's cases and failures are counted.
    """

    def __init__(self, options: Options, row: Row) -> None:
        self.options = options
        self.row = row
        self.directory = options.workdir / "thread"
        self.log = options.workdir / "strace.log"
        # the children's per-user state (ack key, trust record): private to this job, emptied before
        # each traced save (see the module's docstring)
        self.state = options.workdir / "user-state"
        self.count = 0
        self.seals: dict[str, str] = {}
        self.zygote = Zygote(options.workdir / "children.log", env={KEY_ENV: str(self.state / "ack.key")})

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zygote.close()

    def reset(self, scenario: Scenario) -> str | None:
        """Put the scenario's thread in place (the same path every time, so traces compare line by line).

        :returns: the seal of its newest generation (None for an empty thread).
        """
        shutil.rmtree(self.state, ignore_errors=True)
        self.state.mkdir(mode=0o700, exist_ok=True)
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

    def plan(self, scenario: Scenario) -> list[Point]:
        """Dry-run *scenario* twice; its kill points are the calls both runs made alike (see :func:`drift`)."""
        traces = []
        for _ in range(2):
            self.reset(scenario)
            child, text, said = self.traced_save(scenario, None)
            trace = parse_trace(text)
            if child.code != 0 or not trace.calls:
                self.row.fail(f"the dry run of {scenario.name} failed (exit {child.code}; strace: {said[-300:]})")
                return []
            traces.append(trace)
        parted = drift(traces[0], traces[1])
        if parted is not None:
            self.row.fail(
                f"two dry runs of {scenario.name} differ at {parted}: kills past it would not land as planned"
            )
        return plannable(scenario, traces[0], traces[1])

    def case(self, point: Point) -> None:
        """Kill a save at *point*, confirm where the kill landed, and check the thread after it."""
        scenario, options, row = point.scenario, self.options, self.row
        where = f"{scenario.name}, {point.call} #{point.occurrence} (strace when={point.when})"
        template_seal = self.reset(scenario)
        child, text, said = self.traced_save(scenario, point)
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
            self.directory, before, row, ledger, keep=KEEP, durability=options.durability, where=where
        )
        check_next_save(self.directory, restored, row, keep=KEEP, durability=options.durability, where=where)
        check_chain(self.directory, row, contiguous=True, where=where)


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
        with Job(options, row) as job:
            points = [point for scenario in SCENARIOS for point in job.plan(scenario)]
            if options.count:
                chosen = set(random.Random(options.seed).sample(range(len(points)), min(options.count, len(points))))
                points = [point for index, point in enumerate(points) if index in chosen]
            per_call.update(point.call for point in points)
            reported = time.monotonic()
            for number, point in enumerate(points, 1):
                job.case(point)
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
