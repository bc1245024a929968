"""The power-loss model allows the crash states it should; the real writer survives them, broken writers do not."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from bench.torture import Options
from bench.torture import powerloss as torture_powerloss
from bench.torture.oslayer import DIR, Broken, Op, Recorder
from bench.torture.powerloss import SCENARIOS, Disk, Tally, check_state, crash_states, outcomes, run_states, trace
from handoff_files import Durability, HandoffStore
from tests.writer_child import content

# -- the model ---------------------------------------------------------------------------------


def _states(ops: list[Op], durable: Disk | None = None) -> list[dict[str, bytes | None]]:
    """Each distinct crash state as name -> content (None for a directory)."""
    base = durable if durable is not None else Disk({".": DIR})
    return [
        {name: None if inode == DIR else state.disk.data[inode] for name, inode in state.disk.names.items()}
        for state in crash_states(ops, base, random.Random(1))
    ]


#: A durable write done right: temp file, write, fsync, rename over the target, fsync the directory.
_ATOMIC = [
    Op("create", "a.tmp", inode=1),
    Op("write", inode=1, offset=0, data=b"new!", extends=True),
    Op("sync", inode=1),
    Op("rename", "a.tmp", "a", inode=1),
    Op("sync", "."),
]


def _old_a() -> Disk:
    return Disk({".": DIR, "a": 0}, {0: b"old"})


def test_a_durable_write_leaves_the_old_or_the_new_file_whole() -> None:
    states = _states(_ATOMIC, _old_a())
    assert {state["a"] for state in states} == {b"old", b"new!"}
    # the temp file may be there, empty, torn or whole, until the rename reaches disk
    assert {state.get("a.tmp") for state in states} >= {None, b"", b"ne", b"new!"}


def test_without_the_file_fsync_the_renamed_file_may_be_empty_or_torn() -> None:
    broken = [op for op in _ATOMIC if not (op.kind == "sync" and op.inode == 1)]
    contents = {state["a"] for state in _states(broken, _old_a()) if "a" in state}
    assert {b"old", b"new!", b"", b"ne", b"\0\0\0\0"} <= contents


def _after_all(ops: list[Op], durable: Disk) -> set[bytes | None]:
    """What ``a`` may hold after a crash that came after every operation."""
    final = crash_states(ops, durable, random.Random(1), start=len(ops), unique=False)
    return {state.disk.data[state.disk.names["a"]] if "a" in state.disk.names else None for state in final}


def test_after_the_directory_fsync_the_rename_is_durable() -> None:
    assert _after_all(_ATOMIC, _old_a()) == {b"new!"}


def test_without_the_directory_fsync_the_rename_may_be_lost_after_the_last_op() -> None:
    assert _after_all(_ATOMIC[:-1], _old_a()) == {b"old", b"new!"}


def test_a_later_operation_may_persist_while_an_earlier_one_does_not() -> None:
    ops = [Op("create", "x", inode=1), Op("create", "y", inode=2)]
    names = [set(state) - {"."} for state in _states(ops)]
    assert {"y"} in names  # reordered: y reached disk, x did not


def test_a_write_across_blocks_may_persist_any_of_its_blocks() -> None:
    data = bytes(range(256)) * 40  # 10,240 bytes: three blocks
    op = Op("write", inode=0, offset=0, data=data, extends=True)
    found = outcomes(op)
    assert {"full", "drop", "prefix:4096", "prefix:8192", "zeros", "garbage"} <= set(found)
    assert sum(outcome.startswith("blocks:") for outcome in found) == 6
    disk = Disk({".": DIR, "f": 0}, {0: b""})
    disk.apply(op, "blocks:5")  # the first and the last block only
    assert disk.data[0] == data[:4096] + b"\0" * 4096 + data[8192:]


def test_a_file_fsync_does_not_make_its_name_durable() -> None:
    ops = [Op("create", "f", inode=1), Op("write", inode=1, offset=0, data=b"x", extends=True), Op("sync", inode=1)]
    final = list(crash_states(ops, Disk({".": DIR}), random.Random(1), start=3, unique=False))
    assert {tuple(state.disk.names) for state in final} == {(".",), (".", "f")}
    assert all(state.disk.data[1] == b"x" for state in final)


# -- the recorder --------------------------------------------------------------------------------


def test_the_recorder_traces_a_save_in_the_order_the_protocol_states(tmp_path: Path) -> None:
    run_trace = trace(SCENARIOS[0], tmp_path, "full")
    kinds = [op.kind for op in run_trace.ops]
    first_sync = kinds.index("sync")
    assert kinds[:first_sync] == ["create", "write"]  # history/'s temp file
    history_rename = next(op for op in run_trace.ops if op.kind == "rename")
    assert history_rename.dest.endswith("history/00000003.json")
    assert [ack.generation for ack in run_trace.acks] == [3, 4]
    assert run_trace.acknowledged(0) == 2
    assert run_trace.acknowledged(run_trace.acks[0].after) == 3


def test_the_recorder_refuses_a_write_it_cannot_model(tmp_path: Path) -> None:
    with (
        Recorder(tmp_path, {".": DIR}, {}, broken=None),
        pytest.raises(RuntimeError, match="not traced"),
        (tmp_path / "f").open("w"),
    ):
        pass


@pytest.mark.parametrize(
    ("durability", "skipped"),
    [
        # history/: the commit point; the thread directory is never flushed now
        pytest.param("full", 1, id="full"),
        # a journal-first save into a thread whose journal exists flushes no directory at all
        pytest.param("journal", 0, id="journal"),
    ],
)
def test_the_broken_recorder_skips_the_fsyncs_it_is_told_to(
    tmp_path: Path, durability: Durability, skipped: int
) -> None:
    thread = tmp_path / "thread-1"
    HandoffStore(thread, durability=durability).save(content("w", 1, 10))
    disk = Disk.snapshot(tmp_path)
    sizes = {inode: len(data) for inode, data in disk.data.items()}
    with Recorder(tmp_path, disk.names, sizes, broken="no-dir-fsync") as recorder:
        HandoffStore(thread, durability=durability).save(content("w", 2, 10))
    assert recorder.skipped == skipped
    assert all(op.inode != DIR for op in recorder.ops if op.kind == "sync")


# -- the real writer, and the broken ones ------------------------------------------------------


@pytest.mark.parametrize("durability", [pytest.param("full", id="full"), pytest.param("journal", id="journal")])
def test_no_crash_state_loses_an_acknowledged_generation(tmp_path: Path, durability: str) -> None:
    tally = run_states(150, workdir=tmp_path, seed=20_240_611, durability=durability)
    assert tally.states == 150
    assert tally.failures == {}
    assert (tally.lost, tally.torn, tally.leftovers) == (0, 0, 0)
    assert tally.altered > 0  # the states did drop or tear operations


def _check_after_first_ack(scenario_name: str, durability: str, broken: Broken, where: Path) -> Tally:
    """Check 40 crash states of the scenario's saves, each crashing after the first save returned."""
    scenario = next(s for s in SCENARIOS if s.name == scenario_name)
    run_trace = trace(scenario, where / "traced", durability, broken)
    tally = Tally()
    states = crash_states(run_trace.ops, run_trace.durable, random.Random(7), limit=40, start=run_trace.acks[0].after)
    for index, state in enumerate(states):
        check_state(state, run_trace, where / f"state-{index}", tally, broken)
        shutil.rmtree(where / f"state-{index}")
    return tally


@pytest.mark.parametrize(
    ("scenario", "durability", "broken"),
    [
        pytest.param("saves on a thread", "full", "no-dir-fsync", id="full-no-dir-fsync"),
        pytest.param("saves on a thread", "full", "no-file-fsync", id="full-no-file-fsync"),
        pytest.param("saves on a thread", "journal", "no-file-fsync", id="journal-no-file-fsync"),
        # a journal-first save into a thread whose journal exists needs no directory fsync at all;
        # the first save of a new thread does (its directory, its journal's name)
        pytest.param("first saves of a new thread", "journal", "no-dir-fsync", id="journal-no-dir-fsync"),
    ],
)
def test_the_model_catches_a_writer_that_skips_fsyncs(
    tmp_path: Path, scenario: str, durability: str, broken: Broken
) -> None:
    tally = _check_after_first_ack(scenario, durability, broken, tmp_path)
    assert tally.lost > 0, f"{tally.states} states, nothing lost"
    assert "an acknowledged generation was lost" in tally.failures or any(
        "NoHandoffError" in what for what in tally.failures
    )


def test_the_run_checks_its_count_and_shows_the_broken_writers_caught(tmp_path: Path) -> None:
    lines: list[str] = []
    row = torture_powerloss.run(Options(30, 3, tmp_path, "full", lines.append))
    assert row.ok, row.failures
    assert row.cases == 30
    assert row.notes.count("(caught)") == 2
    assert any(line.startswith("broken writer no-dir-fsync") for line in lines)
