"""Torture parts ``machines-folder`` and ``machines-bucket``: writers that share nothing but the store, killed mid-save.

Each writer and reader is its own process started afresh (no fork server, no shared memory, no
lock between them on a bucket: what separate machines would share is the store alone). Writers
save step after step into one thread (:mod:`bench.torture.machines_child`); at random moments
the parent SIGKILLs one, mid-request as often as not, and starts it again from its last
acknowledged step. Readers restore in parallel all along. On the bucket the store itself
(SeaweedFS, :mod:`bench.seaweed`) is SIGKILLed and started again on the same data, twice per
run: writers and readers meet a store that does not answer, then one that comes back.

At the end: every acknowledged generation is in ``history/`` with its seal (lost otherwise), no
generation number was acknowledged twice and the generations form one chain, each ``parent`` the
seal of the one before (torn otherwise), a fresh restore returns the newest, no reader saw an
unverified, foreign or older-than-before answer, and a folder holds no temp file after the next
open (leftovers).
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from bench.seaweed import SeaweedServer
from bench.torture import Options, Row
from bench.torture.kill_checks import journal_seals, leftovers
from bench.torture.machines_child import AGENT, THREAD, content
from handoff_files import HandoffStore
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.format.loader import decode
from handoff_files.foundation.errors import HandoffError
from handoff_files.storage import open_storage

__all__ = ["READERS", "WRITERS", "run_bucket", "run_folder"]

WRITERS: Final = 4
READERS: Final = 2
#: a writer is killed after this many acknowledged saves (drawn anew each time)
KILL_EVERY: Final = (2, 9)
#: the store is killed this many times per run on a bucket (at evenly spaced points), down this long (s)
SERVER_KILLS: Final = 2
SERVER_DOWN: Final = (0.3, 1.5)
ROOT: Final = Path(__file__).resolve().parents[2]
_UNKNOWN: Final = "?"  # the parent of a generation known only by its journal line


@dataclass
class _Process:
    """A child and what it said so far (a line may arrive in pieces)."""

    role: str
    number: int
    popen: subprocess.Popen[bytes]
    buffer: bytes = b""
    lines: list[str] = field(default_factory=list)


@dataclass
class _Run:
    target: str
    env: dict[str, str]
    options: Options
    row: Row
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    acks: list[tuple[int, int, int, str]] = field(default_factory=list)  # writer, step, generation, seal
    next_step: dict[int, int] = field(default_factory=dict)
    errors: int = 0
    bad: list[str] = field(default_factory=list)
    reads: int = 0
    unavailable: int = 0

    def start(self, role: str, number: int) -> _Process:
        argv = [sys.executable, "-m", "bench.torture.machines_child", role, self.target, str(number)]
        if role == "writer":
            argv += [str(self.next_step.get(number, 0)), self.options.durability]
        popen = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        child = _Process(role, number, popen)
        assert popen.stdout is not None  # noqa: S101 -- piped above
        os.set_blocking(popen.stdout.fileno(), False)
        self.selector.register(popen.stdout, selectors.EVENT_READ, child)
        return child

    def pump(self, timeout: float) -> None:
        """Read what the children said within *timeout* seconds, and act on each whole line."""
        for key, _ in self.selector.select(timeout):
            self._read(key.fileobj, key.data)  # type: ignore[arg-type]

    def _read(self, stream: IO[bytes], child: _Process) -> None:
        try:
            chunk = stream.read() or b""
        except BlockingIOError:
            return
        if not chunk:
            self.selector.unregister(stream)
            return
        child.buffer += chunk
        *whole, child.buffer = child.buffer.split(b"\n")
        for line in whole:
            self._line(child, line.decode("utf-8", "replace"))

    def _line(self, child: _Process, line: str) -> None:
        words = line.split()
        if not words:
            return
        if words[0] == "ACK":
            writer, step, generation = int(words[1]), int(words[2]), int(words[3])
            self.acks.append((writer, step, generation, words[4]))
            self.next_step[writer] = step + 1
        elif words[0] == "ERR":
            self.errors += 1
        elif words[0] == "BAD":
            self.bad.append(f"reader {child.number}: {line[4:]}")
        elif words[0] == "DONE":
            self.reads += int(words[1])
            self.unavailable += int(words[2])

    def kill(self, child: _Process) -> None:
        """SIGKILL *child*, then read whatever it printed before it died (an ACK printed is acknowledged)."""
        child.popen.kill()
        child.popen.wait()
        self._drain(child)

    def stop_reader(self, child: _Process) -> None:
        child.popen.send_signal(signal.SIGTERM)
        try:
            child.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.popen.kill()
            child.popen.wait()
            self.bad.append(f"reader {child.number} did not stop when told")
        self._drain(child)

    def _drain(self, child: _Process) -> None:
        stream = child.popen.stdout
        assert stream is not None  # noqa: S101
        os.set_blocking(stream.fileno(), True)
        rest = child.buffer + stream.read()
        child.buffer = b""
        for line in rest.split(b"\n"):
            self._line(child, line.decode("utf-8", "replace"))
        if _registered(self.selector, stream):
            self.selector.unregister(stream)
        stream.close()


def _registered(selector: selectors.BaseSelector, stream: IO[bytes]) -> bool:
    try:
        selector.get_key(stream)
    except KeyError:
        return False
    return True


def run_folder(options: Options) -> Row:
    """The part on a local folder (the writers' lock keeps them in turn there)."""
    thread = options.workdir / "thread"
    env = dict(os.environ) | {"PYTHONPATH": str(ROOT)}
    row = _run(str(thread), env, options, "machines-folder", server=None)
    row.leftovers = len(leftovers(thread)) if thread.is_dir() else 0
    return row


def run_bucket(options: Options, *, server_kills: int = SERVER_KILLS) -> Row:
    """The part on a bucket of a SeaweedFS server of its own, which is killed and started again mid-run
    (*server_kills* times: a restart takes SeaweedFS ~15 s here)."""
    server = SeaweedServer(options.workdir / "seaweedfs")
    server.start()
    try:
        env = dict(os.environ) | server.environment() | {"PYTHONPATH": str(ROOT)}
        os.environ.update(server.environment())  # the parent checks the same bucket at the end
        target = f"s3://{server.make_bucket()}/team/torture"
        return _run(target, env, options, "machines-bucket", server=server, server_kills=server_kills)
    finally:
        server.stop()


def _run(
    target: str,
    env: dict[str, str],
    options: Options,
    part: str,
    *,
    server: SeaweedServer | None,
    server_kills: int = 0,
) -> Row:
    rng = random.Random(options.seed)
    row = Row(part)
    run = _Run(target, env, options, row)
    HandoffStore(target, thread_id=THREAD, agent_id=AGENT).save(content(-1, 0))  # generation 1: readers have a thread
    writers = [run.start("writer", n) for n in range(WRITERS)]
    readers = [run.start("reader", n) for n in range(READERS)]
    try:
        _drive(run, rng, writers, server, server_kills)
    finally:  # whatever happened, no child outlives the part
        for child in writers:
            run.kill(child)
        for child in readers:
            run.stop_reader(child)
    _check(run, target, server is not None)
    row.cases = len(run.acks)
    row.faults = run.errors
    kind = f"SeaweedFS killed and restarted {server_kills} time(s); " if server is not None else ""
    row.notes = (
        f"{WRITERS} writers sharing only the {'bucket' if server else 'folder'}, {READERS} readers; {kind}"
        f"{run.reads:,} verified restores ({run.unavailable:,} met a store not answering); "
        f"{run.errors:,} saves raised (not acknowledged)"
    )
    return row


def _drive(
    run: _Run, rng: random.Random, writers: list[_Process], server: SeaweedServer | None, server_kills: int
) -> None:
    """Until enough saves are acknowledged: read the children, kill a writer now and then, the store too."""
    options, row = run.options, run.row
    server_at = [options.count * (k + 1) // (server_kills + 1) for k in range(server_kills)] if server else []
    next_kill = rng.randint(*KILL_EVERY)
    deadline = time.monotonic() + max(120.0, options.count * 1.5) + 60 * server_kills
    last_said = time.monotonic()
    while len(run.acks) < options.count:
        run.pump(0.05)
        if time.monotonic() > deadline:
            row.fail(f"{len(run.acks)} of {options.count} saves acknowledged before the deadline")
            break
        if len(run.acks) >= next_kill:
            victim = rng.randrange(WRITERS)
            time.sleep(rng.uniform(0.0, 0.03))  # land inside a save as often as between two
            run.kill(writers[victim])
            row.kills += 1
            writers[victim] = run.start("writer", victim)
            next_kill = len(run.acks) + rng.randint(*KILL_EVERY)
        if server is not None and server_at and len(run.acks) >= server_at[0]:
            server_at.pop(0)
            server.stop(kill=True)
            row.kills += 1
            time.sleep(rng.uniform(*SERVER_DOWN))
            server.start()
        if time.monotonic() - last_said > 5:
            options.progress(f"{len(run.acks)} acknowledged, {row.kills} kills, {run.errors} failed saves")
            last_said = time.monotonic()


def _check(run: _Run, target: str, bucket: bool) -> None:
    """Every acknowledgement against the store; the chain; a fresh restore; the readers' reports."""
    row = run.row
    for failure in run.bad[:20]:
        row.fail(failure)
    row.torn += len(run.bad)
    seen: dict[int, str] = {}
    for _writer, _step, generation, seal in run.acks:
        if generation in seen:
            row.torn += 1
            row.fail(f"generation {generation} acknowledged twice ({seen[generation]} and {seal})")
        seen[generation] = seal
    chain = _generations(target, bucket)
    for writer, step, generation, seal in run.acks:
        found = chain.get(generation)
        if found is None or found[0] != seal:
            row.lost += 1
            row.fail(f"writer {writer} step {step}: generation {generation} ({seal}) is not in history/ as saved")
    numbers = sorted(chain)
    if numbers != list(range(1, len(numbers) + 1)):
        row.fail(f"history/ is not generations 1 to {len(numbers)}: a hole or a stray number")
    for number in numbers[1:]:
        if number - 1 in chain and chain[number][1] not in (chain[number - 1][0], _UNKNOWN):
            row.torn += 1
            row.fail(f"generation {number}'s parent is not generation {number - 1}'s seal: a fork")
    try:
        newest = HandoffStore(target, signing_key=False).restore().generation
    except HandoffError as exc:
        row.fail(f"the restore after the run failed: {exc}")
        return
    if numbers and newest != numbers[-1]:
        row.fail(f"the restore after the run returned generation {newest}, not the newest ({numbers[-1]})")


def _generations(target: str, bucket: bool) -> dict[int, tuple[str, str | None]]:
    """Each generation in ``history/``: its seal and its parent, read back and verified."""
    found: dict[int, tuple[str, str | None]] = {}
    if bucket:
        storage = open_storage(target)
        for key in storage.list("history/"):
            handoff = decode(storage.read(key, limit=MAX_FILE_BYTES).data, f"{target}/{key}", origin="store")
            found[handoff.generation] = (str(handoff.seal), handoff.parent)
        return found
    for entry in HandoffStore(target, keep=1_000_000).history():
        if entry.path.parent.name == "history" and entry.checksum is not None and entry.generation is not None:
            handoff = decode(entry.path.read_bytes(), entry.path, origin="store")
            found[entry.generation] = (entry.checksum, handoff.parent)
    # a journal-first save is committed by its journal line; its history/ copy follows at a later save
    for number, seal in journal_seals(Path(target)).items():
        found.setdefault(number, (seal, _UNKNOWN))
    return found
