"""strace logs of a traced save: its calls, the kill points they make, and whether a kill landed where planned.

Used by :mod:`bench.torture.syscalls`; see its docstring for why a plan is checked call by call.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from dataclasses import dataclass
from typing import Final

from bench.torture.child import BEGIN_MARK, END_MARK, Child

__all__ = ["Point", "Scenario", "Trace", "drift", "landed", "parse_trace", "plannable", "points_of"]

_PID_PREFIX: Final = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)")
_CALL: Final = re.compile(r"^([a-z_][a-z0-9_]*)\(")
_TEMP_NAME: Final = re.compile(r"\.[a-z0-9_]{8}\.tmp")
_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?')
#: calls whose quoted argument is data, not a path: compared by shape (:func:`_shape`) before a kill
_DATA_CALLS: Final = ("read(", "write(", "pread64(", "pwrite64(", "getrandom(")
#: the call a save-once child waits in while strace attaches: the log shows it or not, as the attach
#: finds it (an attach interrupts it, and whether strace sees it restarted is a race); never planned
_WAIT_CALL: Final = "rt_sigtimedwait"


@dataclass(frozen=True, slots=True)
class Scenario:
    """A save to kill: on a thread of ``prior`` generations, after ``prepare`` saves through the same store."""

    name: str
    prior: int
    prepare: int


@dataclass(frozen=True, slots=True)
class Point:
    """The *occurrence*-th call of *call* within one save: the kernel kills the child on entry to it."""

    scenario: Scenario
    call: str
    occurrence: int
    offset: int  # calls of this name between strace's attach and the save's start
    line: str  # the dry run's line for it, normalised
    earlier: tuple[str, ...] = ()  # the dry run's lines of the calls of this name before it, from the attach

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
    prelude: list[tuple[str, str]]  # the calls from the attach up to the save's start (the wait left out)


def _normalise(line: str) -> str:
    # the arguments as the call was entered: what a temp name's random part, an address or a time
    # stamp in the data looked like differs from run to run
    line = _TEMP_NAME.sub(".R.tmp", line)
    if line.startswith(("pwrite64(", "pread64(", "getrandom(")):
        # the lock's holder record (foundation/lock.py): its pid's digit count shifts where strace
        # cuts the string, so the data is not compared, only the call; random bytes never compare
        line = _STRING.sub('"…"', line)
    line = re.sub(r"0x[0-9a-f]+", "0x?", line)
    line = re.sub(r"\d+", "9", line)  # a size or an inode may gain a digit from run to run
    line = line.split(" <unfinished", 1)[0]
    if " = " in line:  # the return value, "?" for a killed call
        line = line.rsplit(" = ", 1)[0]
    return line.rstrip().removesuffix(")").rstrip(", ")


def _shape(line: str) -> str:
    """A normalised line without the data it read or wrote (a seal, a time stamp): what two runs must share."""
    return _STRING.sub('"…"', line) if line.startswith(_DATA_CALLS) else line


def parse_trace(text: str) -> Trace:
    """Read an strace log of one save-once child: the calls before ``BEGIN_MARK``, those up to ``END_MARK``."""
    before: Counter[str] = Counter()
    prelude: list[tuple[str, str]] = []
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
            if name != _WAIT_CALL:
                prelude.append((name, _normalise(line)))
            if BEGIN_MARK in line:
                phase = "save"
        elif phase == "save":
            if END_MARK in line:
                phase = "after"
                continue
            calls.append((name, _normalise(line)))
    return Trace(before, calls, killed, prelude)


def points_of(scenario: Scenario, trace: Trace) -> list[Point]:
    """Every call of a traced save as a kill point."""
    seen: Counter[str] = Counter()
    lines: dict[str, list[str]] = {}
    for name, line in trace.prelude:
        lines.setdefault(name, []).append(line)
    points = []
    for name, line in trace.calls:
        seen[name] += 1
        earlier = lines.setdefault(name, [])
        points.append(Point(scenario, name, seen[name], trace.before[name], line, tuple(earlier)))
        earlier.append(line)
    return points


def _parting(first: Trace, second: Trace) -> tuple[int, str] | None:
    """Where two dry runs part: how many of the save's calls they share, and the first call that differs."""
    for part, ours, theirs in (("before", first.prelude, second.prelude), ("of", first.calls, second.calls)):
        for index in range(max(len(ours), len(theirs))):
            one = ours[index][1] if index < len(ours) else "no call"
            other = theirs[index][1] if index < len(theirs) else "no call"
            if _shape(one) != _shape(other):
                alike = index if part == "of" else 0
                return alike, f"call #{index + 1} {part} the save: {one!r} in one run, {other!r} in the other"
    return None


def drift(first: Trace, second: Trace) -> str | None:
    """Where two dry runs of one scenario part (None: they make the same calls): a plan from them would not hold."""
    parted = _parting(first, second)
    return None if parted is None else parted[1]


def plannable(scenario: Scenario, first: Trace, second: Trace) -> list[Point]:
    """The kill points of *second* that *first* shares: every call of the save before the two runs part."""
    parted = _parting(first, second)
    points = points_of(scenario, second)
    return points if parted is None else points[: parted[0]]


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
    return _drifted(point, entered)


def _drifted(point: Point, entered: list[str]) -> str | None:
    """Whether the logged entries of the point's call (the killed one last) are not the plan's; returns how."""
    # every entry of the call since the attach is in the log, the killed one last: it must be the
    # when-th, with the arguments the dry run's call had (the log shows a killed call's input only)
    killed, before = entered[-1], entered[:-1]
    where = f"killed at {point.call} #{len(entered)} ({killed!r})"
    if len(entered) != point.when or not point.line.startswith(killed):
        return f"{where}, not #{point.when} ({point.line!r})"
    # and every entry before it the dry run's: a plan that drifted may still meet a lookalike call
    for number, (got, planned) in enumerate(zip(before, point.earlier, strict=False), 1):
        if _shape(got) != _shape(planned):
            return f"{where} as planned, but {point.call} #{number} was {got!r}, not the dry run's {planned!r}"
    if len(before) != len(point.earlier):
        return f"{where} as planned, after {len(before)} calls of it where the dry run made {len(point.earlier)}"
    return None
