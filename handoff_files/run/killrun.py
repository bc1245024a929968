"""Kill runs: start an agent on a thread, kill it at chosen points, restart it, and check it kept its promise."""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import select
import signal as signals
import struct
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from handoff_files.foundation.atomic import TEMP_SUFFIX
from handoff_files.foundation.clock import utc_now
from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.run.killreport import Incarnation, Kill, KillRun, completed_tasks
from handoff_files.run.process import exit_status, signal_group, start_group
from handoff_files.run.restart import AckWatch, Unrestorable, restore_or_reason
from handoff_files.thread.ackproof import claim
from handoff_files.thread.journal import Journal
from handoff_files.thread.layout import JOURNAL_NAME, ThreadDir, generation_of
from handoff_files.thread.mirror import read_mirror
from handoff_files.thread.recovery import SAVE_EVENTS
from handoff_files.thread.results import Restored
from handoff_files.thread.store import HandoffStore

# Kill, Incarnation, KillRun and completed_tasks live in killreport; re-exported here, where users import them
__all__ = ["Incarnation", "Kill", "KillRun", "Killer", "Moment", "When", "completed_tasks"]

#: The longest wait between two looks at the thread; inotify and a pidfd end a wait sooner.
LOOK_SECONDS: Final = 0.005
#: Where inotify is missing, the thread is polled this often instead.
POLL_SECONDS: Final = 0.001
_IN_MASK: Final = 0x2 | 0x80 | 0x100  # IN_MODIFY | IN_MOVED_TO | IN_CREATE


@dataclass(frozen=True, slots=True)
class Moment:
    """What a ``when`` callable sees at each look at the running agent."""

    start: int  # 1 for the first start
    seconds: float  # since this start
    saves: int  # saves this start has written to the journal


When = Literal["saves", "in_save", "random"] | Callable[[Moment], bool]


def _temp_generation(name: str) -> int | None:
    """The generation a history copy being written holds (``.00000007.json.k2x9a1b3.tmp`` → 7), or None."""
    if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
        return None
    # mkstemp's name: "." + the target's name + "." + a random part + the suffix
    return generation_of(name[1 : -len(TEMP_SUFFIX)].rpartition(".")[0])


def _look(thread: ThreadDir) -> tuple[int, int, list[int]]:
    """The newest generation in history/ and in the journal, and the temp files (a history copy's generation, or 0)."""
    history = thread.newest_generation()  # none, too, for an agent that removed its own thread
    temps = [_temp_generation(temp.name) or 0 for temp in thread.stray_temps()]
    return history, _journal_generation(thread), temps


def _journal_generation(thread: ThreadDir) -> int:
    entry, _ = Journal(thread).last(*SAVE_EVENTS)
    return 0 if entry is None or entry.generation is None else entry.generation


def _underway(thread: ThreadDir, start: int, mirror: int | None = None) -> int:
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
    layout: ThreadDir = field(init=False)  # of directory/thread, the run's thread

    def __post_init__(self) -> None:
        self.layout = ThreadDir(self.directory / "thread")

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
        layout, start = self.layout, 0 if started is None else started.generation
        ack = AckWatch(Journal(layout))  # notes the newest "resumed" line before the start: the agent's is newer
        since = utc_now()  # and written after the start: an older one copied in does not prove the code
        env = {**self.env, "HANDOFF_DIR": str(thread), "HANDOFF_GENERATION": str(start)}
        out, err = self.directory / f"{number}.out", self.directory / f"{number}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            # its own process group: a kill reaches what the agent started
            proc = start_group(self.command, env, stdout=stdout, stderr=stderr)
        begun, sent, names = time.monotonic(), (0, 0.0), None  # the signal sent (0: none) and when
        waker = _Waker([layout.path, layout.history_dir], proc.pid)
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
            signal_group(proc, signals.SIGKILL)  # whatever it left running would outlive the run
            status = proc.wait()
        seconds = time.monotonic() - begun
        resumed = ack.new_line()
        acknowledged = resumed is not None and resumed.generation == start
        landed = sent[0] and target is not None and (self.signal != signals.SIGKILL or status == -signals.SIGKILL)
        # read before a store opens the thread: opening it removes the temp files a cut save left
        in_save = bool(landed) and _underway(layout, start, _mirror_generation(layout)) > start
        left = _restore(thread)
        left = None if isinstance(left, str) else left
        after = 0 if left is None else left.generation
        kill = Kill(signals.Signals(self.signal).name, sent[1] - begun, after, in_save) if landed else None
        text = [path.read_text(encoding="utf-8", errors="replace") for path in (out, err)]
        # with the code only if the line's proof checks: a line saying so is what any folder writer can append
        proof = (
            "none"
            if resumed is None or started is None
            else claim(resumed, thread_id=started.handoff.thread_id, since=since)
        )
        with_code = acknowledged and proof == "proven"
        return Incarnation(number, started, status, seconds, text[0], text[1], acknowledged, kill, left, with_code)

    def _due(self, number: int, seconds: float, start: int, target: _Target, names: list[str] | None) -> bool:
        """Whether to kill now; *names*: the files just changed (None: no events, so look at the thread)."""
        thread = self.layout
        if self.when == "random":
            return seconds >= target.delay
        if self.when == "in_save":
            if names is None:
                return _underway(thread, start) > start + target.saves
            # act on the event itself (looking at the whole thread first would let the save run on): early,
            # a save's first write (a full save's history temp file, a journal-first save's journal line);
            # late, its history copy renamed in
            generation = generation_of if target.late else _temp_generation
            made = max((made for name in names if (made := generation(name)) is not None), default=0)
            if not target.late and JOURNAL_NAME in names:
                made = max(made, _journal_generation(thread))
            return made > start + target.saves
        if self.when == "saves" and names is not None and JOURNAL_NAME not in names:
            return False  # a save is counted by its journal line: nothing to count yet
        moment = Moment(number, seconds, max(_journal_generation(thread) - start, 0))
        return moment.saves >= target.saves if self.when == "saves" else bool(self.when(moment))


def _restore(thread: Path) -> Restored | str | None:
    """A fresh store's restore of *thread*: None if nothing verifies, the reason if it cannot be restored at all."""
    restored = restore_or_reason(thread)
    if isinstance(restored, Unrestorable):
        # a thread that lost every generation gives the next start a fresh one: problems() tells it went backwards
        return None if restored.lost else str(restored.error)
    return restored


def _mirror_generation(thread: ThreadDir) -> int | None:
    try:
        return read_mirror(thread.mirror).generation
    except HandoffError:
        return None  # missing (nothing saved yet) or cut short: history/ and the journal tell


def _signal(proc: subprocess.Popen[bytes], signum: int, now: float) -> tuple[int, float]:
    signal_group(proc, signum)
    return signum, now
