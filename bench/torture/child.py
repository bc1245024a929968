"""The kill parts' child processes: a fork server that starts writers and readers without paying for imports again.

``python -m bench.torture.child`` is the server. It imports the library once, then reads one JSON
command per line on stdin and forks a child for each: a *writer* saving in a loop, a *save-once*
child for strace to kill inside one save, or a *reader* restoring and loading until told to stop.
Children print short lines on the server's stdout, each one ``write`` (so lines never interleave):
``ACK tag step generation seal`` after each acknowledged save, ``BEGIN tag`` before a traced save,
``READY tag`` when a save-once child waits for its signal, ``READS tag n failures`` from a reader,
``FAIL tag what`` and ``ERR tag what``; the server adds ``PID tag pid`` and ``EXIT tag pid code``.

:class:`Zygote` is the parent's side: it sends the commands and sorts the lines by child.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from bench.torture import Durability
from handoff_files import HandoffStore, load

__all__ = ["BEGIN_MARK", "END_MARK", "ROOT", "Ack", "Child", "Zygote", "content", "open_store", "size_of"]

#: The repository root: the server runs from it, so ``bench`` and ``handoff_files`` import from this checkout.
ROOT: Final = Path(__file__).resolve().parents[2]
#: Paths a save-once child stats (they do not exist) right before and right after its traced save:
#: in an strace log they mark where the save's own system calls begin and end.
BEGIN_MARK: Final = "/torture-save-begins"
END_MARK: Final = "/torture-save-ends"
#: a waiting writer polls (backing off to every 20 ms), so a writer that saves in a tight loop
#: re-takes the lock before a waiting one looks again; sleeping past one poll lets the others in.
YIELD_SECONDS: Final = 0.06


def content(writer: str, step: int, size: int) -> dict[str, Any]:
    """The five layers *writer* saves at *step*, padded with about *size* bytes: the parent rebuilds them to compare."""
    return {
        "state": {
            "active_tasks": [f"{writer} step {step}"],
            "data": {"writer": writer, "step": step, "pad": "x" * size},
        },
        "narrative": f"Writer {writer} saved step {step}.",
        "decisions": [{"decision": f"save step {step}", "reason": "the torture suite asked"}],
        "priorities": [{"task": f"save step {step + 1}", "urgency": "first"}],
        "warnings": [{"text": f"{writer} may be killed at any moment", "severity": "high"}],
    }


def size_of(sizes: Sequence[int], step: int) -> int:
    """The padding of a writer's *step* (1-based): cycled by step, so a restarted writer keeps the cycle."""
    return sizes[(step - 1) % len(sizes)]


def open_store(directory: Path, *, keep: int, durability: str) -> HandoffStore:
    """Open a thread as the torture parts do (*durability*: ``"full"`` or ``"journal"``, as a command carries it)."""
    if durability not in ("full", "journal"):
        msg = f"durability must be 'full' or 'journal', not {durability!r}"
        raise ValueError(msg)
    return HandoffStore(directory, keep=keep, durability=cast("Durability", durability))


# -- the server and its children ---------------------------------------------------------------


def _emit(*words: object) -> None:
    line = " ".join(str(word) for word in words).replace("\n", " ")[:3000] + "\n"
    # one write of less than PIPE_BUF bytes: the parent gets the line whole or (killed before it) not at all
    os.write(1, line.encode("utf-8", "replace"))


def _writer(command: dict[str, Any]) -> int:
    tag, writer, sizes = command["tag"], command["writer"], command["sizes"]
    store = open_store(Path(command["dir"]), keep=command["keep"], durability=command["durability"])
    step, stop = command["start"], command["start"] + command["count"]
    while command["count"] == 0 or step < stop:
        receipt = store.save(content(writer, step, size_of(sizes, step)))
        _emit("ACK", tag, step, receipt.generation, receipt.checksum)
        if command["yield_every"] and (step - command["start"] + 1) % command["yield_every"] == 0:
            time.sleep(YIELD_SECONDS)
        step += 1
    return 0


def _save_once(command: dict[str, Any]) -> int:
    tag, writer, sizes = command["tag"], command["writer"], command["sizes"]
    store = open_store(Path(command["dir"]), keep=command["keep"], durability=command["durability"])
    for step in range(1, command["prepare"] + 1):  # saves through the same store: its head is then cached
        receipt = store.save(content(writer, step, size_of(sizes, step)))
        _emit("ACK", tag, step, receipt.generation, receipt.checksum)
    step = command["prepare"] + 1
    layers = content(writer, step, size_of(sizes, step))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    _emit("READY", tag)
    # blocked in sigwait, the child makes no system call while strace attaches; the parent sends
    # SIGUSR1 once strace says it is attached
    signal.sigwait({signal.SIGUSR1})
    _emit("BEGIN", tag)
    with contextlib.suppress(OSError):
        Path(BEGIN_MARK).stat()
    receipt = store.save(layers)
    with contextlib.suppress(OSError):
        Path(END_MARK).stat()
    _emit("ACK", tag, step, receipt.generation, receipt.checksum)
    return 0


def _reader(command: dict[str, Any]) -> int:
    """Restore and load until the stop file appears; a failure is any error or any answer that is not sealed."""
    tag, directory, stop = command["tag"], Path(command["dir"]), Path(command["stop"])
    sources = set(command["sources"])
    primary = directory / "handoff.json"
    while not primary.exists():  # before the first save there is nothing to read
        if stop.exists():
            _emit("READS", tag, 0, 0)
            return 0
        time.sleep(0.001)
    reads = failures = 0
    # renames are atomic and ordered, so one kind of read never sees the generation go back
    seen = {"load": 0, "restore": 0}
    while not stop.exists():
        kind = "restore" if reads % 3 == 2 else "load"  # a restore costs a few loads: one read in three
        reads += 1
        problem = None
        try:
            if kind == "load":
                generation = load(primary).generation
            else:
                restored = open_store(directory, keep=command["keep"], durability=command["durability"]).restore()
                generation = restored.generation
                if restored.source not in sources or restored.handoff.seal is None:
                    problem = f"restore gave {restored.source} generation {generation}: {restored.problems}"
        except Exception as exc:  # any error at all is a failed read; the reader goes on counting
            problem, generation = f"{kind}: {type(exc).__name__}: {exc}", seen[kind]
        if problem is None and generation < seen[kind]:
            problem = f"{kind} went back to generation {generation} after {seen[kind]}"
        seen[kind] = max(seen[kind], generation)
        if problem is not None:
            failures += 1
            if failures <= 5:
                _emit("FAIL", tag, f"read {reads}: {problem}")
    _emit("READS", tag, reads, failures)
    return 0


_ROLES: Final = {"writer": _writer, "save-once": _save_once, "reader": _reader}


def _warm_up() -> None:
    """Save, restore and load once, so every lazy import is paid here and not in each forked child."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "warm-up"
        store = HandoffStore(directory)
        store.save(content("warm", 1, 10))
        store.restore()
        load(directory / "handoff.json")


def _run_child(command: dict[str, Any], inherited: list[int]) -> None:
    """In the forked child: run the role, then leave without running the server's clean-up."""
    code = 1
    try:
        for fd in inherited:  # the server's handles on its other children
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # the commands are the server's, never a child's
        os.close(devnull)
        code = _ROLES[command["op"]](command)
    except BaseException as exc:  # anything a child meets is reported, then it exits
        with contextlib.suppress(BaseException):
            _emit("ERR", command.get("tag", "?"), f"{type(exc).__name__}: {exc}")
    finally:
        os._exit(code)


def serve() -> int:
    """The fork server's loop: one forked child per command, an ``EXIT`` line for each as it ends."""
    _warm_up()
    children: dict[int, tuple[str, int]] = {}  # pidfd → (tag, pid)
    pending = b""
    _emit("SERVING", "-")
    while True:
        readable, _, _ = select.select([0, *children], [], [])
        for fd in readable:
            if fd != 0:
                tag, pid = children.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                _emit("EXIT", tag, pid, os.waitstatus_to_exitcode(status))
                continue
            chunk = os.read(0, 1 << 16)
            if not chunk:  # the parent is gone: take the children along
                for _, pid in children.values():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                return 0
            pending += chunk
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                command = json.loads(raw)
                pid = os.fork()
                if pid == 0:
                    _run_child(command, list(children))
                # a pidfd turns readable when the child ends: no SIGCHLD handler, no polling
                children[os.pidfd_open(pid)] = (command["tag"], pid)
                _emit("PID", command["tag"], pid)


# -- the parent's side ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ack:
    """One acknowledged save: the writer's step, the generation it became, and its seal."""

    step: int
    generation: int
    checksum: str


@dataclass(slots=True)
class Child:
    """What one forked child printed so far, and how it ended (``code`` is ``-9`` for SIGKILL)."""

    tag: str
    pid: int = 0
    acks: list[Ack] = field(default_factory=list)
    ready: bool = False
    begun: bool = False
    code: int | None = None
    errors: list[str] = field(default_factory=list)
    fails: list[str] = field(default_factory=list)
    reads: tuple[int, int] | None = None  # a reader's (reads, failures)


class Zygote:
    """The parent's handle on a fork server: start children, kill them, and collect what they printed.

    :param log: the file the server's and children's stderr goes to (appended to).
    :param env: variables to set for the server and its children, over the parent's environment.
    """

    def __init__(self, log: Path, *, env: Mapping[str, str] | None = None) -> None:
        self.log = log
        env = {**os.environ, **(env or {})}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        with log.open("ab") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bench.torture.child"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=ROOT,
                env=env,
            )
        if self.proc.stdin is None or self.proc.stdout is None:
            msg = "the fork server has no pipes"
            raise RuntimeError(msg)
        self._in = self.proc.stdin
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._out, False)
        self._pending = b""
        self.children: dict[str, Child] = {}
        self.serving = False
        self.until(lambda: self.serving, 120, "the fork server to start")

    def start(self, op: str, tag: str, **params: Any) -> Child:
        """Fork a child for *op* (``writer``, ``save-once``, ``reader``); returns once its pid is known."""
        if tag in self.children:
            msg = f"tag {tag!r} is already used"
            raise ValueError(msg)
        child = self.children[tag] = Child(tag)
        self._in.write(json.dumps({"op": op, "tag": tag, **params}).encode() + b"\n")
        self._in.flush()
        self.until(lambda: child.pid != 0, 60, f"the pid of {tag}")
        return child

    def kill(self, child: Child, timeout: float = 60) -> int:
        """SIGKILL *child* if it still runs and wait for its end: every line it printed is collected then."""
        if child.code is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
        return self.wait(child, timeout)

    def wait(self, child: Child, timeout: float) -> int:
        """Wait for *child* to end (its ``EXIT`` line comes after everything it printed); returns its exit code."""
        self.until(lambda: child.code is not None, timeout, f"{child.tag} to end")
        return child.code if child.code is not None else 0

    def pump(self, timeout: float) -> None:
        """Read and sort whatever the children print within *timeout* seconds (returns at the first batch)."""
        ready, _, _ = select.select([self._out], [], [], max(timeout, 0))
        if not ready:
            return
        while True:
            try:
                chunk = os.read(self._out, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                msg = f"the fork server exited (status {self.proc.poll()}); its stderr ends: {self.log_tail()}"
                raise RuntimeError(msg)
            self._pending += chunk
            while b"\n" in self._pending:
                raw, self._pending = self._pending.split(b"\n", 1)
                self._sort(raw.decode("utf-8", "replace"))

    def pump_for(self, seconds: float) -> None:
        """Keep sorting what the children print for *seconds*."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.pump(left)

    def _sort(self, line: str) -> None:
        kind, tag, *rest = [*line.split(" ", 2), ""]
        payload = rest[0]
        if kind == "SERVING":
            self.serving = True
            return
        child = self.children.setdefault(tag, Child(tag))
        words = payload.split()
        if kind == "PID":
            child.pid = int(words[0])
        elif kind == "ACK":
            child.acks.append(Ack(int(words[0]), int(words[1]), words[2]))
        elif kind == "READY":
            child.ready = True
        elif kind == "BEGIN":
            child.begun = True
        elif kind == "EXIT":
            child.code = int(words[1])
        elif kind == "READS":
            child.reads = (int(words[0]), int(words[1]))
        elif kind == "FAIL":
            child.fails.append(payload)
        else:
            child.errors.append(f"{kind} {payload}".strip())

    def until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Sort lines until *done* says so; :raises TimeoutError: naming *what* after *timeout* seconds."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                msg = f"waited {timeout:g} s for {what}; the children's stderr ends: {self.log_tail()}"
                raise TimeoutError(msg)
            self.pump(min(left, 0.5))

    def log_tail(self, size: int = 600) -> str:
        """The end of the server's and children's stderr, for an error message."""
        try:
            data = self.log.read_bytes()[-size:]
        except OSError:
            return "(no log)"
        return data.decode("utf-8", "replace").strip() or "(empty)"

    def close(self) -> None:
        """Stop the server (it kills any child still running) and wait for it."""
        if not self._in.closed:
            with contextlib.suppress(BrokenPipeError):
                self._in.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    sys.exit(serve())
