"""The supervisor with real agents: SIGKILLs at random moments, missing acknowledgements, crashes, signals, orphans."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore, HandoffValidationError
from handoff_files.run.supervise import RunResult, supervise
from handoff_files.thread.journal import Journal

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="kills agents through pidfds (Linux)")

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "samples" / "acking_agent.py"
FAST_KILLS = 12
SLOW_KILLS = 200
#: Generous: an honest agent acknowledges within a fraction of a second even on a loaded machine.
HONEST_ACK_TIMEOUT = 30.0
#: Long enough for any single wait in these tests; a test that hits it has hung, not run slowly.
WAIT = 60.0

# The supervisor runs in a process of its own, as `handoff run` will run it: signal handlers need
# a main thread, the agents' stdout reaches the test through the supervisor's as a person would
# see it, and a failing test ends the whole tree with one SIGTERM to the supervisor.
DRIVER = """
import dataclasses, json, sys
from handoff_files.run.supervise import supervise
options = json.loads(sys.argv[1])
result = supervise(options.pop("thread"), sys.argv[3:], **options)
with open(sys.argv[2], "w", encoding="utf-8") as handle:
    json.dump(dataclasses.asdict(result), handle)
sys.exit(result.exit_code)
"""

#: An agent that prints what its environment says, acknowledging what there is to acknowledge.
ENV_AGENT = """
import json, os
from handoff_files import HandoffStore, NoHandoffError
store = HandoffStore(os.environ["HANDOFF_DIR"])
try:
    store.acknowledge(store.restore())
except NoHandoffError:
    pass
print("ENV " + json.dumps({name: os.environ.get(name) for name in ("HANDOFF_DIR", "HANDOFF_GENERATION")}))
"""

_RESTORED = re.compile(r"^RESTORED GEN (\d+) STEP (\d+) EXPECTED (\d+)$")
_STEP = re.compile(r"^STEP (\d+) GEN (\d+)$")
_ACKED_REPORT = re.compile(r"the agent acknowledged its context: resumed from generation (\d+)\b")
_RESTART_REPORT = re.compile(r"restarting in ([\d.e-]+) s from generation (\d+) \(restart (\d+) of \d+\)$")


class Supervised:
    """A supervisor process and what it printed: threads drain its stdout (the agents') and stderr (its reports)."""

    def __init__(
        self, python: str, env: Mapping[str, str], thread: Path, command: list[str], result: Path, **options: Any
    ) -> None:
        self.result_path = result
        self.proc = subprocess.Popen(
            [python, "-c", DRIVER, json.dumps({"thread": str(thread), **options}), str(result), *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._drains = [
            threading.Thread(target=self._drain, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for drain in self._drains:
            drain.start()

    @staticmethod
    def _drain(stream: Any, lines: list[str]) -> None:
        with stream:
            for line in stream:
                lines.append(line.rstrip("\n"))

    def finish(self, timeout: float = WAIT) -> RunResult:
        """Wait for the supervisor to end and return its result."""
        status = self.proc.wait(timeout)
        for drain in self._drains:
            drain.join(timeout)
        assert self.result_path.exists(), f"the supervisor died (status {status}) without a result: {self.err[-5:]}"
        result = RunResult(**json.loads(self.result_path.read_text(encoding="utf-8")))
        assert status == result.exit_code
        return result

    def stop(self) -> None:
        """End the supervisor if a failed test left it running: SIGTERM (it stops its agent), else SIGKILL."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for drain in self._drains:
            drain.join(WAIT)

    def reports(self, pattern: str) -> list[str]:
        """The supervisor's report lines containing *pattern*."""
        return [line for line in list(self.err) if pattern in line]


@pytest.fixture
def supervisor(python: str, subprocess_env: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    """Start supervisors (``supervisor(thread, command, **options)``); any left running is stopped at the end."""
    started: list[Supervised] = []

    def start(thread: Path, command: list[str], **options: Any) -> Supervised:
        supervised = Supervised(
            python, subprocess_env, thread, command, tmp_path / f"result-{len(started)}.json", **options
        )
        started.append(supervised)
        return supervised

    yield start
    for supervised in started:
        supervised.stop()


def _agent(python: str, steps: int, *options: str) -> list[str]:
    return [python, str(AGENT), str(steps), *options]


def _prime(thread: Path, step: int, steps: int = 1000) -> None:
    """Save generations 1..*step* as the acking agent would have, so the next start has context to take in."""
    store = HandoffStore(thread)
    for k in range(1, step + 1):
        store.save(
            {
                "state": {"data": {"step": k, "steps": steps}},
                "narrative": f"Finished step {k} of {steps}.",
                "priorities": [],
                "warnings": [],
                "decisions": [],
            }
        )


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the name in parentheses may hold spaces


def _kill_agent(pid: int, supervisor_pid: int) -> bool:
    """SIGKILL *pid* if it is the supervisor's child; through a pidfd, so a reused pid is never hit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        # checked after the pidfd is open: if the pid was reused meanwhile, the pidfd's process is
        # dead and the send below fails
        if _parent_of(pid) != supervisor_pid or _zombie(pid):
            return False  # not ours, or already finished (a signal to a zombie "succeeds" and does nothing)
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False
    finally:
        os.close(fd)


def _zombie(pid: int) -> bool:
    """Whether *pid* has exited and waits to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _live_processes_with(marker: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds *marker*: orphans, after a run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_for(condition: Any, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.005)


# -- SIGKILLs at random moments -----------------------------------------------------------------


def _new_agent(pidfile: Path, previous: tuple[int, int] | None, sup: Supervised) -> tuple[int, int] | None:
    """Wait for the next agent's pidfile (a new file each start); None if the run ended first."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if sup.proc.poll() is not None:
            return None
        try:
            # the inode and the pid from one open file: a stat of the path, then a read of it, can
            # straddle the next agent's rename and pair the old file's inode with the new pid, a key
            # that differs from the next read's, so one agent came back twice and, still dying from
            # its SIGKILL (not yet a zombie), was "killed" and counted again
            with pidfile.open(encoding="utf-8") as handle:
                key = (os.fstat(handle.fileno()).st_ino, int(handle.read()))
        except (OSError, ValueError):  # not written yet
            key = None
        if key is not None and key != previous and _parent_of(key[1]) == sup.proc.pid:
            return key
        time.sleep(0.002)
    pytest.fail(f"no new agent started within {WAIT} s: {sup.err[-5:]}")


def _last_step(sup: Supervised) -> int:
    steps = [int(m.group(1)) for line in list(sup.out) if (m := _STEP.match(line))]
    return max(steps, default=0)


def _wait_for_step(sup: Supervised, step: int) -> None:
    _wait_for(lambda: _last_step(sup) >= step or sup.proc.poll() is not None, f"the agent's step {step}")


def _kill_loop(sup: Supervised, pidfile: Path, kills: int, rng: random.Random) -> dict[str, int]:
    """Kill *kills* successive agents, each at a seeded random moment; returns how many landed where."""
    moments = {"restoring": 0, "acknowledging": 0, "working": 0}
    previous = None
    done = 0
    while done < kills:
        agent = _new_agent(pidfile, previous, sup)
        assert agent is not None, f"the task finished after only {done} kills: give the agent more steps"
        previous = agent
        moment = rng.choices(list(moments), (2, 3, 5))[0]
        if moment == "acknowledging":
            time.sleep(rng.uniform(0, 0.03))  # around the restore, the journal's "resumed" line, the first save
        elif moment == "working":
            # a few steps in, then somewhere inside a step: its work, or its save; bounded by steps,
            # not time, so each agent gets only a few steps done and the task outlasts the kills
            _wait_for_step(sup, _last_step(sup) + rng.randint(1, 3))
            time.sleep(rng.uniform(0, 0.012))
        # "restoring": at once; the pidfile is written just before the restore
        if _kill_agent(agent[1], sup.proc.pid):
            moments[moment] += 1
            done += 1
    return moments


def _check_continuity(sup: Supervised, result: RunResult, thread: Path, steps: int, kills: int) -> None:
    """Every restart resumed at or past the last acknowledged generation, every ack was seen, every step done once."""
    assert result.exit_code == 0, result.reason
    assert result.restarts == kills, result
    assert len(sup.reports("agent killed by SIGKILL")) == kills, "a kill landed on an agent that was exiting anyway"
    assert not sup.reports("without its context"), sup.reports("without its context")

    # the supervisor's own story: each restart resumes from a generation at or past the last acknowledged one
    last_acked = 0
    for line in list(sup.err):
        if m := _ACKED_REPORT.search(line):
            assert int(m.group(1)) >= last_acked, line
            last_acked = int(m.group(1))
        elif m := _RESTART_REPORT.search(line):
            assert int(m.group(2)) >= last_acked, f"restarted behind the last acknowledged generation: {line}"

    # the journal's: the supervisor saw every acknowledgement the agents wrote, and none went backwards
    entries, problems = Journal(thread).entries()
    assert not [p for p in problems if "torn" not in p], problems
    resumed = [entry for entry in entries if entry.event == "resumed"]
    assert result.acknowledged == len(resumed) == len(sup.reports("the agent acknowledged its context"))
    assert result.acknowledged >= sum(line.startswith("ACKED") for line in sup.out)
    saved_before = 0
    for entry in entries:
        if entry.event == "saved":
            saved_before = entry.generation or 0
        elif entry.event == "resumed":
            assert (entry.generation or 0) >= saved_before, f"resumed behind the last save: {entry}"

    # the agents': each started on the generation the supervisor restored, at the step it holds
    starts = [tuple(map(int, m.groups())) for line in sup.out if (m := _RESTORED.match(line))]
    assert starts, sup.out[:5]
    for generation, step, expected in starts:
        assert generation == expected == step, f"restored generation {generation}, step {step}, expected {expected}"

    # each step done exactly once: a step reported done is never done again, and generation k holds step k
    done = [tuple(map(int, m.groups())) for line in sup.out if (m := _STEP.match(line))]
    numbers = [step for step, _ in done]
    assert len(numbers) == len(set(numbers)), "a step was done twice"
    assert all(step == generation for step, generation in done)
    for entry in entries:
        if entry.event == "saved":
            assert entry.summary.startswith(f"Finished step {entry.generation} of "), entry
    final = HandoffStore(thread).restore()
    assert final.generation == result.last_generation == steps
    assert final.handoff.state.data["step"] == steps


def _kill_run(
    supervisor: Any, python: str, thread: Path, tmp_path: Path, *, kills: int, seed: int
) -> tuple[dict[str, int], RunResult]:
    # each agent gets at most a few steps done before its kill, so this many steps outlast the kills
    steps = 20 * kills + 50  # a margin wide enough that the task always outlasts the kills (6x was not)
    pidfile = tmp_path / "agent.pid"
    sup = supervisor(
        thread,
        _agent(python, steps, "--delay", "0.01", "--pidfile", str(pidfile)),
        max_restarts=kills,
        backoff=0.01,
        max_backoff=0.05,
        ack_timeout=HONEST_ACK_TIMEOUT,
    )
    moments = _kill_loop(sup, pidfile, kills, random.Random(seed))
    result = sup.finish(WAIT + steps * 0.1)
    print(f"\nkills by moment: {moments}; {result} (seed {seed})")  # shown with -s
    _check_continuity(sup, result, thread, steps, kills)
    assert not _live_processes_with(str(pidfile)), "an agent outlived its supervisor"
    return moments, result


@pytest.mark.slow  # make slow: its hundreds-of-kills sibling is slow too; supervise's restart tests stay
def test_sigkilled_agent_resumes_from_its_last_acknowledged_generation_every_time(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    moments, result = _kill_run(supervisor, python, thread_dir, tmp_path, kills=FAST_KILLS, seed=20240612)
    assert sum(moments.values()) == FAST_KILLS
    assert result.acknowledged >= 1


@pytest.mark.slow
def test_hundreds_of_sigkills_under_the_supervisor_never_lose_continuity(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    # HANDOFF_KILLS and HANDOFF_SEED make this a longer torture run, or replay a failure
    kills = int(os.environ.get("HANDOFF_KILLS", str(SLOW_KILLS)))
    seed = int(os.environ.get("HANDOFF_SEED", "11"))
    moments, _ = _kill_run(supervisor, python, thread_dir, tmp_path, kills=kills, seed=seed)
    assert sum(moments.values()) == kills
    assert all(moments.values()), f"every kind of moment was hit: {moments}"


# -- agents that never acknowledge ---------------------------------------------------------------


def test_agent_that_never_acknowledges_is_reported_stopped_and_fails_the_run(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    _prime(thread_dir, 3)
    pidfile = tmp_path / "no-ack.pid"
    sup = supervisor(
        thread_dir, _agent(python, 10_000, "--no-ack", "--pidfile", str(pidfile)), ack_timeout=2.0, grace=2.0
    )
    result = sup.finish()
    assert result.exit_code == 1
    assert (result.restarts, result.acknowledged) == (0, 0)
    assert "started without its context" in result.reason
    assert "generation 3" in result.reason
    assert len(sup.reports("the agent started without its context")) == 1
    assert any(line.startswith("RESTORED GEN 3") for line in sup.out), "the agent did start"
    assert not _live_processes_with(str(pidfile)), "the agent outlived its supervisor"


def test_agent_that_never_acknowledges_is_restarted_until_max_restarts_when_asked(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    _prime(thread_dir, 2)
    pidfile = tmp_path / "no-ack.pid"
    sup = supervisor(
        thread_dir,
        _agent(python, 10_000, "--no-ack", "--pidfile", str(pidfile)),
        ack_timeout=2.0,  # long enough for a loaded machine to start Python and restore (0.5 s was not)
        on_missing_ack="restart",
        max_restarts=2,
        backoff=0.01,
    )
    result = sup.finish()
    assert (result.exit_code, result.restarts, result.acknowledged) == (1, 2, 0)
    assert result.reason.startswith("gave up after 2 restarts: the agent started without its context")
    assert len(sup.reports("the agent started without its context")) == 3
    assert len(sup.reports("restarting in")) == 2
    assert sum(line.startswith("RESTORED") for line in sup.out) == 3
    assert not _live_processes_with(str(pidfile))


def test_agent_that_finishes_without_acknowledging_fails_the_run(
    supervisor: Any, python: str, thread_dir: Path
) -> None:
    _prime(thread_dir, 4, steps=6)
    sup = supervisor(thread_dir, _agent(python, 6, "--no-ack", "--delay", "0"), ack_timeout=HONEST_ACK_TIMEOUT)
    result = sup.finish()
    assert result.exit_code == 1
    assert "finished (exit 0)" in result.reason
    assert "without acknowledging generation 4" in result.reason
    assert result.last_generation == 6


def test_acknowledging_agent_on_a_restored_thread_finishes_the_run(
    supervisor: Any, python: str, thread_dir: Path
) -> None:
    _prime(thread_dir, 2, steps=5)
    sup = supervisor(thread_dir, _agent(python, 5, "--delay", "0"), ack_timeout=HONEST_ACK_TIMEOUT)
    result = sup.finish()
    assert (result.exit_code, result.restarts, result.acknowledged, result.last_generation) == (0, 0, 1, 5)
    assert sup.reports("restored generation 2 from the primary")
    assert sup.out[-1] == "DONE STEP 5 GEN 5"


# -- agents that keep crashing -------------------------------------------------------------------


def test_agent_that_keeps_crashing_stops_after_max_restarts_with_a_clear_reason(
    supervisor: Any, python: str, thread_dir: Path
) -> None:
    sup = supervisor(thread_dir, [python, "-c", "raise SystemExit(3)"], max_restarts=3, backoff=0.01, max_backoff=0.03)
    result = sup.finish()
    assert (result.exit_code, result.restarts, result.acknowledged, result.last_generation) == (1, 3, 0, 0)
    assert result.reason.startswith("gave up after 3 restarts: agent exited with status 3")
    restarts = [_RESTART_REPORT.search(line) for line in sup.reports("restarting in")]
    # nothing saved between crashes: the wait doubles each time, up to max_backoff
    assert [float(m.group(1)) for m in restarts if m] == [0.01, 0.02, 0.03]
    assert len(sup.reports("fresh start")) == 4


def test_agent_killed_by_a_signal_is_reported_by_the_signals_name(
    supervisor: Any, python: str, thread_dir: Path
) -> None:
    command = [python, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    sup = supervisor(thread_dir, command, max_restarts=1, backoff=0.01)
    result = sup.finish()
    assert result.exit_code == 1
    assert "agent killed by SIGKILL after" in result.reason
    assert sup.reports("agent killed by SIGKILL after")[0].endswith(
        "restarting in 0.01 s from generation 0 (restart 1 of 1)"
    )


def test_a_command_that_cannot_start_fails_the_run(supervisor: Any, thread_dir: Path, tmp_path: Path) -> None:
    sup = supervisor(thread_dir, [str(tmp_path / "no-such-agent")])
    result = sup.finish()
    assert (result.exit_code, result.restarts) == (1, 0)
    assert "cannot start the agent" in result.reason


def test_a_thread_where_nothing_verifies_is_not_started_as_a_fresh_one(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    thread_dir.mkdir(mode=0o700)
    (thread_dir / "handoff.json").write_text('{"schema_version": "2.0", "generation": 7, "trunc')
    pidfile = tmp_path / "agent.pid"
    sup = supervisor(thread_dir, _agent(python, 3, "--pidfile", str(pidfile)))
    result = sup.finish()
    assert result.exit_code == 1
    assert result.reason.startswith("not starting the agent without its context")
    assert not pidfile.exists(), "the agent was started on an empty context"


# -- the environment ----------------------------------------------------------------------------


@pytest.mark.parametrize("generation", [pytest.param(0, id="fresh"), pytest.param(3, id="restored")])
def test_handoff_dir_and_generation_reach_the_agent(
    supervisor: Any, python: str, tmp_path: Path, generation: int
) -> None:
    thread = tmp_path / "env-thread"
    if generation:
        _prime(thread, generation)
    # a relative path: the agent still gets an absolute one
    relative = Path(os.path.relpath(thread))
    sup = supervisor(relative, [python, "-c", ENV_AGENT], ack_timeout=HONEST_ACK_TIMEOUT)
    result = sup.finish()
    assert result.exit_code == 0, result.reason
    assert result.acknowledged == (1 if generation else 0)
    env = json.loads(next(line for line in sup.out if line.startswith("ENV "))[4:])
    assert env == {"HANDOFF_DIR": str(thread.absolute()), "HANDOFF_GENERATION": str(generation)}


# -- signals and orphans -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "signum", [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]
)
def test_sigterm_or_sigint_to_the_supervisor_reaches_the_agent_and_ends_the_run(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    _prime(thread_dir, 1)
    pidfile = tmp_path / "agent.pid"
    sup = supervisor(
        thread_dir, _agent(python, 10_000, "--delay", "0.05", "--pidfile", str(pidfile)), ack_timeout=HONEST_ACK_TIMEOUT
    )
    _wait_for(lambda: any(line.startswith("ACKED") for line in sup.out), "the agent's acknowledgement")
    sup.proc.send_signal(signum)
    result = sup.finish()
    assert result.exit_code == 128 + signum  # 143 for SIGTERM, 130 for SIGINT, as a shell says it
    assert result.reason.startswith(f"stopped by {signum.name} (passed on to the agent:")
    assert result.acknowledged == 1
    assert not sup.reports("restarting in")
    assert not _live_processes_with(str(pidfile))


def test_agent_that_ignores_sigterm_is_killed_after_the_grace(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "stubborn-agent"
    command = [
        python,
        "-c",
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('READY', flush=True); "
        "time.sleep(600)",
        str(marker),  # not read: it marks the process so the test can find it
    ]
    sup = supervisor(thread_dir, command, grace=0.3)
    _wait_for(lambda: "READY" in sup.out, "the agent to start")
    sup.proc.send_signal(signal.SIGTERM)
    result = sup.finish()
    assert result.reason == "stopped by SIGTERM (passed on to the agent: killed by SIGKILL)"
    assert not _live_processes_with(str(marker))


def test_what_a_dead_agent_left_running_in_its_group_is_stopped(
    supervisor: Any, python: str, thread_dir: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "left-behind"
    # the agent starts a child that outlives it, then dies
    command = [
        python,
        "-c",
        "import subprocess, sys; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[1]]); "
        "sys.exit(5)",
        str(marker),
    ]
    sup = supervisor(thread_dir, command, max_restarts=1, backoff=0.01, grace=0.5)
    result = sup.finish()
    assert result.reason.startswith("gave up after 1 restart: agent exited with status 5")
    assert not _live_processes_with(str(marker))


# -- in this process -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        pytest.param({"max_restarts": -1}, "max_restarts must be 0 or more", id="max_restarts"),
        pytest.param({"ack_timeout": 0}, "ack_timeout must be more than 0", id="ack_timeout"),
        pytest.param({"backoff": 2.0, "max_backoff": 1.0}, "max_backoff must be at least backoff", id="backoff"),
        pytest.param({"on_missing_ack": "ignore"}, "on_missing_ack must be 'stop' or 'restart'", id="on_missing_ack"),
    ],
)
def test_arguments_out_of_range_are_refused_before_anything_starts(
    thread_dir: Path, python: str, options: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(HandoffValidationError, match=complaint):
        supervise(thread_dir, [python, "-c", "pass"], **options)
    with pytest.raises(HandoffValidationError, match="command is empty"):
        supervise(thread_dir, [])
    assert not thread_dir.exists()


def test_supervise_from_another_thread_tells_its_story_through_report(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # off the main thread no signal handler can be installed: the run must work without one
    _prime(thread_dir, 1, steps=2)
    told: list[str] = []
    results: list[RunResult] = []
    command = _agent(python, 2, "--delay", "0")
    worker = threading.Thread(
        target=lambda: results.append(
            supervise(thread_dir, command, env=subprocess_env, ack_timeout=HONEST_ACK_TIMEOUT, report=told.append)
        )
    )
    worker.start()
    worker.join(WAIT)
    assert results, "supervise() did not return"
    assert (results[0].exit_code, results[0].acknowledged, results[0].last_generation) == (0, 1, 2)
    assert told[0] == "restored generation 1 from the primary (handoff.json)"
    assert told[-1] == "the agent finished (exit 0) at generation 2, after 0 restarts"
