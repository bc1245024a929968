"""One supervisor per thread, and no agent outlives it: real `handoff run` processes, real SIGKILLs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from handoff_files.foundation.holder import HOST
from handoff_files.foundation.lockfile import RUN_LOCK_NAME

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; parent death is Linux's")

#: Long enough for any single wait here; a test that hits it has hung, not run slowly.
WAIT = 30.0

# an agent that records its pid (a new file per agent, written whole before it is seen), then
# sleeps until told to stop by the file named in its second argument
AGENT = """
import os, sys, time
folder, stop = sys.argv[1], sys.argv[2]
temp = os.path.join(folder, f".{os.getpid()}")
with open(temp, "w") as handle:
    handle.write(str(os.getpid()))
os.rename(temp, os.path.join(folder, str(os.getpid())))
deadline = time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < deadline:
    time.sleep(0.01)
"""

# `handoff run` as the CLI runs it, with the parent-death signal taken away: the fallback where
# prctl is missing (not Linux, or no libc to call it from)
NO_PRCTL = """
import runpy, sys
import handoff_files.run.process as process
process.parent_death_hook = lambda: None
sys.argv = ["handoff", *sys.argv[1:]]
runpy.run_module("handoff_files", run_name="__main__")
"""


def _state(pid: int) -> str | None:
    """The process's state letter from /proc ("Z": a zombie), or None if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _running(pid: int) -> bool:
    # a killed agent reparented to an init that does not reap is a zombie: it runs no more
    return _state(pid) not in (None, "Z", "X")


def _wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.01)


class Runs:
    """`handoff run` processes started by a test, with their output in files; all ended at the end."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.tmp_path = tmp_path
        self.env = env
        self.agents = tmp_path / "agents"  # one file per agent started, named by its pid
        self.agents.mkdir()
        self.stop_file = tmp_path / "stop"
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, thread: Path, *, prctl: bool = True) -> subprocess.Popen[bytes]:
        number = len(self.procs)
        head = [sys.executable, "-m", "handoff_files"] if prctl else [sys.executable, "-c", NO_PRCTL]
        command = [*head, "run", str(thread), "--", sys.executable, "-c", AGENT, str(self.agents), str(self.stop_file)]
        with (self.tmp_path / f"{number}.out").open("wb") as out, (self.tmp_path / f"{number}.err").open("wb") as err:
            proc = subprocess.Popen(command, stdout=out, stderr=err, env=self.env)
        self.procs.append(proc)
        return proc

    def err(self, proc: subprocess.Popen[bytes]) -> str:
        return (self.tmp_path / f"{self.procs.index(proc)}.err").read_text(encoding="utf-8")

    def agent_pids(self) -> list[int]:
        return sorted(int(path.name) for path in self.agents.iterdir() if not path.name.startswith("."))

    def one_agent(self) -> int:
        _wait_for(self.agent_pids, "an agent to start")
        [pid] = self.agent_pids()
        return pid

    def close(self) -> None:
        self.stop_file.touch()  # every agent still running ends by itself
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.wait(WAIT)
        for pid in self.agent_pids():  # a leftover agent this test made: its pid is not reused while it runs
            if _running(pid) and str(self.agents) in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def runs(tmp_path: Path, subprocess_env: dict[str, str]) -> Iterator[Runs]:
    """Start `handoff run`s (``runs.start(thread)``); whatever a failed test left running is ended."""
    started = Runs(tmp_path, subprocess_env)
    try:
        yield started
    finally:
        started.close()


def test_a_sigkilled_supervisors_agent_dies_with_it(runs: Runs, thread_dir: Path) -> None:
    supervisor = runs.start(thread_dir)
    agent = runs.one_agent()
    assert _running(agent)
    supervisor.send_signal(signal.SIGKILL)  # no handler runs: only the kernel can end the agent now
    supervisor.wait(WAIT)
    _wait_for(lambda: not _running(agent), "the agent to die with its supervisor", timeout=5)


def test_a_second_run_on_a_thread_is_refused_naming_the_first(runs: Runs, thread_dir: Path) -> None:
    first, second = runs.start(thread_dir), runs.start(thread_dir)
    agent = runs.one_agent()
    _wait_for(lambda: first.poll() is not None or second.poll() is not None, "one run to be refused")
    refused, running = (first, second) if first.poll() is not None else (second, first)
    time.sleep(0.3)  # an agent the refused run started would have written its pid by now
    assert runs.agent_pids() == [agent]
    assert refused.returncode == 1
    told = runs.err(refused)
    assert told.count("\n") == 1, told  # one line, no traceback
    assert told.startswith(f"handoff: {thread_dir}: ")
    assert f"another handoff run supervises this thread (pid {running.pid} since " in told
    assert running.poll() is None
    runs.stop_file.touch()
    assert running.wait(WAIT) == 0


def test_a_run_after_a_finished_one_starts_and_the_lock_is_private(runs: Runs, thread_dir: Path) -> None:
    runs.stop_file.touch()  # each agent ends at once
    assert runs.start(thread_dir).wait(WAIT) == 0
    lock = thread_dir / RUN_LOCK_NAME
    assert lock.stat().st_mode & 0o777 == 0o600
    assert not lock.read_bytes().strip()  # the holder's record was blanked when it let go
    assert runs.start(thread_dir).wait(WAIT) == 0
    assert len(runs.agent_pids()) == 2


def test_the_record_of_a_dead_supervisor_does_not_block_the_next_run(runs: Runs, thread_dir: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", "pass"]) as gone:
        gone.wait(WAIT)
    thread_dir.mkdir(mode=0o700)
    record = {"pid": gone.pid, "host": HOST, "since": "2020-01-01T00:00:00.000Z"}
    (thread_dir / RUN_LOCK_NAME).write_text(json.dumps(record) + "\n", encoding="utf-8")
    runs.stop_file.touch()
    done = runs.start(thread_dir)
    assert done.wait(WAIT) == 0, runs.err(done)
    assert len(runs.agent_pids()) == 1


def test_a_sigkilled_supervisor_killed_in_the_middle_frees_the_thread_for_the_next(
    runs: Runs, thread_dir: Path
) -> None:
    first = runs.start(thread_dir)
    agent = runs.one_agent()
    first.send_signal(signal.SIGKILL)
    first.wait(WAIT)
    _wait_for(lambda: not _running(agent), "the agent to die with its supervisor", timeout=5)
    runs.stop_file.touch()
    second = runs.start(thread_dir)
    assert second.wait(WAIT) == 0, runs.err(second)


def test_without_prctl_an_agent_left_running_keeps_the_next_run_off_the_thread(runs: Runs, thread_dir: Path) -> None:
    supervisor = runs.start(thread_dir, prctl=False)
    agent = runs.one_agent()
    supervisor.send_signal(signal.SIGKILL)
    supervisor.wait(WAIT)
    time.sleep(0.2)
    assert _running(agent)  # nothing tells it its supervisor died: it runs on, holding the run lock
    refused = runs.start(thread_dir)
    assert refused.wait(WAIT) == 1
    told = runs.err(refused)
    assert told.count("\n") == 1, told
    assert f"the handoff run that held it (pid {supervisor.pid} since " in told
    assert "is gone, but a process it started still holds" in told
    assert runs.agent_pids() == [agent]
    os.kill(agent, signal.SIGKILL)
    _wait_for(lambda: not _running(agent), "the agent to die")
    runs.stop_file.touch()
    again = runs.start(thread_dir)
    assert again.wait(WAIT) == 0, runs.err(again)


def test_the_run_lock_is_the_threads_own_file_for_the_doctor(runs: Runs, thread_dir: Path) -> None:
    runs.stop_file.touch()
    assert runs.start(thread_dir).wait(WAIT) == 0
    (thread_dir / RUN_LOCK_NAME).chmod(0o644)
    doctor = subprocess.run(
        [sys.executable, "-m", "handoff_files", "doctor", "--repair", str(thread_dir)],
        capture_output=True,
        text=True,
        env=runs.env,
        check=False,
        timeout=WAIT,
    )
    assert "other entr" not in doctor.stdout, doctor.stdout  # not "not the thread's: the doctor never changes them"
    assert (thread_dir / RUN_LOCK_NAME).stat().st_mode & 0o777 == 0o600  # narrowed, as the thread's own files are
