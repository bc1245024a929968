"""The OS layer fails, shortens and passes calls as told, and an injected fault never loses, tears or leaks anything."""

from __future__ import annotations

import errno
import os
import re
import shutil
import threading
from pathlib import Path
from types import ModuleType

import pytest

import handoff_files.foundation.atomic
import handoff_files.thread.journal
from bench.torture import Options, Row
from bench.torture import faults as torture_faults
from bench.torture.faults import Case, Operation, Outcome, check_case
from bench.torture.oslayer import LIBRARY_CALLS, REAL, FaultKind, FaultLayer, Layer
from handoff_files import HandoffStore, Restored, load
from handoff_files.thread.layout import ThreadDir
from tests.writer_child import content

# -- the layer ---------------------------------------------------------------------------------


def test_layer_passes_every_call_to_the_real_disk_and_logs_it(tmp_path: Path) -> None:
    with Layer() as layer:
        store = HandoffStore(tmp_path / "t")
        store.save(content("w", 1, 10))
        receipt = store.save(content("w", 2, 10))  # the primary exists now: put in place by an exchange
    names = layer.names()
    for expected in ("open", "write", "fsync", "replace", "exchange", "close", "listdir", "stat"):
        assert expected in names, f"{expected} was not routed through the layer"
    assert load(receipt.path).generation == 2
    modules = {name: LIBRARY_CALLS.get(name, os) for name in REAL}
    assert all(getattr(modules[name], name) is REAL[name] for name in REAL), "the real functions are back"


def test_layer_routes_pathlib_reads_through_io_open_and_its_file_objects(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"abc")
    with Layer() as layer:
        assert target.read_bytes() == b"abc"
    assert layer.names()[:2] == ["io.open", "file.read"]


@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in ("ENOSPC", "EIO", "EROFS")])
def test_a_fault_once_fails_only_its_call(tmp_path: Path, kind: FaultKind) -> None:
    with FaultLayer(kind, at=1) as layer:
        tmp_path.stat()
        with pytest.raises(OSError) as raised:
            tmp_path.stat()
        tmp_path.stat()
    assert raised.value.errno == getattr(errno, kind)
    assert raised.value.filename == str(tmp_path)
    assert layer.injected == [1]


def test_a_persistent_fault_fails_every_call_from_its_index_on(tmp_path: Path) -> None:
    with FaultLayer("EIO", at=1, persistent=True) as layer:
        tmp_path.stat()
        for _ in range(3):
            with pytest.raises(OSError, match="Input/output error"):
                os.listdir(tmp_path)
    assert layer.injected == [1, 2, 3]


def test_a_short_write_really_writes_the_first_half_and_says_so(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with FaultLayer("short-write", at=0):
            assert os.write(fd, b"0123456789") == 5
            assert os.write(fd, b"abcdef") == 6  # once: the next write is whole
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"01234abcdef"


def test_a_failed_close_still_releases_the_descriptor(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    with FaultLayer("EIO", at=0), pytest.raises(OSError):
        os.close(fd)
    with pytest.raises(OSError) as raised:
        os.fstat(fd)
    assert raised.value.errno == errno.EBADF


def test_the_layer_leaves_other_threads_calls_alone(tmp_path: Path) -> None:
    seen: list[BaseException | None] = []

    def other() -> None:
        try:
            tmp_path.stat()
            seen.append(None)
        except OSError as exc:
            seen.append(exc)

    with FaultLayer("EIO", at=0, persistent=True) as layer:
        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
    assert seen == [None]
    assert layer.calls == []


def test_only_one_layer_can_be_entered_at_a_time() -> None:
    with Layer(), pytest.raises(RuntimeError, match="already entered"), Layer():
        pass


# -- the checks catch what they claim to ---------------------------------------------------------


@pytest.fixture(scope="module")
def operations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Operation]:
    """The operations under test and their templates, counted once (each test copies a template)."""
    found = torture_faults._prepare(tmp_path_factory.mktemp("faults"), "full")
    return {operation.name: operation for operation in found}


def _run_case(operations: dict[str, Operation], case: Case, name: str) -> tuple[Path, Outcome]:
    operation = operations[case.operation]
    thread = operation.copy(name)
    layer = FaultLayer(case.kind, case.at, persistent=case.persistent)
    outcome = torture_faults._perform(operation, thread, layer)
    assert _call(outcome.injected[0]) == _call(operation.described[case.at].replace("count-" + case.operation, name))
    return thread, outcome


def _call(described: str) -> str:
    """A described call without its temp file's random part."""
    return re.sub(r"\.[a-z0-9_]{8}\.tmp", ".tmp", described)


def _fault_at(operation: Operation, call: str, target: str) -> int:
    return next(i for i, text in enumerate(operation.described) if f" {call}(" in text and target in text)


def test_check_passes_a_save_that_fails_cleanly(operations: dict[str, Operation]) -> None:
    at = _fault_at(operations["save"], "fsync", ".00000004.json")
    case = Case("save", at, "EIO", persistent=False)
    thread, outcome = _run_case(operations, case, "clean")
    assert type(outcome.error).__name__ == "HandoffWriteError"
    verdict = check_case(case, operations["save"], thread, outcome)
    assert verdict.failures == []
    assert (verdict.lost, verdict.torn, verdict.leftovers) == (0, 0, 0)


def test_check_catches_an_exception_that_is_not_a_handoff_error(
    operations: dict[str, Operation],
) -> None:
    case = Case("restore", 0, "EIO", persistent=False)
    thread = operations["restore"].copy("escape")
    verdict = check_case(case, operations["restore"], thread, Outcome(None, OSError(errno.EIO, "raw"), []))
    assert verdict.torn == 1
    assert "OSError escaped" in verdict.failures[0][0]


def test_check_catches_an_acknowledged_generation_destroyed_by_a_failed_save(
    operations: dict[str, Operation],
) -> None:
    at = _fault_at(operations["save"], "fsync", ".00000004.json")
    case = Case("save", at, "EIO", persistent=False)
    thread, outcome = _run_case(operations, case, "destroyed")
    # a broken save that, failing, takes the newest generation with it
    (thread / "history" / "00000003.json").unlink()
    (thread / "handoff.json").write_bytes(b"{")
    verdict = check_case(case, operations["save"], thread, outcome)
    assert verdict.lost >= 1
    assert any("sealed content is lost" in what for what, _ in verdict.failures), verdict.failures


def test_check_catches_a_restore_that_returns_stale_or_unsealed_data(
    operations: dict[str, Operation],
) -> None:
    operation = operations["restore"]
    older = operation.acked[2]
    thread = operation.copy("stale")
    stale = Outcome(Restored(older, "history", thread / "history" / "00000002.json"), None, [])
    verdict = check_case(Case("restore", 0, "EIO", persistent=False), operation, thread, stale)
    assert any("not the newest" in what for what, _ in verdict.failures)
    thread = operation.copy("unsealed")
    unsealed = older.model_copy(update={"seal": None})
    torn = Outcome(Restored(unsealed, "rebuilt", thread / "state.json"), None, [])
    verdict = check_case(Case("restore", 0, "EIO", persistent=False), operation, thread, torn)
    assert verdict.torn == 1
    assert verdict.failures == [("restore under the fault returned unsealed data (rebuilt)", "")]


def test_check_catches_temp_files_the_next_open_leaves(
    operations: dict[str, Operation], monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _fault_at(operations["save"], "fsync", ".00000004.json")
    case = Case("save", at, "EIO", persistent=False)
    thread, outcome = _run_case(operations, case, "leftovers")
    (thread / "history" / ".00000004.json.abcd1234.tmp").write_bytes(b"{")
    # a store whose opening forgets to clean up after a dead writer
    monkeypatch.setattr(ThreadDir, "remove_stray_temps", lambda self: [])
    verdict = check_case(case, operations["save"], thread, outcome)
    assert verdict.leftovers == 1


@pytest.mark.parametrize(
    ("module", "writes", "found"),
    [
        pytest.param(
            handoff_files.foundation.atomic, ".00000004.json.", "history/ copy does not load", id="atomic-history"
        ),
        # the journal's append before the journal-first change wrote its line this way
        pytest.param(handoff_files.thread.journal, "journal.jsonl", "left the thread unclean", id="journal-line"),
    ],
)
def test_the_fault_run_catches_a_write_path_that_ignores_short_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: ModuleType, writes: str, found: str
) -> None:
    def write_once(fd: int, data: bytes) -> None:
        os.write(fd, data)  # the bug: the count os.write returns is ignored

    monkeypatch.setattr(module, "write_all", write_once)
    operation = next(o for o in torture_faults._prepare(tmp_path, "full") if o.name == "save")
    at = _fault_at(operation, "write", writes)
    case = Case("save", at, "short-write", persistent=False)
    thread = operation.copy("case")
    outcome = torture_faults._perform(operation, thread, FaultLayer(case.kind, case.at))
    verdict = check_case(case, operation, thread, outcome)
    assert [_call(call) for call in outcome.injected] == [_call(operation.described[at]).replace("count-save", "case")]
    assert outcome.error is None, "the broken writer acknowledges the save"
    assert any(found in what for what, _ in verdict.failures), verdict.failures


# -- the whole enumeration ---------------------------------------------------------------------


@pytest.fixture(scope="module", params=[pytest.param("full", id="full"), pytest.param("journal", id="journal")])
def fault_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Row:
    """A seeded sample of the fault cases: 400 of the ~1,000 with full durability, 200 with journal (CI budget)."""
    durability = request.param
    count = 400 if durability == "full" else 200
    workdir = tmp_path_factory.mktemp(f"fault-run-{durability}")
    row = torture_faults.run(Options(count, 20_240_611, workdir, durability, lambda _: None))
    shutil.rmtree(workdir)
    return row


def test_no_fault_loses_tears_or_leaks_anything(fault_run: Row) -> None:
    assert fault_run.cases >= 200
    assert fault_run.faults >= fault_run.cases  # every case injected at least one fault
    others = [failure for failure in fault_run.failures if "escaped, not a HandoffError" not in failure]
    assert others == []
    assert (fault_run.lost, fault_run.leftovers) == (0, 0)


def test_every_fault_surfaces_as_a_handoff_error_naming_a_path(fault_run: Row) -> None:
    assert fault_run.failures == []
    assert fault_run.ok
