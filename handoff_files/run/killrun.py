"""Kill runs: start an agent on a thread, kill it at chosen points, restart it, and check it kept its promise."""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import select
import signal as signals
import struct
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from handoff_files.format.model import Handoff
from handoff_files.foundation.atomic import stray_temps
from handoff_files.foundation.errors import HandoffError, HandoffValidationError, NoHandoffError
from handoff_files.run.supervise import exit_status
from handoff_files.thread.journal import JOURNAL_NAME, Entry, Journal
from handoff_files.thread.mirror import MIRROR_NAME, read_mirror
from handoff_files.thread.recovery import SAVE_EVENTS
from handoff_files.thread.results import Restored
from handoff_files.thread.store import HISTORY_DIR, HandoffStore

__all__ = ["Incarnation", "Kill", "KillRun", "Killer", "Moment", "When", "completed_tasks"]

#: The longest wait between two looks at the thread; inotify and a pidfd end a wait sooner.
LOOK_SECONDS: Final = 0.005
#: Where inotify is missing, the thread is polled this often instead.
POLL_SECONDS: Final = 0.001
_TEMP_GENERATION: Final = re.compile(r"^\.(\d{8,})\.\w+\.\w+\.tmp$")
_GENERATION_FILE: Final = re.compile(r"^(\d{8,})\.(?:json|yaml)$")
_IN_MASK: Final = 0x2 | 0x80 | 0x100  # IN_MODIFY | IN_MOVED_TO | IN_CREATE


@dataclass(frozen=True, slots=True)
class Moment:
    """What a ``when`` callable sees at each look at the running agent."""

    start: int  # 1 for the first start
    seconds: float  # since this start
    saves: int  # saves this start has written to the journal


When = Literal["saves", "in_save", "random"] | Callable[[Moment], bool]
Progress = Callable[[Handoff], Sequence[str]]


@dataclass(frozen=True, slots=True)
class Kill:
    """One kill that landed: when, and what the thread held after it."""

    signal: str
    seconds: float  # after the start
    generation: int  # the generation the thread restores to after it
    in_save: bool  # the disk shows a save cut short: a temp file, or history/, journal and state.json disagree


@dataclass(frozen=True, slots=True)
class Incarnation:
    """One start of the agent: the restore it began on, how it ended, what it printed, the restore it left."""

    number: int
    started: Restored | None  # None: nothing saved yet
    status: int  # exit status; negative: killed by that signal
    seconds: float
    stdout: str
    stderr: str
    acknowledged: bool  # it wrote the journal's "resumed" line for the generation it started on
    kill: Kill | None
    left: Restored | None  # the thread's restore after it

    @property
    def generation(self) -> int:
        """The generation it started on (0: a fresh thread)."""
        return 0 if self.started is None else self.started.generation


def completed_tasks(handoff: Handoff) -> list[str]:
    """The default record of an agent's steps: its state layer's ``completed_tasks``."""
    return list(handoff.state.completed_tasks)


@dataclass(frozen=True, slots=True)
class KillRun:
    """How a kill run went: every start and kill, the thread's final restore and its journal."""

    seed: int
    kills_asked: int
    thread: Path
    incarnations: tuple[Incarnation, ...]
    journal: tuple[Entry, ...]
    ended: str  # why the run ended, in plain words
    timed_out: bool  # the run's timeout killed the last start

    @property
    def finished(self) -> bool:
        """Whether the last start exited 0 without being killed."""
        return bool(self.incarnations) and self.incarnations[-1].kill is None and self.incarnations[-1].status == 0

    @property
    def restored(self) -> Restored | None:
        """The thread's restore once the run ended (None: it holds nothing that verifies)."""
        return self.incarnations[-1].left if self.incarnations else None

    @property
    def kills(self) -> list[Kill]:
        """The kills that landed, in order."""
        return [run.kill for run in self.incarnations if run.kill is not None]

    @property
    def restarts(self) -> int:
        """Starts after the first."""
        return max(len(self.incarnations) - 1, 0)

    def steps_done(self, progress: Progress = completed_tasks) -> list[str]:
        """The steps the final handoff records (by default its ``completed_tasks``)."""
        return [] if self.restored is None else list(progress(self.restored.handoff))

    def problems(
        self, steps: Sequence[str] | None = None, *, acknowledged: bool = True, progress: Progress = completed_tasks
    ) -> list[str]:
        """Every broken promise, one line each; empty when the agent kept them all.

        :param steps: the steps the finished task records, in order (None: not checked).
        :param acknowledged: require a start on a saved generation to acknowledge it before it saves or exits 0.
        :param progress: where a handoff records the steps done (default: ``state.completed_tasks``).
        """
        found = [] if self.finished else [f"never finished: {self.ended}"]
        if self.finished and len(self.kills) < self.kills_asked:
            found.append(
                f"too few kills: only {len(self.kills)} of {self.kills_asked} landed before the agent finished; "
                "give it a longer task (or kill it sooner) so that every kill tests something"
            )
        for run in self.incarnations[:-1] if self.timed_out else self.incarnations:
            found += _broken(run, acknowledged=acknowledged, progress=progress)
        done = self.steps_done(progress)
        if twice := sorted({step for step in done if done.count(step) > 1}):
            found.append(f"steps recorded twice: the final handoff records {_few(twice)} more than once")
        if steps is not None and done != list(steps):
            missing, extra = [s for s in steps if s not in done], [s for s in done if s not in steps]
            found.append(
                f"wrong final steps: the final handoff records {len(done)} steps, not the {len(steps)} expected; "
                f"missing {_few(missing)}; unexpected {_few(extra)}"
                + ("" if missing or extra else "; the order differs")
            )
        return found

    def assert_finished(
        self, steps: Sequence[str] | None = None, *, acknowledged: bool = True, progress: Progress = completed_tasks
    ) -> None:
        """Assert the agent finished, every kill landed, and every start carried on from its handoff.

        Takes :meth:`problems`'s arguments; the message shows the first few problems of each kind.

        :raises AssertionError: listing the broken promises, the seed, and the last starts' output.
        """
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        if found := self.problems(steps, acknowledged=acknowledged, progress=progress):
            kinds: dict[str, list[str]] = {}
            for line in found:
                kinds.setdefault(line.split(":", 1)[0], []).append(line)
            lines = [f"the agent broke its promise under {len(self.kills)} kills, {self.restarts} restarts:"]
            for kind, said in kinds.items():
                lines += [f"- {line}" for line in said[:3]] + ([f"- … {len(said) - 3} more: {kind}"] * (len(said) > 3))
            lines += [f"(seed {self.seed}, thread {self.thread})", self.describe()]
            raise AssertionError("\n".join(lines))

    def describe(self, last: int = 3, lines: int = 8) -> str:
        """The last *last* starts in plain words, each with the tail of its output."""
        told = []
        for run in self.incarnations[-last:]:
            kill, inside = run.kill, " inside a save" if run.kill and run.kill.in_save else ""
            how = f"killed by {kill.signal} at {kill.seconds:.2f} s{inside}" if kill else exit_status(run.status)
            told.append(f"start {run.number}, on generation {run.generation}: {how}, left generation {_gen(run.left)}")
            for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
                told += [f"  {name}: {line}" for line in text.splitlines()[-lines:]] or [f"  {name}: (nothing)"]
        return "\n".join(told)


def _broken(run: Incarnation, *, acknowledged: bool, progress: Progress) -> list[str]:
    """What one start broke: a crash, a missing acknowledgement, a generation or steps gone backwards."""
    found, where, after = [], f"start {run.number}, on generation {run.generation},", _gen(run.left)
    if run.kill is None and run.status != 0:
        found.append(f"crashed: {where} {exit_status(run.status)} on its own, not killed; see its stderr")
    if (
        acknowledged
        and run.started is not None
        and not run.acknowledged
        and (after > run.generation or run.status == 0)
    ):
        found.append(f'not acknowledged: {where} worked without a "resumed" journal line, so without its context')
    if after < run.generation:
        found.append(f"generation went backwards: {where} left generation {after}")
    if run.started is not None and run.left is not None:
        before, now = list(progress(run.started.handoff)), list(progress(run.left.handoff))
        if now[: len(before)] != before:
            found.append(
                f"steps redone or lost: {where} began with {len(before)} steps done ({_few(before)}) and left "
                f"generation {after} recording {len(now)} ({_few(now)}); it did not carry on from its handoff"
            )
    return found


def _gen(restored: Restored | None) -> int:
    return 0 if restored is None else restored.generation


def _few(items: Sequence[str]) -> str:
    return "none" if not items else ", ".join(items) if len(items) <= 4 else f"{items[0]}, {items[1]} … {items[-1]}"


def _look(thread: Path) -> tuple[int, int, list[int]]:
    """The newest generation in history/ and in the journal, and the temp files (a history copy's generation, or 0)."""
    try:
        names = os.listdir(thread / HISTORY_DIR)
    except FileNotFoundError:  # an agent that removed its own thread
        names = []
    history = max((int(name[:-5]) for name in names if name[:-5].isdigit()), default=0)
    temps = [int(m.group(1)) for name in names if (m := _TEMP_GENERATION.match(name))]
    return history, _journal_generation(thread), temps + [0 for _ in stray_temps(thread)]


def _journal_generation(thread: Path) -> int:
    entry, _ = Journal(thread).last(*SAVE_EVENTS)
    return 0 if entry is None or entry.generation is None else entry.generation


def _underway(thread: Path, start: int, mirror: int | None = None) -> int:
    """The generation a save is writing now (0: none): the one a temp file or a channel ahead of the rest names."""
    history, journal, temps = _look(thread)
    channels = {history, journal, journal if mirror is None else mirror}
    # a disagreement an earlier cut save left (nothing newer than the start) is no save of this start
    return max(history, journal, *temps) if temps or (len(channels) > 1 and max(channels) > start) else 0


class _Waker:
    """Waits until a file in the thread changes, the agent exits, or a timeout passes (inotify and a pidfd)."""

    def __init__(self, directories: Sequence[Path], pid: int) -> None:
        self.fds: list[int] = []
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            inotify = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (AttributeError, OSError):  # not Linux: the thread is polled
            return
        if inotify < 0:
            return
        self.fds.append(inotify)  # first: wait() reads events from it
        if any(libc.inotify_add_watch(inotify, os.fsencode(d), _IN_MASK) < 0 for d in directories):
            self.close()  # a directory not watched would leave kills waiting for events that never come
            return
        with contextlib.suppress(AttributeError, OSError):  # without a pidfd, an exit is seen at the next look
            self.fds.append(os.pidfd_open(pid))

    def wait(self, seconds: float) -> list[str] | None:
        """Wait; return the names of the files the thread's events were about (None when polling: no events)."""
        if not self.fds:
            time.sleep(min(seconds, POLL_SECONDS))
            return None
        ready, _, _ = select.select(self.fds, [], [], seconds)
        data = b""
        if self.fds[0] in ready:
            with contextlib.suppress(BlockingIOError):
                data = os.read(self.fds[0], 1 << 16)
        names, offset = [], 0
        while offset < len(data):  # struct inotify_event: wd, mask, cookie, len, then len bytes of name
            size = struct.unpack_from("iIII", data, offset)[3]
            names.append(os.fsdecode(data[offset + 16 : offset + 16 + size].rstrip(b"\0")))
            offset += 16 + size
        return names

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


class Killer:
    """Runs agents under kills and restarts, each run on a fresh thread directory under *root*.

    :param root: where the runs' threads and outputs go (created as needed).
    :param seed: seeds every kill plan: the same seed draws the same plans again.
    """

    def __init__(self, root: str | os.PathLike[str], seed: int) -> None:
        self.root = Path(root)
        self.seed = seed
        self.runs = 0

    def run(
        self,
        command: Sequence[str],
        *,
        kills: int,
        when: When = "saves",
        after_saves: int | tuple[int, int] = (1, 3),
        span: float = 1.0,
        signal: int = signals.SIGKILL,
        grace: float = 5.0,
        timeout: float = 120.0,
        max_crashes: int = 3,
        env: Mapping[str, str] | None = None,
    ) -> KillRun:
        """Start *command* on a fresh thread, kill it *kills* times, restarting it each time, until it exits 0.

        The agent finds its thread in ``HANDOFF_DIR`` and the generation it starts on in
        ``HANDOFF_GENERATION``, and runs in its own process group (a kill takes its children too).
        After each kill a fresh store restores the thread, as a restarted agent would.

        :param command: the agent's argv.
        :param kills: how many kills to land; after them the agent runs to its end.
        :param when: ``"saves"``: once a start has written *after_saves* saves; ``"in_save"``: inside
            the save after those; ``"random"``: a uniform delay in [0, *span*] s after the start; or
            a callable that gets a :class:`Moment` at each look and returns True to kill then.
        :param after_saves: saves a start makes before its kill: a number, or an inclusive range to draw from.
        :param span: the longest delay of a ``"random"`` kill, in seconds.
        :param signal: the signal sent; any but SIGKILL is followed by SIGKILL after *grace* seconds.
        :param grace: seconds a signalled agent has to exit.
        :param timeout: seconds the whole run may take; then the agent is killed and the run ends.
        :param max_crashes: starts in a row that may die on their own (not killed) before the run ends.
        :param env: variables added to this process's environment for the agent.
        :returns: the run, finished or not: check it with :meth:`KillRun.assert_finished`.
        :raises HandoffValidationError: if an argument is out of range.
        """
        self.runs += 1
        directory = self.root / f"run-{self.runs}"
        low, high = (after_saves, after_saves) if isinstance(after_saves, int) else after_saves
        if not command or kills < 0 or not 0 <= low <= high or min(span, timeout, max_crashes) <= 0 or grace < 0:
            msg = (
                f"need a command, kills >= 0, 0 <= after_saves (low <= high), span, timeout and max_crashes > 0, "
                f"grace >= 0; got {list(command)}, {kills}, {after_saves}, {span}, {timeout}, {max_crashes}, {grace}"
            )
            raise HandoffValidationError(directory, msg)
        if not callable(when) and when not in ("saves", "in_save", "random"):
            msg = f"when must be 'saves', 'in_save', 'random' or a callable, not {when!r}"
            raise HandoffValidationError(directory, msg)
        rng = random.Random(f"{self.seed}:{self.runs}")  # noqa: S311 -- a reproducible plan, not a secret
        plan = iter([_Target(rng.randint(low, high), rng.uniform(0, span), rng.random() < 0.5) for _ in range(kills)])
        run = _Run(list(command), directory, when, signal, grace, {**os.environ, **(env or {})})
        return run.go(plan, kills, time.monotonic() + timeout, max_crashes, self.seed)


@dataclass(frozen=True, slots=True)
class _Target:
    """One kill's plan: the saves its start makes first, a random kill's delay, and an in-save kill's moment."""

    saves: int
    delay: float
    late: bool  # in a save: once its history copy is renamed in (the commit), not when its temp file appears


@dataclass
class _Run:
    command: list[str]
    directory: Path
    when: When
    signal: int
    grace: float
    env: dict[str, str]

    def go(self, plan: Iterator[_Target], kills: int, deadline: float, crashes: int, seed: int) -> KillRun:
        thread = self.directory / "thread"
        HandoffStore(thread).init()  # history/ exists from the start, so it can be watched
        runs: list[Incarnation] = []
        started, target, ended, lives, timed_out = _restore(thread), next(plan, None), "", crashes, False
        while not isinstance(started, str) and not ended:
            run = self._start(thread, len(runs) + 1, started, target, deadline)
            runs.append(run)
            started = run.left if run.left is not None else _restore(thread)  # None: fresh, or why it is not
            # a crash keeps the planned kill for the next start: only a landed kill uses one up
            target, lives = (next(plan, None), crashes) if run.kill else (target, lives - bool(run.status))
            timed_out = run.status != 0 and time.monotonic() >= deadline
            if run.kill is None and run.status == 0:
                ended = f"the agent finished (exit 0) on start {run.number}"
            elif timed_out:
                ended = f"it did not finish in time: start {run.number} was killed at the run's timeout"
            elif not lives:
                last = exit_status(run.status)
                ended = f"it crash-looped: {crashes} starts in a row died on their own, the last {last}"
        if isinstance(started, str):
            ended = f"the thread does not restore after start {len(runs)}: {started}"
        entries, _ = Journal(thread).entries()
        return KillRun(seed, kills, thread, tuple(runs), tuple(entries), ended, timed_out)

    def _start(
        self, thread: Path, number: int, started: Restored | None, target: _Target | None, deadline: float
    ) -> Incarnation:
        journal, start = Journal(thread), _gen(started)
        resumed_before, _ = journal.last("resumed")
        env = {**self.env, "HANDOFF_DIR": str(thread), "HANDOFF_GENERATION": str(start)}
        out, err = self.directory / f"{number}.out", self.directory / f"{number}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            # its own process group: a kill reaches what the agent started; no stdin to hang on
            proc = subprocess.Popen(
                self.command, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, process_group=0
            )
        begun, sent, names = time.monotonic(), (0, 0.0), None  # the signal sent (0: none) and when
        waker = _Waker([thread, thread / HISTORY_DIR], proc.pid)
        try:
            # WNOWAIT leaves the exited agent unreaped, so its process group id cannot be reused yet
            while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                now = time.monotonic()
                if now >= deadline:
                    sent, target = _signal(proc, signals.SIGKILL, now), None  # a timeout, not a planned kill
                elif not sent[0] and target and self._due(number, now - begun, start, target, names):
                    sent = _signal(proc, self.signal, now)
                elif sent[0] not in (0, signals.SIGKILL) and now >= sent[1] + self.grace:
                    sent = (_signal(proc, signals.SIGKILL, now)[0], sent[1])
                names = waker.wait(LOOK_SECONDS)
        finally:
            waker.close()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)  # whatever it left running would outlive the run
            status = proc.wait()
        seconds = time.monotonic() - begun
        resumed, _ = journal.last("resumed")
        acknowledged = resumed is not None and resumed != resumed_before and resumed.generation == start
        landed = sent[0] and target is not None and (self.signal != signals.SIGKILL or status == -signals.SIGKILL)
        # read before a store opens the thread: opening it removes the temp files a cut save left
        in_save = bool(landed) and _underway(thread, start, _mirror_generation(thread)) > start
        left = _restore(thread)
        left = None if isinstance(left, str) else left
        kill = Kill(signals.Signals(self.signal).name, sent[1] - begun, _gen(left), in_save) if landed else None
        text = [path.read_text(encoding="utf-8", errors="replace") for path in (out, err)]
        return Incarnation(number, started, status, seconds, text[0], text[1], acknowledged, kill, left)

    def _due(self, number: int, seconds: float, start: int, target: _Target, names: list[str] | None) -> bool:
        """Whether to kill now; *names*: the files just changed (None: no events, so look at the thread)."""
        thread = self.directory / "thread"
        if self.when == "random":
            return seconds >= target.delay
        if self.when == "in_save":
            if names is None:
                return _underway(thread, start) > start + target.saves
            # act on the event itself (looking at the whole thread first would let the save run on): early,
            # a save's first write (a full save's history temp file, a journal-first save's journal line);
            # late, its history copy renamed in
            pattern = _GENERATION_FILE if target.late else _TEMP_GENERATION
            made = max((int(m.group(1)) for name in names if (m := pattern.match(name))), default=0)
            if not target.late and JOURNAL_NAME in names:
                made = max(made, _journal_generation(thread))
            return made > start + target.saves
        if self.when == "saves" and names is not None and JOURNAL_NAME not in names:
            return False  # a save is counted by its journal line: nothing to count yet
        moment = Moment(number, seconds, max(_journal_generation(thread) - start, 0))
        return moment.saves >= target.saves if self.when == "saves" else bool(self.when(moment))


def _restore(thread: Path) -> Restored | str | None:
    """A fresh store's restore of *thread*: None if nothing is saved yet, the reason if nothing verifies."""
    try:
        return HandoffStore(thread).restore()
    except NoHandoffError:
        return None
    except HandoffError as exc:
        return str(exc)


def _mirror_generation(thread: Path) -> int | None:
    try:
        return read_mirror(thread / MIRROR_NAME).generation
    except HandoffError:
        return None  # missing (nothing saved yet) or cut short: history/ and the journal tell


def _signal(proc: subprocess.Popen[bytes], signum: int, now: float) -> tuple[int, float]:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)
    return signum, now
