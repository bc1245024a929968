"""The torture suite's kill parts (kills, syscalls, concurrency) run small; each checker catches a broken case."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path
from typing import Literal

import pytest

from bench.torture import Options, Row, concurrency, kills, syscalls
from bench.torture.child import BEGIN_MARK, END_MARK, Ack, Child, Zygote, content, size_of
from bench.torture.kill_checks import (
    CHANNELS,
    Before,
    Ledger,
    channels,
    check_after_kill,
    check_chain,
    check_journal,
    check_next_save,
    leftovers,
)
from handoff_files import HandoffStore, Restored, load
from handoff_files.foundation.lock import writer_lock
from handoff_files.thread.trust import TRUST_NAME

SIZE = 1000
OTHER_SEAL = "blake3:" + "0" * 64


def _options(tmp_path: Path, count: int, durability: Literal["full", "journal"] = "full") -> Options:
    workdir = tmp_path / "work"
    workdir.mkdir()
    return Options(count=count, seed=20_240_611, workdir=workdir, durability=durability, progress=lambda _: None)


def _number(notes: str, pattern: str) -> int:
    match = re.search(r"([\d,]+) " + pattern, notes)
    assert match, f"{pattern!r} not in {notes!r}"
    return int(match.group(1).replace(",", ""))


DURABILITIES = [pytest.param("full", id="full"), pytest.param("journal", id="journal")]


# -- the parts, run small ------------------------------------------------------------------------


@pytest.mark.parametrize("durability", DURABILITIES)
def test_kills_part_kills_writers_mid_save_and_loses_nothing(
    tmp_path: Path, durability: Literal["full", "journal"]
) -> None:
    row = kills.run(_options(tmp_path, 120, durability))
    assert row.ok, row.failures
    assert (row.cases, row.kills) == (120, 120)
    # evidence the kills landed inside saves: committed but unacknowledged saves, temp files left
    assert _number(row.notes, "restored a save past the last ACK") > 0, row.notes
    assert _number(row.notes, "kills left temp files") > 0, row.notes


@pytest.mark.parametrize(
    ("durability", "calls"),
    [
        # a full save's commit point is its history file: fsync, rename, directory fsync
        pytest.param(
            "full", ("openat", "write", "fsync", "rename", "flock", "mkdir"), id="full", marks=pytest.mark.slow
        ),
        # a journal-first save's is one fdatasync of its journal lines
        pytest.param(
            "journal",
            ("openat", "write", "fdatasync", "rename", "flock", "mkdir"),
            id="journal",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_syscalls_part_kills_a_save_at_every_system_call_and_loses_nothing(
    tmp_path: Path, durability: Literal["full", "journal"], calls: tuple[str, ...]
) -> None:
    row = syscalls.run(_options(tmp_path, 0, durability))  # 0: every point of every scenario
    assert row.ok, row.failures
    # one commit point per save and a held lock descriptor left ~180 points in full mode (there were ~260)
    assert row.kills == row.cases > 150
    for call in calls:
        assert re.search(rf"\b{call} \d", row.notes), f"no {call} among the points: {row.notes}"


def test_syscalls_part_in_journal_mode_loses_nothing(tmp_path: Path) -> None:
    row = syscalls.run(_options(tmp_path, 100, "journal"))  # a random 100 of the points (every one: make slow)
    assert row.ok, row.failures
    assert row.kills == row.cases == 100


@pytest.mark.parametrize(
    "durability", [pytest.param("full", id="full"), pytest.param("journal", id="journal", marks=pytest.mark.slow)]
)
def test_concurrency_part_kills_lock_holders_and_loses_no_save(
    tmp_path: Path, durability: Literal["full", "journal"]
) -> None:
    row = concurrency.run(_options(tmp_path, 30, durability))
    assert row.ok, row.failures
    assert row.cases == concurrency.WRITERS * 30
    assert row.kills >= 2
    assert _number(row.notes, r"reads \(0 failed\)") >= concurrency.READS_PER_SAVE * 30


# -- the checkers catch what they are for --------------------------------------------------------


def _thread(directory: Path, steps: int, writer: str = "w") -> list[Ack]:
    store = HandoffStore(directory)
    acks = []
    for step in range(1, steps + 1):
        receipt = store.save(content(writer, step, SIZE))
        acks.append(Ack(step, receipt.generation, receipt.checksum))
    return acks


def _check(directory: Path, before: Before, ledger: Ledger | None = None) -> tuple[Row, Restored | None]:
    row = Row("test")
    restored = check_after_kill(directory, before, row, ledger or Ledger(), keep=10, durability="full", where="test")
    return row, restored


def test_check_after_kill_accepts_a_save_cut_after_its_commit(thread_dir: Path) -> None:
    acks = _thread(thread_dir, 3)
    # the writer acknowledged step 2; step 3 committed, and its ACK never reached the parent
    row, restored = _check(thread_dir, Before(1, acks[0].checksum, "w", (SIZE,), 2, [acks[1]]))
    assert row.ok, row.failures
    assert restored is not None
    assert restored.generation == 3


@pytest.mark.parametrize(
    ("case", "lost", "torn"),
    [
        pytest.param("restored-older-than-ack", 1, 0, id="restored-older-than-ack"),
        pytest.param("ack-with-another-seal", 1, 0, id="ack-with-another-seal"),
        pytest.param("not-the-attempted-save", 0, 1, id="not-the-attempted-save"),
        pytest.param("parent-not-the-last-ack", 0, 1, id="parent-not-the-last-ack"),
        pytest.param("generation-never-attempted", 0, 1, id="generation-never-attempted"),
    ],
)
def test_check_after_kill_catches_what_was_not_acknowledged_or_attempted(
    thread_dir: Path, case: str, lost: int, torn: int
) -> None:
    acks = _thread(thread_dir, 3)  # the thread holds steps 1-3 of writer w, generations 1-3
    before = {
        # the writer claims an ACK for generation 4, which is nowhere
        "restored-older-than-ack": Before(3, acks[2].checksum, "w", (SIZE,), 4, [Ack(4, 4, OTHER_SEAL)]),
        # generation 3 restores, but with another seal than its ACK carried
        "ack-with-another-seal": Before(2, acks[1].checksum, "w", (SIZE,), 3, [Ack(3, 3, OTHER_SEAL)]),
        # generation 3 restores past the last ACK, but holds what another writer would save
        "not-the-attempted-save": Before(2, acks[1].checksum, "someone-else", (SIZE,), 3, []),
        # generation 3 holds the attempted step, but does not chain to the generation before it
        "parent-not-the-last-ack": Before(2, OTHER_SEAL, "w", (SIZE,), 3, []),
        # the writer started after generation 1, yet generation 3 restores: two past it
        "generation-never-attempted": Before(1, acks[0].checksum, "w", (SIZE,), 2, []),
    }[case]
    row, _ = _check(thread_dir, before)
    assert (row.lost, row.torn) == (lost, torn), row.failures
    assert not row.ok


def test_check_after_kill_counts_a_temp_file_the_open_leaves(thread_dir: Path) -> None:
    acks = _thread(thread_dir, 2)
    ours = thread_dir / ".handoff.json.abcd1234.tmp"  # the store's own pattern: the open removes it
    ours.write_bytes(b"{")
    row, _ = _check(thread_dir, Before(2, acks[1].checksum, "w", (SIZE,), 3, []))
    assert row.ok, row.failures
    assert not ours.exists()

    strange = thread_dir / "history" / ".00000003.json.NOT-OURS.tmp"  # not the store's: left behind
    strange.write_bytes(b"{")
    row, _ = _check(thread_dir, Before(2, acks[1].checksum, "w", (SIZE,), 3, []))
    assert row.leftovers == 1
    assert leftovers(thread_dir) == [strange]


def test_check_after_kill_refuses_a_channel_going_missing_once_written(thread_dir: Path) -> None:
    acks = _thread(thread_dir, 2)
    seen = Ledger(channels=channels(thread_dir))
    assert seen.channels == set(CHANNELS)
    (thread_dir / "state.json").unlink()
    before = Before(2, acks[1].checksum, "w", (SIZE,), 3, [])
    row, _ = _check(thread_dir, before)  # as if no save had got that far yet: allowed
    assert row.ok, row.failures
    row, _ = _check(thread_dir, before, seen)
    assert row.failures == ["restore reported ['state.json is missing']: test"]


def test_check_after_kill_counts_a_history_file_that_does_not_verify_once(thread_dir: Path) -> None:
    acks = _thread(thread_dir, 3)
    damaged = thread_dir / "history" / "00000002.json"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged.write_bytes(bytes(data))
    ledger = Ledger()
    before = Before(3, acks[2].checksum, "w", (SIZE,), 4, [])
    row, restored = _check(thread_dir, before, ledger)
    assert restored is not None
    assert restored.generation == 3  # the restore itself is right: only the file is torn
    assert (row.torn, row.lost) == (1, 0), row.failures
    row, _ = _check(thread_dir, before, ledger)  # the same damaged file is not counted again
    assert row.torn == 0


def test_check_journal_catches_a_generation_saved_twice_and_a_damaged_line(thread_dir: Path) -> None:
    _thread(thread_dir, 3)
    row = Row("test")
    assert check_journal(thread_dir, row, Ledger(), "test") == 3
    assert row.ok, row.failures

    store = HandoffStore(thread_dir)
    store.journal.append("saved", generation=2, seal=OTHER_SEAL, summary="a second generation 2")
    row = Row("test")
    check_journal(thread_dir, row, Ledger(), "test")
    assert row.lost == 1, row.failures

    journal = thread_dir / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"step", b"stop")  # its check no longer matches
    journal.write_bytes(b"\n".join(lines) + b'{"at": "torn')  # and a torn tail, which is allowed
    row = Row("test")
    check_journal(thread_dir, row, Ledger(), "test")
    assert row.torn == 1, row.failures


def test_check_chain_catches_a_generation_that_does_not_chain(tmp_path: Path) -> None:
    mine, other = tmp_path / "a" / "thread", tmp_path / "b" / "thread"
    _thread(mine, 3)
    _thread(other, 3, writer="v")
    row = Row("test")
    assert sorted(check_chain(mine, row, contiguous=True, where="test")) == [1, 2, 3]
    assert row.ok, row.failures
    # a sealed, valid generation 2, but another thread's: generation 3 names a parent it is not
    shutil.copyfile(other / "history" / "00000002.json", mine / "history" / "00000002.json")
    row = Row("test")
    check_chain(mine, row, contiguous=True, where="test")
    assert row.torn >= 1, row.failures
    (mine / "history" / "00000002.json").unlink()
    (mine / "journal.jsonl").unlink()  # nothing tells what generation 2 was: a gap
    row = Row("test")
    check_chain(mine, row, contiguous=True, where="test")
    assert row.lost == 1, row.failures


def test_check_next_save_catches_a_save_that_does_not_follow_the_restore(thread_dir: Path) -> None:
    _thread(thread_dir, 3)
    newest = HandoffStore(thread_dir).restore()
    row = Row("test")
    check_next_save(thread_dir, newest, row, keep=10, durability="full", where="test")
    assert row.ok, row.failures
    # as if restore had handed back generation 2 while 4 was on disk: the next save is not 3
    older = Restored(load(thread_dir / "history" / "00000002.json"), "history", thread_dir)
    row = Row("test")
    check_next_save(thread_dir, older, row, keep=10, durability="full", where="test")
    assert any("became 5" in failure for failure in row.failures), row.failures
    assert any("parent is not" in failure for failure in row.failures), row.failures


def _two_writers(directory: Path, extra: bool = False) -> dict[str, list[Ack]]:
    store = HandoffStore(directory, keep=100)
    acks: dict[str, list[Ack]] = {"w1": [], "w2": []}
    for step in (1, 2):
        for name, listed in acks.items():
            receipt = store.save(content(name, step, size_of(concurrency.SIZES, step)))
            listed.append(Ack(step, receipt.generation, receipt.checksum))
    if extra:  # a generation holding what no writer saves
        store.save({"state": {"data": {"writer": "w1"}}, "narrative": "Nobody wrote this."})
    return acks


@pytest.mark.parametrize(
    ("case", "says"),
    [
        pytest.param("reused-generation", "acknowledged to w1 and w2", id="reused-generation"),
        pytest.param("ack-not-on-disk", "is not in history/", id="ack-not-on-disk"),
        pytest.param("generations-going-back", "do not strictly increase", id="generations-going-back"),
        pytest.param("unattempted-generation", "holds no save a writer attempted", id="unattempted-generation"),
    ],
)
def test_check_saves_catches_lost_reused_and_strange_generations(thread_dir: Path, case: str, says: str) -> None:
    acks = _two_writers(thread_dir, extra=case == "unattempted-generation")
    w1, w2 = acks["w1"], acks["w2"]
    if case == "reused-generation":  # w2's first save claims w1's generation
        w2[0] = Ack(1, w1[0].generation, w1[0].checksum)
    elif case == "ack-not-on-disk":  # w2's second save was acknowledged, and is not what history holds
        w2[1] = Ack(2, w2[1].generation, OTHER_SEAL)
    elif case == "generations-going-back":
        acks["w1"] = [Ack(1, w1[1].generation, w1[1].checksum), Ack(2, w1[0].generation, w1[0].checksum)]
    row = Row("test")
    concurrency.check_saves(thread_dir, acks, 2, row, durability="full", where="test")
    assert any(says in failure for failure in row.failures), row.failures
    if case in ("reused-generation", "ack-not-on-disk"):
        assert row.lost >= 1
    if case == "unattempted-generation":
        assert row.torn == 1


def test_check_saves_accepts_two_writers_interleaved(thread_dir: Path) -> None:
    acks = _two_writers(thread_dir)
    row = Row("test")
    assert sorted(concurrency.check_saves(thread_dir, acks, 2, row, durability="full", where="test")) == [1, 2, 3, 4]
    assert row.ok, row.failures


def test_a_reader_reports_failures_on_a_damaged_primary(thread_dir: Path, tmp_path: Path) -> None:
    _thread(thread_dir, 2)
    primary = thread_dir / "handoff.json"
    data = bytearray(primary.read_bytes())
    data[len(data) // 2] ^= 0x01
    primary.write_bytes(bytes(data))
    stop = tmp_path / "stop"
    with Zygote(tmp_path / "children.log") as zygote:
        reader = zygote.start(
            "reader", "r", dir=str(thread_dir), stop=str(stop), sources=["primary"], keep=10, durability="full"
        )
        zygote.pump_for(0.3)
        stop.touch()
        zygote.wait(reader, timeout=60)
    assert reader.reads is not None
    reads, failed = reader.reads
    # every load of the primary fails; a restore falls back to history/, which the reader refuses
    assert failed == reads > 0
    assert reader.fails
    row = Row("test")
    concurrency.check_readers([reader], 1, row)
    assert not row.ok


def test_check_readers_wants_enough_reads_and_no_failure() -> None:
    healthy = Child("r1", reads=(500, 0))
    row = Row("test")
    assert concurrency.check_readers([healthy], 500, row) == (500, 0)
    assert row.ok, row.failures
    row = Row("test")
    concurrency.check_readers([healthy], 501, row)
    assert any("only 500 reads" in failure for failure in row.failures)
    row = Row("test")
    concurrency.check_readers([healthy, Child("r2", reads=(10, 1), fails=["read 3: load: …"])], 1, row)
    assert len(row.failures) == 2
    row = Row("test")
    concurrency.check_readers([Child("r3")], 0, row)  # killed or hung before it reported
    assert not row.ok


def test_lock_holder_names_the_process_holding_the_writers_lock(thread_dir: Path) -> None:
    _thread(thread_dir, 1)
    assert concurrency.lock_holder(thread_dir) is None
    with writer_lock(thread_dir):
        assert concurrency.lock_holder(thread_dir) == os.getpid()
    assert concurrency.lock_holder(thread_dir) is None


# -- the syscall part's own checks -----------------------------------------------------------------

_DRY_RUN = f"""\
101 rt_sigtimedwait([USR1], NULL, NULL, 8) = 10 (SIGUSR1)
101 write(1, "BEGIN c1\\n", 9) = 9
101 newfstatat(AT_FDCWD, "{BEGIN_MARK}", 0x7ffd6f0e5d40, 0) = -1 ENOENT (No such file or directory)
101 openat(AT_FDCWD, "/w/thread/.lock", O_RDWR|O_CREAT) = 3
101 flock(3, LOCK_EX|LOCK_NB) = 0
101 openat(AT_FDCWD, "/w/thread/history/.00000004.json.ab12cd34.tmp", O_RDWR|O_CREAT|O_EXCL, 0600) = 4
101 write(4, "{{\\n  \\"schema_version\\": \\"2.0\\"", 1761) = 1761
101 newfstatat(AT_FDCWD, "{END_MARK}", 0x7ffd6f0e5d40, 0) = -1 ENOENT (No such file or directory)
101 write(1, "ACK c1 4 4 blake3:00\\n", 20) = 20
+++ exited with 0 +++
"""


def test_parse_trace_takes_the_calls_between_the_marks() -> None:
    trace = syscalls.parse_trace(_DRY_RUN)
    assert [name for name, _ in trace.calls] == ["openat", "flock", "openat", "write"]
    assert (trace.before["write"], trace.before["openat"], trace.before["newfstatat"]) == (1, 0, 1)
    points = syscalls.points_of(syscalls.SCENARIOS[1], trace)
    assert [(p.call, p.occurrence, p.when) for p in points] == [
        ("openat", 1, 1),
        ("flock", 1, 1),
        ("openat", 2, 2),
        ("write", 1, 2),  # the BEGIN line's write came first
    ]


def _killed_log(*calls: str) -> str:
    return "".join(f"101 {call}\n" for call in calls) + "101 +++ killed by SIGKILL +++\n"


@pytest.mark.parametrize(
    ("code", "begun", "acks", "log", "says"),
    [
        pytest.param(0, True, 1, "", "not killed", id="not-killed"),
        pytest.param(-9, False, 0, "", "before the save began", id="killed-before-the-save"),
        pytest.param(-9, True, 1, "", "after the save was acknowledged", id="killed-after-the-ack"),
        pytest.param(-9, True, 0, "101 +++ exited with 0 +++\n", "no kill", id="log-without-a-kill"),
        pytest.param(
            -9,
            True,
            0,
            _killed_log('openat(AT_FDCWD, "/w/thread/.lock", O_RDWR|O_CREAT <unfinished ...>) = ?'),
            "not #2",
            id="killed-at-another-occurrence",
        ),
        pytest.param(
            -9,
            True,
            0,
            _killed_log(
                'openat(AT_FDCWD, "/w/thread/.lock", O_RDWR|O_CREAT) = 3',
                'openat(AT_FDCWD, "/w/thread/state.json", O_RDONLY <unfinished ...>) = ?',
            ),
            "not #2",
            id="killed-at-another-call",
        ),
    ],
)
def test_landed_refuses_a_kill_outside_the_planned_point(
    code: int, begun: bool, acks: int, log: str, says: str
) -> None:
    point = syscalls.points_of(syscalls.SCENARIOS[1], syscalls.parse_trace(_DRY_RUN))[2]  # openat #2
    child = Child("c1", code=code, begun=begun, acks=[Ack(1, 4, OTHER_SEAL)] * acks)
    problem = syscalls.landed(point, child, log)
    assert problem is not None
    assert says in problem


def test_landed_refuses_a_kill_whose_earlier_calls_were_not_the_planned_ones() -> None:
    """The killed call looks like the planned one, but an entry before it differs: the plan drifted."""
    point = syscalls.points_of(syscalls.SCENARIOS[1], syscalls.parse_trace(_DRY_RUN))[2]  # openat #2
    log = _killed_log(
        'openat(AT_FDCWD, "/w/thread/state.json", O_RDONLY) = 3',  # the dry run's first openat was the lock
        'openat(AT_FDCWD, "/w/thread/history/.00000004.json.zz99yy88.tmp", O_RDWR|O_CREAT|O_EXCL, 0600 '
        "<unfinished ...>) = ?",
    )
    problem = syscalls.landed(point, Child("c1", code=-9, begun=True), log)
    assert problem is not None
    assert "openat #1" in problem
    assert "state.json" in problem


def test_drift_names_the_first_call_where_two_dry_runs_part() -> None:
    same = syscalls.parse_trace(_DRY_RUN.replace("ab12cd34", "zz99yy88").replace("c1", "c2"))
    assert syscalls.drift(syscalls.parse_trace(_DRY_RUN), same) is None  # temp names, tags, pids: alike
    # a record outside the thread (one more stat before the lock) shifts every later call
    extra = 'newfstatat(AT_FDCWD, "/home/u/gone", 0x7ffd6f0e5d40, 0) = -1 ENOENT (No such file or directory)\n'
    other = syscalls.parse_trace(_DRY_RUN.replace("101 openat", "101 " + extra + "101 openat", 1))
    says = syscalls.drift(syscalls.parse_trace(_DRY_RUN), other)
    assert says is not None
    assert "call #1 of the save" in says
    assert "/home/u/gone" in says


def test_a_first_save_is_killed_where_planned_and_a_kill_one_call_off_is_refused(tmp_path: Path) -> None:
    """The first save of a thread records it in the per-user trust record: the children's is private and reset.

    Two dry runs agree, a kill lands on the planned call, and a kill one call early is refused.
    """
    row = Row("syscalls")
    with syscalls.Job(_options(tmp_path, 0, "journal"), row) as job:
        points = job.plan(syscalls.SCENARIOS[0])
        assert any(TRUST_NAME in point.line for point in points), "the first save no longer records its thread"
        # the last stat of the save: after the trust record outside the thread was read
        point = [point for point in points if point.call == "newfstatat"][-1]
        job.case(point)
        assert row.ok, row.failures
        assert (row.cases, row.kills) == (1, 1)
        job.case(dataclasses.replace(point, offset=point.offset - 1))  # strace kills at the stat before it
    assert (row.cases, row.kills) == (2, 1)
    assert len(row.failures) == 1
    assert row.failures[0].startswith("killed at newfstatat #"), row.failures


def test_landed_accepts_the_kill_at_the_planned_point() -> None:
    point = syscalls.points_of(syscalls.SCENARIOS[1], syscalls.parse_trace(_DRY_RUN))[2]
    log = _killed_log(
        'openat(AT_FDCWD, "/w/thread/.lock", O_RDWR|O_CREAT) = 3',
        'openat(AT_FDCWD, "/w/thread/history/.00000004.json.zz99yy88.tmp", O_RDWR|O_CREAT|O_EXCL, 0600 '
        "<unfinished ...>) = ?",
    )
    assert syscalls.landed(point, Child("c1", code=-9, begun=True), log) is None
