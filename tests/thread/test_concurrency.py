"""Writers saving into one thread at once never lose a save or reuse a generation, and readers never fail meanwhile."""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from handoff_files import HandoffError, HandoffStore, load
from handoff_files.thread.journal import Journal
from tests.writer_child import READY, Ack, WriterProcess, check_chain, content, read_thread, seal_text

#: Large enough that history/ keeps every generation, so every ACK can be checked against its file.
KEEP = 1000


def _start_writers(
    directory: Path, *, writers: int, count: int, sizes: str, python: str, env: dict[str, str], log: Path
) -> dict[str, WriterProcess]:
    started = {}
    with log.open("a") as log_file:
        for number in range(1, writers + 1):
            name = f"w{number}"
            options = ["--writer", name, "--count", str(count), "--keep", str(KEEP), "--sizes", sizes, "--wait-for-go"]
            # yield the lock every few saves: a waiter's poll would otherwise let one writer
            # run dozens of saves in a row, and the lock would change hands only a handful of times
            options += ["--yield-every", "10"]
            started[name] = WriterProcess(python, directory, options, env, log_file)
    for name, writer in started.items():
        assert writer.wait_first_line(timeout=60), f"{name} printed nothing in 60 s; stderr in {log}"
        assert writer.lines[:1] == [f"{READY}\n"], f"{name} did not start: {writer.lines[:1]}; stderr in {log}"
    # release them together: each has paid its imports and opened its store, so the saves overlap
    for writer in started.values():
        writer.go()
    return started


def _finish(writers: dict[str, WriterProcess], log: Path) -> dict[str, list[Ack]]:
    acks = {}
    for name, writer in writers.items():
        status = writer.finish(timeout=300)
        assert status == 0, f"{name} exited with status {status}; stderr in {log}"
        acks[name] = writer.acks
    return acks


def _switches(acks: dict[str, list[Ack]]) -> int:
    # how often the lock passed from one writer to another: evidence the saves really interleaved
    owner = {ack.generation: name for name, listed in acks.items() for ack in listed}
    ordered = [owner[generation] for generation in sorted(owner)]
    return sum(a != b for a, b in itertools.pairwise(ordered))


class Plan(NamedTuple):
    """How many writers, how many saves each, and the padding sizes they cycle through."""

    writers: int
    saves: int  # each
    sizes: str


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(Plan(2, 200, "0"), id="2-writers-small"),
        pytest.param(Plan(4, 100, "0,0,30000"), id="4-writers-mixed", marks=pytest.mark.slow),  # make slow
    ],
)
def test_concurrent_writers_never_lose_a_save_nor_reuse_a_generation(
    plan: Plan,
    thread_dir: Path,
    tmp_path: Path,
    python: str,
    subprocess_env: dict[str, str],
) -> None:
    writers, count, sizes = plan
    log = tmp_path / "writers.log"
    started = _start_writers(
        thread_dir, writers=writers, count=count, sizes=sizes, python=python, env=subprocess_env, log=log
    )
    acks = _finish(started, log)
    total = writers * count
    print(f"\n{writers} writers x {count} saves: the lock changed hands {_switches(acks)} times")

    # no generation reused, none skipped: the ACKs of all writers together are exactly 1..total
    assert all(len(listed) == count for listed in acks.values()), {name: len(listed) for name, listed in acks.items()}
    generations = sorted(ack.generation for listed in acks.values() for ack in listed)
    assert generations == list(range(1, total + 1))

    # no save lost: each ACKed generation is on disk, sealed as ACKed, holding its writer's own step
    thread = read_thread(thread_dir)
    assert sorted(thread) == list(range(1, total + 1))
    for name, listed in acks.items():
        assert [ack.generation for ack in listed] == sorted(ack.generation for ack in listed), f"{name} went back"
        for index, ack in enumerate(listed):
            handoff = thread[ack.generation]
            assert seal_text(handoff) == ack.checksum, f"{name}'s generation {ack.generation}"
            assert (handoff.state.data["writer"], handoff.state.data["step"]) == (name, index + 1)

    # the chain is unbroken from generation 1 to the last: every save chained from the one before it
    check_chain(thread, contiguous=True)
    restored = HandoffStore(thread_dir).restore()
    assert (restored.source, restored.generation, restored.problems) == ("primary", total, ())


@pytest.mark.slow  # make slow: readers and writers racing for seconds; the writers' race stays
def test_readers_never_fail_while_writers_save(
    thread_dir: Path, tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    log = tmp_path / "writers.log"
    started = _start_writers(
        thread_dir, writers=2, count=150, sizes="0,100000", python=python, env=subprocess_env, log=log
    )
    primary = thread_dir / "handoff.json"
    deadline = time.monotonic() + 60
    while not primary.exists():  # reading begins with the first save: before it there is nothing to read
        assert time.monotonic() < deadline, f"no save in 60 s; stderr in {log}"
        time.sleep(0.001)
    reads = {"load": 0, "restore": 0}
    failures: list[str] = []
    mid_save_reports: list[tuple[str, ...]] = []
    # renames are atomic and ordered, so one kind of read never sees the generation go back
    # (across kinds it may: restore() can return the history copy a save commits before its primary)
    seen = {"load": 0, "restore": 0}
    while any(writer.proc.poll() is None for writer in started.values()):
        kind = "load" if sum(reads.values()) % 2 else "restore"
        reads[kind] += 1
        try:
            if kind == "load":
                generation = load(primary).generation
            else:
                restored = HandoffStore(thread_dir).restore()
                generation = restored.generation
                if restored.problems:
                    mid_save_reports.append(restored.problems)
                if restored.source == "rebuilt" or restored.handoff.seal is None:
                    # a save landing between a restore's reads once made state.json look ahead of
                    # every file, and a healthy thread was "rebuilt" (decisions and warnings lost)
                    failures.append(f"restore {reads[kind]}: {restored.source} generation {generation}")
        except HandoffError as exc:
            failures.append(f"{kind} {reads[kind]}: {exc}")
            continue
        if generation < seen[kind]:
            failures.append(f"{kind} {reads[kind]}: generation {generation} after {seen[kind]}")
        seen[kind] = max(seen[kind], generation)
    acks = _finish(started, log)
    saves = sum(map(len, acks.values()))
    # a restore() between a save's history commit and its primary rename reports an interrupted
    # save that is merely in flight: see test_restore_mid_save_does_not_report_an_interrupted_save
    print(f"\n{reads} reads during {saves} saves; restore() reported problems {len(mid_save_reports)} times")
    assert saves == 300
    assert reads["load"] > 0
    assert reads["restore"] > 0
    assert failures == [], f"{len(failures)} of {sum(reads.values())} reads failed"


# A live writer in the middle of a save: it holds the writers' lock, its temp file sits beside
# the primary, and history/ already holds the generation it is committing (history is written first).
_HOLD_LOCK = """
import sys
from pathlib import Path
from handoff_files.foundation.lock import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("LOCKED", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def mid_save(thread_dir: Path, python: str, subprocess_env: dict[str, str]) -> Iterator[Path]:
    """A thread as a live writer leaves it halfway through saving generation 2 (a real process holds the lock)."""
    store = HandoffStore(thread_dir)
    store.save(content("w", 1, 0))
    first = (thread_dir / "handoff.json").read_bytes()
    store.save(content("w", 2, 0))
    # history/00000002.json is committed; the primary still holds generation 1, as before the rename
    temp = thread_dir / ".handoff.json.inflig.tmp"
    temp.write_bytes(first)
    os.replace(temp, thread_dir / "handoff.json")
    (thread_dir / ".handoff.json.abc123.tmp").write_bytes(b"{")  # the writer's half-written temp file
    holder = subprocess.Popen(
        [python, "-c", _HOLD_LOCK, str(thread_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=subprocess_env,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "LOCKED\n"
        yield thread_dir
    finally:
        holder.kill()
        holder.communicate()


def test_opening_a_store_to_restore_does_not_wait_for_a_writer_mid_save(mid_save: Path) -> None:
    # DESIGN rule 6: readers never need the lock; a restarting agent must not block (or fail) behind a writer
    restored = HandoffStore(mid_save, lock_timeout=0.5).restore()
    assert restored.generation == 2


def test_restore_mid_save_does_not_report_an_interrupted_save(mid_save: Path) -> None:
    # the committed generation is the right answer; the problem it reports is not true while the
    # writer still holds the lock, and a supervisor or watcher reading it would raise a false alarm
    (mid_save / ".handoff.json.abc123.tmp").unlink()  # keep the store's opening out of this test
    restored = HandoffStore(mid_save).restore()
    assert restored.generation == 2
    assert not any("interrupted" in problem for problem in restored.problems), restored.problems


# a journal-first save SIGKILLed just after its commit point (the journal line is durable) and
# before any of its copies: history/, the primary and state.json still show the generation before
_KILLED_AFTER_JOURNAL_COMMIT = """
import os, signal, sys
from handoff_files import HandoffStore
from handoff_files.thread import commit
from tests.writer_child import content

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

commit.write_durable = killed
HandoffStore(sys.argv[1], durability="journal").save(content("killed", 1, 0))
"""


@pytest.mark.parametrize("durability", ["journal", "full"])
def test_a_store_never_reuses_a_generation_another_writer_committed_to_the_journal_only(
    thread_dir: Path, python: str, subprocess_env: dict[str, str], durability: str
) -> None:
    # the surviving store remembers the head it wrote; the killed writer's generation lives only
    # in the journal, so a head remembered by the primary's identity alone would be reused
    store = HandoffStore(thread_dir, durability=durability)  # type: ignore[arg-type]
    store.save(content("alive", 1, 0))
    killed = subprocess.run(
        [python, "-c", _KILLED_AFTER_JOURNAL_COMMIT, str(thread_dir)], env=subprocess_env, check=False
    )
    assert killed.returncode == -9
    assert not (thread_dir / "history" / "00000002.json").exists()
    committed, document = next(Journal(thread_dir).committed_documents())  # read-only: a restore would append
    assert committed.generation == 2
    assert document is not None
    receipt = store.save(content("alive", 2, 0))
    assert receipt.generation == 3
    assert load(thread_dir / "handoff.json").parent == committed.seal
    assert HandoffStore(thread_dir).restore().generation == 3
