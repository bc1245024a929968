"""The SqliteSaver comparison bench: its measurements run at tiny counts; each checker catches a broken case."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import bench_vs_sqlite as vs
from bench.baselines import minimal_durable_write
from bench.fresh import python_run, strace_missing, syncs_per_op
from bench.latency import poll_latencies, watch_latencies
from bench.sqlite_saver import missing
from bench.timing import Sample
from bench.vs_sqlite_tables import GOAL_MISSED, Results, SizeResult, misses, sections, tables, verdict
from bench.workload import Size

TINY = Size("1 KB", 1024)
needs_strace = pytest.mark.skipif(strace_missing() is not None, reason=str(strace_missing()))


def _sample(name: str, ms: float) -> Sample:
    return Sample(name, (ms / 1e3,) * 3)


def test_missing_langgraph_is_reported_with_the_way_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # a None entry in sys.modules makes the import fail as if the package were absent: the only way to
    # see the test venv's situation from a venv that has langgraph
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)
    reason = missing()
    assert reason is not None
    assert "make bench" in reason
    assert ".venv-bench" in reason


def test_prepare_leaves_sqlite_out_with_a_note_when_langgraph_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)  # as above: langgraph absent
    c = vs.prepare(TINY, tmp_path)
    assert c.saver is None
    assert c.database is None
    assert c.notes == [missing()]


@pytest.mark.slow  # make slow: a whole measurement run
def test_measurements_run_without_sqlite_and_the_report_says_na(tmp_path: Path) -> None:
    c = vs.prepare(TINY, tmp_path, sqlite=False)
    modes = vs.durabilities()
    saves = vs.measure_saves(c, 2, warmup=0)
    saves_batched = vs.measure_saves(c, 1, batch=2, warmup=0)
    loads = vs.measure_loads(c, 2, warmup=0)
    fresh = vs.measure_fresh(c, 1, warmup=0)
    assert set(saves) == set(saves_batched) == {*(f"save:{m}" for m in modes), "write"}
    assert set(loads) == {"load", *(f"restore:{m}" for m in modes), "read"}
    assert set(fresh) == {"pass", "load", *(f"restore:{m}" for m in modes)}
    assert all(len(s.seconds) == 2 and min(s.seconds) > 0 for s in [*saves.values(), *loads.values()])
    # a fresh interpreter that imports the library cannot beat one that imports nothing
    assert fresh["load"].median > fresh["pass"].median

    results = Results(poll=0.05, durabilities=modes, notes=c.notes)
    results.sizes.append(SizeResult(TINY, len(c.data), None, 2, saves_batched, loads, saves, loads, fresh))
    report = "\n\n".join(sections(results))
    assert "switched off" in report
    assert "| n/a |" in report
    filled = {title.split(",")[0] for title, _, rows, _ in tables(results) if rows}
    assert {"Durable save", "Verified load"} <= filled


def test_1kb_content_is_a_minimal_handoff_near_its_size(tmp_path: Path) -> None:
    c = vs.prepare(TINY, tmp_path, sqlite=False)
    assert 900 < len(c.data) < 1600
    assert len(c.content["decisions"]) == len(c.content["warnings"]) == 1


@pytest.mark.parametrize(
    ("ratio", "goal", "expected"),
    [
        pytest.param(0.8, 1.0, "<= 1x met", id="faster"),
        pytest.param(1.0, 1.0, "<= 1x met", id="equal"),
        pytest.param(1.3, 1.2, f"<= 1.2x {GOAL_MISSED}", id="slower"),
        pytest.param(None, 1.0, "n/a", id="not-measured"),
    ],
)
def test_verdict_says_met_only_within_the_goal(ratio: float | None, goal: float, expected: str) -> None:
    assert verdict(ratio, goal) == expected


def test_misses_lists_a_save_slower_than_put_at_goal_sizes_only() -> None:
    results = Results(poll=0.05, durabilities=("full",))
    for label, target in (("1 KB", 1024), ("100 KB", 102_400)):
        saves = {"save:full": _sample("save:full", 3.0), "put": _sample("put", 1.0), "write": _sample("write", 1.0)}
        loads = {"load": _sample("load", 0.1), "get_tuple": _sample("get_tuple", 0.2), "read": _sample("read", 0.1)}
        fresh = {"load": _sample("load", 100.0), "restore:full": _sample("restore:full", 150.0)}
        results.sizes.append(SizeResult(Size(label, target), target, target, 1, saves, loads, saves, loads, fresh))
    lines = misses(results)
    assert any("save, durability full at 100 KB is 3.00x SqliteSaver.put" in line for line in lines)
    assert not any("save" in line and "at 1 KB" in line for line in lines)  # 1 KB is reported, not judged
    assert not any("get_tuple" in line for line in lines)  # load was faster
    # restart is judged at every size: 1.5x import + load misses 1.2x
    assert sum("fresh-process" in line for line in lines) == 2


def test_python_run_raises_when_the_child_fails(tmp_path: Path) -> None:
    python_run("pass")()
    restore_nothing = python_run(vs.FRESH_RESTORE, str(tmp_path / "no-such-thread"))
    with pytest.raises(RuntimeError, match="NoHandoffError"):
        restore_nothing()


SYNCING = """\
import os, sys
from pathlib import Path
workdir, per_op, ops = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
workdir.mkdir()
fd = os.open(workdir / "f", os.O_WRONLY | os.O_CREAT)
for _ in range(ops):
    os.write(fd, b"x")
    for _ in range(per_op):
        os.fsync(fd)
"""


@needs_strace
@pytest.mark.parametrize(
    ("per_op", "expected"),
    [pytest.param(3, 3.0, id="three-fsyncs"), pytest.param(0, 0.0, id="forgot-to-fsync")],
)
def test_syncs_per_op_counts_each_fsync_and_sees_a_write_that_skips_it(per_op: int, expected: float) -> None:
    assert syncs_per_op(SYNCING, str(per_op), ops=4) == expected


@needs_strace
def test_the_minimal_durable_write_makes_two_syncs(tmp_path: Path) -> None:
    assert vs.measure_syncs(tmp_path, vs.content_for(TINY), 2, sqlite=False)["write"] == 2.0


def test_poll_latencies_time_a_poller_that_sees_each_put(tmp_path: Path) -> None:
    version_file = tmp_path / "version"
    state = {"version": 0}

    def put() -> int:
        state["version"] += 1
        minimal_durable_write(version_file, str(state["version"]).encode())
        return state["version"]

    def newest() -> int | None:
        return int(version_file.read_bytes()) if version_file.exists() else None

    latencies = poll_latencies(put, newest, 3, interval=0.01)
    assert len(latencies) == 3
    assert all(0 < latency < 1.0 for latency in latencies)


def test_poll_latencies_raise_for_a_poller_that_never_sees_the_put() -> None:
    with pytest.raises(RuntimeError, match="not seen by the poller"):
        poll_latencies(lambda: 7, lambda: 6, 1, interval=0.01, timeout=0.3)


def test_poll_latencies_raise_when_the_poller_fails() -> None:
    def broken() -> int | None:
        msg = "database is locked"
        raise OSError(msg)

    with pytest.raises(RuntimeError, match="poller failed"):
        poll_latencies(lambda: 1, broken, 1, interval=0.01, timeout=5.0)


def test_watch_latencies_time_each_save_to_its_callback(tmp_path: Path) -> None:
    latencies = watch_latencies(tmp_path / "thread", vs.content_for(TINY), 2, debounce=0.0, pause=0.0)
    assert len(latencies) == 2
    assert all(0 < latency < 5.0 for latency in latencies)


def test_saver_get_tuple_returns_the_newest_put(tmp_path: Path) -> None:
    pytest.importorskip(
        "langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite is installed only in .venv-bench"
    )
    from bench.sqlite_saver import FRESH_GET_TUPLE, Saver

    saver = Saver(tmp_path / "db.sqlite")
    saver.put({"narrative": "first"})
    saver.put({"narrative": "second"})
    assert saver.content() == {"narrative": "second"}
    assert saver.newest_step() == 2
    assert saver.settings()["journal_mode"] == "wal"
    saver.close()
    python_run(FRESH_GET_TUPLE, str(tmp_path / "db.sqlite"), "bench-thread")()
    with pytest.raises(RuntimeError, match="exited 3"):
        python_run(FRESH_GET_TUPLE, str(tmp_path / "db.sqlite"), "another-thread")()


@pytest.mark.parametrize(
    ("synchronous", "put_syncs", "flagged"),
    [
        pytest.param("2 (FULL)", 1.0, False, id="full-and-synced"),
        pytest.param("1 (NORMAL)", 0.0, True, id="normal-no-sync"),
        pytest.param("2 (FULL)", 0.0, True, id="full-but-no-sync-seen"),
    ],
)
def test_report_flags_a_sqlite_default_that_does_not_sync_every_commit(
    synchronous: str, put_syncs: float, flagged: bool
) -> None:
    results = Results(poll=0.05, durabilities=("full",), syncs={"put": put_syncs})
    results.sqlite_settings = {"journal_mode": "wal", "synchronous": synchronous}
    goals = sections(results)[0]
    assert ("does NOT sync every commit" in goals) is flagged
    assert ("syncs every commit" in goals) is not flagged


@pytest.mark.slow  # builds and times the package before and after in fresh processes: ~30 s
def test_the_import_bench_runs_before_and_after_and_writes_its_table(tmp_path: Path) -> None:
    """A smoke run against HEAD as "before" (always there, even in a shallow clone)."""
    from bench import bench_import

    out = tmp_path / "results-import.md"
    assert bench_import.main(["--quick", "--before", "HEAD", "--out", str(out)]) == 0
    report = out.read_text(encoding="utf-8")
    cases = ("python -c pass", "pydantic + one model", "import handoff_files (after)", "handoff --version (before)")
    for case in cases:
        assert case in report
