"""The inbox across real processes: racing acceptors, SIGKILLed participants, serve() adopting real checkpoints."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from handoff_files import HandoffStore
from handoff_files.format import seal as sealing
from handoff_files.foundation.atomic import write_durable
from handoff_files.inbox.fallback import request_handoff_with_fallback
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.serve import thread_id_for
from handoff_files.inbox.status import HandoffStatus
from handoff_files.transfers.blobs import LocalBlobStore, blob_path
from handoff_files.transfers.descriptor import Descriptor
from handoff_files.transfers.export import handoff_checkpoint
from tests.inbox_child import READY, SCRIPT

#: Generous: every wait ends as soon as its condition holds, so only a broken inbox pays for it.
WAIT = 60.0
RACERS = 8
KILLS = 5  # per participant kind; each is followed by a fresh process's check
# the lifecycle's order: a status a participant saw acknowledged may only move forward
_ORDER = {"PENDING": 0, "ACCEPTED": 1, "COMPLETED": 2, "REJECTED": 1, "EXPIRED": 1}


class Child:
    """One participant process (tests/inbox_child.py); a thread drains its stdout so a full pipe never stalls it."""

    def __init__(self, python: str, args: list[str], env: dict[str, str], log: IO[str]) -> None:
        self.proc = subprocess.Popen(
            [python, str(SCRIPT), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                # a line cut short by a kill has no newline: it was never said
                if line.endswith("\n"):
                    self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, found: Callable[[list[str]], bool], timeout: float = WAIT) -> list[str]:
        """Wait until *found* holds for the lines so far; fail the test if the child ends or time runs out."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not found(self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    pytest.fail(f"child {self.proc.args!r} never said what was awaited; it said {self.lines[-5:]}")
                self._cond.wait(min(left, 0.1))
            return list(self.lines)

    def said(self, word: str) -> list[list[str]]:
        """The lines starting with *word*, split into words."""
        with self._cond:
            return [line.split() for line in self.lines if line.split()[:1] == [word]]

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self._close()

    def finish(self) -> int:
        """Close stdin (a server's signal to stop) and wait for the exit code."""
        return self._close()

    def _close(self) -> int:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        if not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # the child is gone already: nothing to flush to it
                self.proc.stdin.close()
        code = self.proc.wait(WAIT)
        self._reader.join(WAIT)
        self.proc.stdout.close()
        return code


@pytest.fixture
def spawn(tmp_path: Path, python: str, subprocess_env: dict[str, str]) -> Iterator[Callable[..., Child]]:
    """Start participant processes; any still alive at the end is killed, so a failing test leaves none behind."""
    children: list[Child] = []
    log = (tmp_path / "children.log").open("a")

    def start(*args: str) -> Child:
        # the AWS variables a bucket's fixture set after this one was made
        aws = {name: value for name, value in os.environ.items() if name.startswith("AWS_")}
        child = Child(python, list(args), {**subprocess_env, **aws}, log)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.proc.poll() is None:
            child.kill()
        else:
            child.finish()  # closes its pipes
    log.close()


@pytest.fixture
def inbox_dir(tmp_path: Path) -> Path:
    """The shared inbox folder every participant opens."""
    return tmp_path / "inbox"


@pytest.fixture(params=["folder", "bucket"])
def inbox_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The shared inbox every participant opens: a folder, or a prefix in a bucket of SeaweedFS (no lock there:
    each change is conditional on the ETag it read)."""
    if request.param == "folder":
        return str(tmp_path / "inbox")
    url: str = request.getfixturevalue("bucket_url")
    return url


def _check(spawn: Callable[..., Child], inbox: str | Path) -> dict[str, Any]:
    """What a fresh process finds in the inbox (and whether it can still write there)."""
    checker = spawn("check", str(inbox))
    lines = checker.wait_for(bool)
    assert checker.proc.wait(WAIT) == 0
    report: dict[str, Any] = json.loads(lines[0])
    return report


def consistency(report: dict[str, Any], acked: dict[str, str]) -> list[str]:
    """Every way the inbox a fresh process read falls short; empty if it is consistent.

    Consistent: every request file parses (no torn or damaged file), the inbox still takes a
    write (no lock held by the dead), the next writer cleared any temp file a kill left, and
    every request a participant acknowledged is there, in the status acknowledged or a later one.
    """
    failures = [f"damaged: {problem}" for problem in report["problems"]]
    if len(report["files"]) != len(report["records"]) + len(report["problems"]):
        failures.append(f"{len(report['files'])} files but {len(report['records'])} requests read")
    if not report["write_ok"]:
        failures.append("a fresh process could not write to the inbox")
    if report["temps_after"]:
        failures.append(f"temp files survived the next writer: {report['temps_after']}")
    for handoff_id, status in acked.items():
        found = report["records"].get(handoff_id)
        if found is None:
            failures.append(f"acknowledged request {handoff_id} ({status}) is missing")
        elif _ORDER[found] < _ORDER[status] or (found != status and _ORDER[found] == _ORDER[status]):
            failures.append(f"acknowledged request {handoff_id} was {status}, now reads {found}")
    return failures


def _acked(child: Child) -> dict[str, str]:
    """The newest status each request reached by the child's word (REQ = PENDING)."""
    acked: dict[str, str] = {}
    for words in child.said("REQ"):
        acked[words[1]] = "PENDING"
    for status in ("ACCEPTED", "COMPLETED"):
        for words in child.said(status):
            acked[words[1]] = status
    return acked


# -- racing acceptors ------------------------------------------------------------------------


def _winners(outcomes: list[list[str]]) -> int:
    return sum(1 for words in outcomes if words[0] == "WON")


def _race(racers: list[Child], mode: str, handoff_id: str) -> list[list[str]]:
    for racer in racers:
        racer.send(f"{mode} {handoff_id}")
    outcomes = []
    for racer in racers:
        racer.wait_for(lambda lines: any(handoff_id in line for line in lines))
        outcomes += [words for words in racer.said("WON") + racer.said("LOST") if words[1] == handoff_id]
    return outcomes


def test_eight_processes_racing_to_accept_one_request_exactly_one_wins(
    spawn: Callable[..., Child], inbox_at: str
) -> None:
    inbox = HandoffInbox(inbox_at)
    inbox.request_handoff("alpha", "beta", "create the inbox before the racers open it")
    racers = [spawn("race", inbox_at) for _ in range(RACERS)]
    for racer in racers:
        racer.wait_for(lambda lines: READY in lines)
    for round_ in range(4):
        handoff_id = inbox.request_handoff("alpha", "beta", f"round {round_}").handoff_id
        outcomes = _race(racers, "locked", handoff_id)
        assert len(outcomes) == RACERS
        assert _winners(outcomes) == 1, outcomes
        # every loser was told why: the message names the status the winner left
        assert all(words[2:] == ["ACCEPTED", "named"] for words in outcomes if words[0] == "LOST"), outcomes
        assert inbox.get_handoff_status(handoff_id) is HandoffStatus.ACCEPTED
    # the same count catches an acceptor that does not read-check-write under the lock (or conditionally)
    handoff_id = inbox.request_handoff("alpha", "beta", "broken round").handoff_id
    outcomes = _race(racers, "unlocked", handoff_id)
    assert _winners(outcomes) > 1, outcomes
    for racer in racers:
        assert racer.finish() == 0


# -- SIGKILL of each participant ---------------------------------------------------------------


@pytest.mark.parametrize("mode", [pytest.param("request", id="requester"), pytest.param("churn", id="acceptor")])
def test_a_sigkilled_participant_leaves_an_inbox_a_fresh_process_reads_whole(
    spawn: Callable[..., Child], inbox_at: str, mode: str
) -> None:
    rng = random.Random(f"inbox-kill-{mode}")  # kill timing, not secrets
    acked: dict[str, str] = {}
    for _ in range(KILLS):
        participant = spawn(mode, inbox_at)
        participant.wait_for(lambda lines: len(lines) >= 3)
        time.sleep(rng.uniform(0, 0.03))  # land anywhere in a write: temp file, fsync, rename; mid-PUT
        participant.kill()
        acked.update(_acked(participant))
        report = _check(spawn, inbox_at)
        assert consistency(report, acked) == [], report
    assert len(acked) >= KILLS


def test_the_consistency_check_catches_a_torn_file_a_lost_request_and_a_step_back(
    spawn: Callable[..., Child], inbox_dir: Path
) -> None:
    inbox = HandoffInbox(inbox_dir)
    torn, lost, back, fine = (inbox.request_handoff("alpha", "beta", name).handoff_id for name in "tlbf")
    inbox.accept_handoff(back)
    acked = {torn: "PENDING", lost: "PENDING", back: "ACCEPTED", fine: "PENDING"}
    path = inbox.requests_dir / f"{torn}.json"
    path.write_bytes(path.read_bytes()[:40])
    (inbox.requests_dir / f"{lost}.json").unlink()
    record = {**json.loads((inbox.requests_dir / f"{back}.json").read_bytes()), "status": "PENDING"}
    # a step back, sealed as the inbox seals (a seal is a checksum: whoever writes the inbox can make one)
    record["seal"] = {"algorithm": "blake3", "digest": sealing.digest(sealing.canonical(record), "blake3")}
    write_durable(inbox.requests_dir / f"{back}.json", json.dumps(record).encode())
    failures = consistency(_check(spawn, inbox_dir), acked)
    assert len(failures) == 4, failures  # the torn file twice: damaged, and its request missing
    assert any(f.startswith("damaged:") and torn in f for f in failures)
    assert any(f"{lost} (PENDING) is missing" in f for f in failures)
    assert any(f"{back} was ACCEPTED, now reads PENDING" in f for f in failures)


# -- serve() in its own process ----------------------------------------------------------------


def _layers(step: int) -> dict[str, Any]:
    return {
        "state": {"active_tasks": [f"step {step}"], "data": {"step": step}},
        "narrative": f"Did step {step}.",
        "decisions": [],
        "priorities": [{"task": f"step {step + 1}", "urgency": "first"}],
        "warnings": [],
    }


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """The blob store and the threads folder the servers share with the requester."""
    return {"blobs": tmp_path / "blobs", "threads": tmp_path / "threads", "source": tmp_path / "alpha-run"}


def _export(places: dict[str, Path], step: int) -> Descriptor:
    store = HandoffStore(places["source"])
    store.save(_layers(step))
    return handoff_checkpoint(store, blobs=LocalBlobStore(places["blobs"]))


def _server(
    spawn: Callable[..., Child], inbox_dir: Path, places: dict[str, Path], agent: str, policy: str, *extra: str
) -> Child:
    server = spawn(
        "serve",
        *extra,
        str(inbox_dir),
        "--agent",
        agent,
        "--policy",
        policy,
        "--blobs",
        str(places["blobs"]),
        "--threads",
        str(places["threads"]),
    )
    server.wait_for(lambda lines: READY in lines)
    return server


def _wait_status(inbox: HandoffInbox, handoff_id: str, *wanted: HandoffStatus) -> HandoffStatus:
    deadline = time.monotonic() + WAIT
    while (status := inbox.get_handoff_status(handoff_id)) not in wanted:
        assert time.monotonic() < deadline, f"{handoff_id} stayed {status}"
        time.sleep(0.02)
    assert status is not None
    return status


def test_serve_in_another_process_adopts_a_real_checkpoint_and_refuses_a_tampered_one(
    spawn: Callable[..., Child], inbox_dir: Path, places: dict[str, Path]
) -> None:
    inbox = HandoffInbox(inbox_dir)
    inbox.request_handoff("alpha", "nobody", "creates the inbox")
    good = _export(places, 1)
    bad = _export(places, 2)
    blob = places["blobs"] / blob_path(bad.blob_id)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    server = _server(spawn, inbox_dir, places, "gamma", "accept")

    first = inbox.request_handoff("alpha", "gamma", "take the run", descriptor=good).handoff_id
    assert _wait_status(inbox, first, HandoffStatus.COMPLETED, HandoffStatus.REJECTED) is HandoffStatus.COMPLETED
    thread = places["threads"] / thread_id_for(first)
    adopted = HandoffStore(thread).restore().handoff
    assert adopted.state.data == {"step": 1}
    assert adopted.lineage.adopted_from is not None
    assert adopted.lineage.adopted_from.blob_sha256 == good.blob_sha256
    assert server.said("RECEIVED") == [["RECEIVED", first, thread_id_for(first), "1"]]

    second = inbox.request_handoff("alpha", "gamma", "take the other", descriptor=bad).handoff_id
    assert _wait_status(inbox, second, HandoffStatus.COMPLETED, HandoffStatus.REJECTED) is HandoffStatus.REJECTED
    record = inbox.get_handoff(second)
    assert record is not None
    assert record.rejection_reason is not None
    assert "did not verify" in record.rejection_reason
    assert "sha256" in record.rejection_reason
    assert not (places["threads"] / thread_id_for(second)).exists()
    assert server.finish() == 0
    assert [words[1:] for words in server.said("SETTLED")] == [[first, "COMPLETED"], [second, "REJECTED"]]


def test_fallback_across_two_serving_processes_takes_the_second_after_the_first_refuses(
    spawn: Callable[..., Child], inbox_dir: Path, places: dict[str, Path]
) -> None:
    inbox = HandoffInbox(inbox_dir)
    inbox.request_handoff("alpha", "nobody", "creates the inbox")
    descriptor = _export(places, 1)
    beta = _server(spawn, inbox_dir, places, "beta", "reject:busy with the release")
    gamma = _server(spawn, inbox_dir, places, "gamma", "accept")
    result = request_handoff_with_fallback(
        inbox, ["beta", "gamma"], from_agent="alpha", reason="take over", descriptor=descriptor, wait=WAIT
    )
    assert result.to_agent == "gamma"
    assert result.status in (HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)
    _wait_status(inbox, result.handoff_id, HandoffStatus.COMPLETED)
    refused = [r for r in inbox.list_handoffs() if r.to_agent == "beta"]
    assert [(r.status, r.rejection_reason) for r in refused] == [(HandoffStatus.REJECTED, "busy with the release")]
    assert not (places["threads"] / thread_id_for(refused[0])).exists()
    assert (places["threads"] / thread_id_for(result)).is_dir()
    assert beta.finish() == gamma.finish() == 0


def test_a_sigkilled_server_leaves_its_request_for_the_next_serve_which_finishes_it(
    spawn: Callable[..., Child], inbox_dir: Path, places: dict[str, Path]
) -> None:
    inbox = HandoffInbox(inbox_dir)
    descriptor = _export(places, 1)
    handoff_id = inbox.request_handoff("alpha", "gamma", "take over", descriptor=descriptor).handoff_id
    thread = places["threads"] / thread_id_for(handoff_id)

    # killed while its hook decides: nothing claimed, nothing adopted
    server = _server(spawn, inbox_dir, places, "gamma", "stall-request")
    server.wait_for(lambda lines: any(line.startswith("ASKED") for line in lines))
    server.kill()
    assert consistency(_check(spawn, inbox_dir), {handoff_id: "PENDING"}) == []
    assert inbox.get_handoff_status(handoff_id) is HandoffStatus.PENDING
    assert not thread.exists()

    # killed after the claim and the adoption, inside on_handoff_received: ACCEPTED, thread written
    server = _server(spawn, inbox_dir, places, "gamma", "stall-received")
    server.wait_for(lambda lines: any(line.startswith("RECEIVING") for line in lines))
    server.kill()
    assert consistency(_check(spawn, inbox_dir), {handoff_id: "ACCEPTED"}) == []
    assert HandoffStore(thread).restore().generation == 1

    # one more, as a serve() killed between its claim and the adoption leaves it
    claimed = inbox.request_handoff("alpha", "gamma", "claimed only", descriptor=descriptor).handoff_id
    inbox.accept_handoff(claimed)

    # the killed servers' claims are left to them for --resume-after seconds: 0, as if long ago
    server = _server(spawn, inbox_dir, places, "gamma", "accept", "--resume-after", "0")
    _wait_status(inbox, handoff_id, HandoffStatus.COMPLETED)
    _wait_status(inbox, claimed, HandoffStatus.COMPLETED)
    assert server.finish() == 0
    assert sorted(words[1] for words in server.said("RECEIVED")) == sorted([handoff_id, claimed])
    assert server.said("ASKED") == []  # both were decided before: the hook is not asked again
    assert HandoffStore(thread).restore().generation == 1  # the adoption the killed server made, not a second
    assert HandoffStore(places["threads"] / thread_id_for(claimed)).restore().generation == 1
    report = _check(spawn, inbox_dir)
    assert consistency(report, {handoff_id: "COMPLETED", claimed: "COMPLETED"}) == []
