"""What a kill run found: every start of the agent, every kill, and the promises the agent broke."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from handoff_files.format.model import Handoff
from handoff_files.run.process import exit_status
from handoff_files.thread.journal import Entry
from handoff_files.thread.results import Restored

__all__ = ["Incarnation", "Kill", "KillRun", "Progress", "completed_tasks"]

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
    with_code: bool = False  # its "resumed" line says it gave its briefing's acknowledgement code

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
        self,
        steps: Sequence[str] | None = None,
        *,
        acknowledged: bool = True,
        code: bool = False,
        progress: Progress = completed_tasks,
    ) -> list[str]:
        """Every broken promise, one line each; empty when the agent kept them all.

        :param steps: the steps the finished task records, in order (None: not checked).
        :param acknowledged: require a start on a saved generation to acknowledge it before it saves or exits 0.
        :param code: require that acknowledgement to carry the briefing's code (:func:`~handoff_files.brief`):
            an agent that restored but never read its briefing is caught.
        :param progress: where a handoff records the steps done (default: ``state.completed_tasks``).
        """
        found = [] if self.finished else [f"never finished: {self.ended}"]
        if self.finished and len(self.kills) < self.kills_asked:
            found.append(self._too_few_kills())
        for run in self.incarnations[:-1] if self.timed_out else self.incarnations:
            found += _broken(run, acknowledged=acknowledged, code=code, progress=progress)
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

    def _too_few_kills(self) -> str:
        """Why a finished run fell short of its kills: how many its saves held, how many they need, what to turn."""
        landed, asked = len(self.kills), self.kills_asked
        saves = 0 if self.restored is None else self.restored.generation  # a fresh thread: its generations
        sooner = "kill it sooner (a smaller after_saves; with when='random', a shorter span)"
        done = f"landed before the agent finished its {saves} save{'' if saves == 1 else 's'}"
        if not landed:
            return f"too few kills: none of {asked} {done}: give the agent a longer task, or {sooner}"
        # each kill used up this many saves: the task holds no more kills than its saves divided by it
        per = saves / landed
        return (
            f"too few kills: only {landed} of {asked} {done} (about one kill per {per:.1f} saves, so {asked} kills "
            f"need a task of about {math.ceil(per * asked)} saves): ask for fewer kills, give the agent a longer "
            f"task, or {sooner}"
        )

    def assert_finished(
        self,
        steps: Sequence[str] | None = None,
        *,
        acknowledged: bool = True,
        code: bool = False,
        progress: Progress = completed_tasks,
    ) -> None:
        """Assert the agent finished, every kill landed, and every start carried on from its handoff.

        Takes :meth:`problems`'s arguments; the message shows the first few problems of each kind.

        :raises AssertionError: listing the broken promises, the seed, and the last starts' output.
        """
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        if found := self.problems(steps, acknowledged=acknowledged, code=code, progress=progress):
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


def _broken(run: Incarnation, *, acknowledged: bool, code: bool, progress: Progress) -> list[str]:
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
    elif code and run.acknowledged and not run.with_code and (after > run.generation or run.status == 0):
        found.append(f"acknowledged without the code: {where} never gave its briefing's code: did it read it?")
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
