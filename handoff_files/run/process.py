"""Agent processes: start a command as the leader of its own process group, signal and stop the whole group."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import IO, Any, Final

__all__ = [
    "ForwardedSignals",
    "exit_status",
    "parent_death_hook",
    "signal_group",
    "signal_name",
    "start_group",
    "stop_group",
    "sweep_group",
]

#: How often a group being stopped is looked at, in seconds, unless the caller says otherwise.
POLL_SECONDS: Final = 0.02
_PR_SET_PDEATHSIG: Final = 1  # <linux/prctl.h>


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up once in the parent (a child between fork and exec loads nothing); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (AttributeError, OSError):  # a libc without it, or no libc to load
        return None
    return prctl


def parent_death_hook() -> Callable[[], None] | None:
    """What a child runs between fork and exec to be SIGKILLed when the thread that started it ends.

    Linux's ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the child when its parent dies,
    however it dies (SIGKILL included, where no handler of the parent's runs). The parent is the
    *thread* that forked, so the thread that starts a child must outlive it (the supervisor and the
    kill runner wait for their agents on the thread that started them). The child checks its parent
    after asking, so a parent that died first is not missed. The setting survives ``exec``, except
    of a set-user-ID, set-group-ID or file-capability program, and is not inherited by what the
    child starts: its own children outlive it unless they ask too.

    :returns: the hook, or None where ``prctl`` is missing (not Linux): there a child outlives a
        parent killed by SIGKILL, and only the parent's own clean-up (on SIGTERM, SIGINT, an error)
        stops it.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def die_with_parent() -> None:
        # in the child, before exec: a failed prctl (never for a valid signal) leaves it as it would be without one
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request was in place: die as it would have made us
            os.kill(os.getpid(), signal.SIGKILL)

    return die_with_parent


def start_group(
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    stdout: IO[bytes] | None = None,
    stderr: IO[bytes] | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start *command* as the leader of a new process group, with stdin from ``/dev/null``, dying with its parent.

    Its own group: a terminal's Ctrl-C reaches only the caller (which decides what to pass on),
    and a signal to the group reaches whatever the agent started. No stdin: an agent started in a
    background group would be stopped (SIGTTIN) by a read from the terminal, silently. Killed by
    the kernel if the calling thread ends first, where the system allows (:func:`parent_death_hook`).

    :param command: the argv.
    :param env: its whole environment.
    :param stdout: where its output goes (default: this process's).
    :param stderr: where its errors go (default: this process's).
    :param pass_fds: descriptors it inherits (every other one is closed in it).
    :returns: the started process; its pid is its group's id.
    :raises OSError: if the command cannot be started.
    """
    return subprocess.Popen(
        list(command),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        process_group=0,
        preexec_fn=parent_death_hook(),  # noqa: PLW1509 -- the only way to ask for it; the hook takes no lock, imports nothing
        pass_fds=tuple(pass_fds),
    )


def signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Send *signum* to *proc*'s whole process group; a group already gone is no error.

    *proc* leads its group (see :func:`start_group`): its pid cannot be reused while it is
    unreaped or its group lives, so the signal never reaches a stranger.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_group(
    proc: subprocess.Popen[bytes],
    *,
    grace: float,
    signum: int | None = signal.SIGTERM,
    waiting: Callable[[], None] | None = None,
    poll: float = POLL_SECONDS,
) -> int:
    """Stop *proc* and its group: *signum*, then SIGKILL after *grace* seconds; then :func:`sweep_group`.

    :param proc: a process started by :func:`start_group`.
    :param grace: seconds the group has to exit before SIGKILL.
    :param signum: the first signal (None: the caller sends its own, from *waiting*).
    :param waiting: called at each look while the grace lasts (to pass on signals as they come).
    :param poll: seconds between two looks.
    :returns: *proc*'s exit status (negative: killed by that signal).
    """
    if proc.poll() is None:
        if signum is not None:
            signal_group(proc, signum)
        deadline = time.monotonic() + grace
        while proc.poll() is None and time.monotonic() < deadline:
            if waiting is not None:
                waiting()
            time.sleep(poll)
        if proc.poll() is None:
            signal_group(proc, signal.SIGKILL)
            proc.wait()
    sweep_group(proc, grace=grace, poll=poll)
    return proc.returncode


def sweep_group(proc: subprocess.Popen[bytes], *, grace: float, poll: float = POLL_SECONDS) -> None:
    """Stop what an exited *proc* left running in its group (it would be an orphan): SIGTERM, then SIGKILL.

    :param proc: a process started by :func:`start_group`, exited.
    :param grace: seconds the leftovers have to exit before SIGKILL.
    :param poll: seconds between two looks.
    """
    if not _group_alive(proc):
        return  # the group is gone: the usual case
    signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        time.sleep(poll)
        if not _group_alive(proc):
            return
    signal_group(proc, signal.SIGKILL)


class ForwardedSignals:
    """SIGTERM and SIGINT received while a run lasts: the handler notes them, the caller's loop passes them on.

    A handler may only note: the loop that polls the agent acts, so no signal interrupts a stop
    half-way.
    """

    def __init__(self) -> None:
        self.caught: list[int] = []  # received, in order; appended by the handler, read by the loop
        self.forwarded = 0

    @contextlib.contextmanager
    def catching(self) -> Iterator[None]:
        """Catch SIGTERM and SIGINT while the block runs (only the main thread may install handlers)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous: dict[int, Any] = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.caught.append(signum)

    def forward(self, proc: subprocess.Popen[bytes]) -> None:
        """Pass the signals not yet passed on to *proc*'s group, while *proc* runs."""
        for signum in self.caught[self.forwarded :]:
            self.forwarded += 1
            if proc.poll() is None:
                signal_group(proc, signum)


def signal_name(signum: int) -> str:
    """A signal's name ("SIGKILL"), or "signal N" for a number with no name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(status: int) -> str:
    """A child's exit status in words: "killed by SIGKILL", "exited with status 3"."""
    return f"killed by {signal_name(-status)}" if status < 0 else f"exited with status {status}"
