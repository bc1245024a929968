"""Supervise: run an agent command, restart it when it dies, and check it took its context in."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

from handoff_files.foundation.errors import HandoffError, HandoffValidationError
from handoff_files.run.acknowledged import AckCheck
from handoff_files.run.process import (
    ForwardedSignals,
    exit_status,
    signal_name,
    start_group,
    stop_group,
    sweep_group,
)
from handoff_files.run.restart import Unrestorable, restore_or_reason, restore_story
from handoff_files.run.runlock import supervising
from handoff_files.thread.journal import Journal
from handoff_files.thread.results import Restored
from handoff_files.thread.store import HandoffStore

__all__ = ["RunResult", "supervise"]

#: How often the supervisor looks at the agent and the journal, in seconds.
POLL_SECONDS: Final = 0.02
#: Seconds between SIGTERM and SIGKILL when the supervisor stops an agent.
DEFAULT_GRACE: Final = 5.0

Report = Callable[[str], None]


@dataclasses.dataclass(frozen=True, slots=True)
class RunResult:
    """How a supervised run ended.

    ``exit_code`` is what ``handoff run`` returns: 0 if the agent finished (exit 0), 128 + the
    signal's number if a signal (SIGTERM, SIGINT) stopped the run, 1 otherwise.
    ``acknowledged`` counts the starts the agent confirmed it took its context in, ``with_code``
    those it confirmed with its briefing's acknowledgement code;
    ``last_generation`` is the thread's newest restorable generation when the run ended.
    """

    exit_code: int
    restarts: int
    acknowledged: int
    last_generation: int
    reason: str
    with_code: int = 0


def _to_stderr(message: str) -> None:
    print(f"handoff run: {message}", file=sys.stderr, flush=True)


def supervise(
    thread_dir: str | os.PathLike[str],
    command: Sequence[str],
    *,
    max_restarts: int = 10,
    backoff: float = 0.5,
    max_backoff: float = 10.0,
    ack_timeout: float = 10.0,
    on_missing_ack: Literal["stop", "restart"] = "stop",
    require_code: bool = False,
    grace: float = DEFAULT_GRACE,
    env: Mapping[str, str] | None = None,
    report: Report = _to_stderr,
) -> RunResult:
    """Run *command* as an agent on *thread_dir*: restore, start, check the acknowledgement, restart.

    Before each start the thread is restored (a thread with nothing yet is a fresh start,
    generation 0) and the agent gets ``HANDOFF_DIR`` (absolute) and ``HANDOFF_GENERATION`` in its
    environment. An agent started on a restored generation must acknowledge it
    (:meth:`HandoffStore.acknowledge`, a journal "resumed" line) within *ack_timeout* seconds,
    or it is reported as started without its context and stopped (or restarted). An agent that
    dies is restarted with exponential backoff, at most *max_restarts* times; exit 0 ends the run.
    SIGTERM and SIGINT are forwarded to the agent and end the run (only when called from the main
    thread: elsewhere signals cannot be caught, and the run ends by itself). The agent runs in its
    own process group with stdin from ``/dev/null``; the whole group is stopped on every way out,
    so no process is left behind, and the kernel kills the agent if the supervisor dies first
    (Linux; see :func:`~handoff_files.run.process.parent_death_hook`). One supervisor per thread:
    the run holds the thread's run lock (``.run.lock``) from start to end, and its agents hold it
    with it. Every start, restore and death is told to *report*. A thread whose files exist but
    none verifies is not started at all: that would be an agent started without its context.

    :param thread_dir: the thread directory.
    :param command: the agent's argv.
    :param max_restarts: how many times the agent is restarted before the run gives up.
    :param backoff: seconds before the first restart; doubled after each run that saved nothing.
    :param max_backoff: the longest wait before a restart.
    :param ack_timeout: seconds the agent has to acknowledge a restored generation.
    :param on_missing_ack: ``"stop"`` ends the run when an acknowledgement is missing; ``"restart"``
        restarts the agent (counted against *max_restarts*).
    :param require_code: count only an acknowledgement with the briefing's code (:func:`~handoff_files.brief`);
        without it, one without the code is accepted and reported.
    :param grace: seconds between SIGTERM and SIGKILL when the agent is stopped.
    :param env: the agent's base environment (default: this process's).
    :param report: called with each message in plain words (default: printed on stderr).
    :returns: how the run ended; ``exit_code`` 0 only if the agent finished.
    :raises HandoffValidationError: if an argument is out of range.
    :raises HandoffLockedError: if another run supervises the thread, or an agent one left holds its run lock.
    :raises InvalidNameError: if the directory's name is not a valid thread id.
    :raises HandoffError: if the thread directory cannot be opened as a store.
    """
    store = HandoffStore(thread_dir)
    problems = [
        "is not a directory: give the thread's directory" if store.path.exists() and not store.path.is_dir() else "",
        "command is empty: give the agent's program and its arguments" if not command else "",
        f"max_restarts must be 0 or more, not {max_restarts}" if max_restarts < 0 else "",
        f"backoff must be 0 or more seconds, not {backoff}" if backoff < 0 else "",
        f"max_backoff must be at least backoff ({backoff}), not {max_backoff}" if max_backoff < backoff else "",
        f"ack_timeout must be more than 0 seconds, not {ack_timeout}" if ack_timeout <= 0 else "",
        f"grace must be 0 or more seconds, not {grace}" if grace < 0 else "",
        f"on_missing_ack must be 'stop' or 'restart', not {on_missing_ack!r}"
        if on_missing_ack not in ("stop", "restart")
        else "",
    ]
    if any(problems):
        msg = "; ".join(problem for problem in problems if problem)
        raise HandoffValidationError(store.path, msg)
    store.init()  # the run lock lives in the thread directory
    with supervising(store.path) as run_lock:
        run = _Supervisor(
            store,
            list(command),
            _Policy(max_restarts, backoff, max_backoff, ack_timeout, on_missing_ack, require_code, grace),
            dict(os.environ if env is None else env),
            report,
            fd=run_lock,
        )
        with run.signals.catching():
            try:
                result = run.run()
            finally:
                run.stop_agent()  # whatever went wrong, the agent and its group never outlive the supervisor
        run.note(f"handoff run ended (exit {result.exit_code}): {result.reason}", exit_code=result.exit_code)
    return result


@dataclasses.dataclass(frozen=True, slots=True)
class _Policy:
    max_restarts: int
    backoff: float
    max_backoff: float
    ack_timeout: float
    on_missing_ack: Literal["stop", "restart"]
    require_code: bool
    grace: float


@dataclasses.dataclass(frozen=True, slots=True)
class _Outcome:
    """How one start ended: the agent exited (``status``), missed its acknowledgement, or a signal stopped us."""

    kind: Literal["exited", "no-ack", "signal"]
    status: int | None
    seconds: float
    acknowledged: bool


class _Supervisor:
    def __init__(
        self, store: HandoffStore, command: list[str], policy: _Policy, env: dict[str, str], report: Report, *, fd: int
    ) -> None:
        self.store = store
        self.run_lock = fd  # the run lock's descriptor: each agent holds it with us, so one left behind keeps runs off
        self.journal = Journal(store.path)
        self.command = command
        self.policy = policy
        self.env = env
        self.report = report
        self.proc: subprocess.Popen[bytes] | None = None
        self.signals = ForwardedSignals()
        self.restarts = 0
        self.acknowledged = 0
        self.with_code = 0
        self.generation = 0

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> RunResult:
        restored = self._restore()
        if isinstance(restored, str):
            return self._fail(restored)
        self._tell_restore(restored)
        failures = 0  # consecutive runs that saved nothing: the backoff doubles with each
        while True:
            why = self._start_and_watch(restored)
            if isinstance(why, RunResult):
                return why
            if self.restarts >= self.policy.max_restarts:
                self.report(f"{why}; not restarting it: it was restarted {_plural(self.restarts, 'time')} already")
                return self._fail(f"gave up after {_plural(self.restarts, 'restart')}: {why}", told=True)
            before = self.generation
            restored = self._restore()
            if isinstance(restored, str):
                return self._fail(f"{why}; {restored}")
            failures = 0 if self.generation > before else failures + 1
            delay = min(self.policy.backoff * 2 ** max(failures - 1, 0), self.policy.max_backoff)
            self.restarts += 1
            self.report(
                f"{why}; restarting in {delay:.2g} s from generation {self.generation} "
                f"(restart {self.restarts} of {self.policy.max_restarts})"
            )
            self.note(f"handoff run: {why}; restart {self.restarts}", restart=self.restarts)
            self._tell_restore(restored)
            if not self._sleep(delay):
                return self._stopped_by_signal(None)

    def _start_and_watch(self, restored: Restored | None) -> RunResult | str:
        """Start the agent once and watch it: the run's result if this ends it, else why to restart."""
        if self.signals.caught:
            return self._stopped_by_signal(None)
        # the journal's newest "resumed" line before the start: the agent's must differ from it
        ack = (
            AckCheck(self.journal, restored, self.report, require_code=self.policy.require_code)
            if restored is not None
            else None
        )
        started = self._start(restored)
        if isinstance(started, str):
            return self._fail(started)
        outcome = self._watch(started, ack)
        self.acknowledged += outcome.acknowledged
        self.with_code += ack is not None and ack.with_code
        why = self._why(outcome, restored)
        if outcome.kind == "signal":
            return self._stopped_by_signal(outcome)
        if outcome.kind == "exited" and outcome.status == 0:
            return self._finished(why, restored, outcome)
        if outcome.kind == "no-ack":
            self.stop_agent()
            why = f"{why}; stopped it"
            if self.policy.on_missing_ack == "stop":
                return self._fail(why)
        return why

    def _finished(self, why: str, restored: Restored | None, outcome: _Outcome) -> RunResult:
        """The agent exited 0: done, unless it never acknowledged the context it was given."""
        if restored is not None and not outcome.acknowledged:
            return self._fail(f"{why}: it may have done its work without its context")
        result = self._result(0, "")
        reason = f"the agent finished (exit 0) at generation {result.last_generation}, after " + _plural(
            self.restarts, "restart"
        )
        self.report(reason)
        return dataclasses.replace(result, reason=reason)

    def _fail(self, reason: str, *, told: bool = False) -> RunResult:
        if not told:
            self.report(reason)
        return self._result(1, reason)

    def _result(self, exit_code: int, reason: str) -> RunResult:
        with contextlib.suppress(HandoffError):
            self.generation = self.store.restore().generation
        return RunResult(exit_code, self.restarts, self.acknowledged, self.generation, reason, self.with_code)

    def _stopped_by_signal(self, outcome: _Outcome | None) -> RunResult:
        name = signal_name(self.signals.caught[0])
        if outcome is None:  # it came between two starts
            reason = f"stopped by {name} before the agent was (re)started"
        else:
            reason = f"stopped by {name} (passed on to the agent: {exit_status(outcome.status or 0)})"
        self.report(reason)
        # as a shell reports a command a signal ended: 128 + its number (143 for SIGTERM, 130 for SIGINT)
        return self._result(128 + self.signals.caught[0], reason)

    def _sleep(self, seconds: float) -> bool:
        """Wait *seconds*; False if a signal asked the run to stop meanwhile."""
        deadline = time.monotonic() + seconds
        while not self.signals.caught:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, POLL_SECONDS))
        return False

    # -- restore -----------------------------------------------------------------------------

    def _restore(self) -> Restored | str | None:
        """The generation the next start resumes from (None: a fresh start), or why there is none."""
        restored = restore_or_reason(self.store)
        if isinstance(restored, Unrestorable):
            return str(restored)
        self.generation = 0 if restored is None else restored.generation
        return restored

    def _tell_restore(self, restored: Restored | None) -> None:
        if restored is None:
            self.report(f"fresh start: {self.store.path} holds no handoff yet; the agent starts at generation 0")
            return
        for line in restore_story(restored):
            self.report(line)

    # -- one start ---------------------------------------------------------------------------

    def _start(self, restored: Restored | None) -> subprocess.Popen[bytes] | str:
        # abspath, not the store's absolute(): a person reading the environment gets no "..", and no
        # symlink is resolved behind their back
        directory = os.path.abspath(self.store.path)  # noqa: PTH100 -- resolve() would follow symlinks
        env = {**self.env, "HANDOFF_DIR": directory, "HANDOFF_GENERATION": str(self.generation)}
        try:
            # its own process group: the terminal's Ctrl-C reaches the supervisor, which forwards it
            self.proc = start_group(self.command, env, pass_fds=(self.run_lock,))
        except OSError as exc:
            return f"cannot start the agent {self.command[0]!r}: {exc.strerror or exc}"
        wait = f"; it has {self.policy.ack_timeout:g} s to acknowledge it" if restored is not None else ""
        self.report(f"started the agent (pid {self.proc.pid}) on generation {self.generation}{wait}")
        self.note(f"handoff run started the agent (pid {self.proc.pid}) on generation {self.generation}",
                     pid=self.proc.pid, on_generation=self.generation)  # fmt: skip
        return self.proc

    def note(self, summary: str, **fields: object) -> None:
        """Note a start, a death and restart, or the end in the thread's journal (``handoff log`` shows them).

        Best effort, and never waiting long: the agent may hold the writers' lock mid-save.
        """
        try:
            HandoffStore(self.store.path, lock_timeout=2.0).note("run", summary, **fields)
        except HandoffError as exc:
            self.report(f"could not note it in the journal: {exc.reason}")

    def _watch(self, proc: subprocess.Popen[bytes], ack: AckCheck | None) -> _Outcome:
        """Wait until the agent exits, misses its acknowledgement, or a signal arrives."""
        started = time.monotonic()
        deadline = started + self.policy.ack_timeout
        acknowledged = False
        while True:
            status = proc.poll()
            if ack is not None and not acknowledged:
                # looked at after the exit too: an agent killed just after its "resumed" line did acknowledge
                acknowledged = ack.arrived()
            if status is not None:
                seconds = time.monotonic() - started
                sweep_group(proc, grace=self.policy.grace, poll=POLL_SECONDS)
                self._forget(proc)
                return _Outcome("exited", status, seconds, acknowledged)
            if self.signals.caught:
                status = self._stop(proc, forward=True)
                return _Outcome("signal", status, time.monotonic() - started, acknowledged)
            if ack is not None and not acknowledged and time.monotonic() > deadline:
                return _Outcome("no-ack", None, time.monotonic() - started, False)
            time.sleep(POLL_SECONDS)

    def _why(self, outcome: _Outcome, restored: Restored | None) -> str:
        """The plain-words story of how a start ended."""
        generation = 0 if restored is None else restored.generation
        if outcome.kind == "no-ack":
            return (
                f"the agent started without its context: no acknowledgement of generation {generation} within "
                f'{self.policy.ack_timeout:g} s (no new "resumed" line in the journal)'
            )
        status, seconds = outcome.status or 0, outcome.seconds
        if restored is None or outcome.acknowledged:
            return f"agent {exit_status(status)} after {seconds:.1f} s"
        if status == 0:
            return f"the agent finished (exit 0) after {seconds:.1f} s without acknowledging generation {generation}"
        return f"agent {exit_status(status)} after {seconds:.1f} s before acknowledging its context"

    # -- stopping ----------------------------------------------------------------------------

    def stop_agent(self) -> None:
        """Stop the current agent and its group, if any still runs: SIGTERM, then SIGKILL after the grace."""
        if self.proc is not None:
            self._stop(self.proc, forward=False)

    def _stop(self, proc: subprocess.Popen[bytes], *, forward: bool) -> int:
        """Stop *proc*'s group: with *forward*, by the signals received (each passed on as it comes), else SIGTERM."""
        status = stop_group(
            proc,
            grace=self.policy.grace,
            signum=None if forward else signal.SIGTERM,
            waiting=functools.partial(self.signals.forward, proc) if forward else None,
            poll=POLL_SECONDS,
        )
        self._forget(proc)
        return status

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        if self.proc is proc:
            self.proc = None  # reaped and swept: nothing of it is left to stop


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
