"""No planted link is followed: every folder the saver writes into under its root is a real folder.

Each test plants a symbolic link (or a hard link) where the saver keeps a folder or file of its
own, pointing at a folder outside the root that holds a sentinel file, and checks that the saver
refuses with an :class:`InvalidNameError` naming the link and that nothing outside changed.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files import InvalidNameError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.layout import folder_name
from handoff_files.langgraph.trim import keep_newest

NS = "child:1"


def _config(checkpoint_ns: str = "", checkpoint_id: str | None = None) -> Any:
    configurable: dict[str, Any] = {"thread_id": "t", "checkpoint_ns": checkpoint_ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _put(saver: HandoffSaver, checkpoint_ns: str = "", step: int = 0) -> Any:
    checkpoint = create_checkpoint(empty_checkpoint(), None, step)
    checkpoint["channel_values"] = {"n": step}
    checkpoint["channel_versions"] = {"n": step + 1}
    return saver.put(_config(checkpoint_ns), checkpoint, {"run_id": f"run-{step}"}, {})


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sentinel.txt").write_text("keep me\n")
    return outside


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _refused(action: Callable[[], Any], link: Path) -> None:
    with pytest.raises(InvalidNameError, match="symbolic link") as refused:
        action()
    assert refused.value.path == str(link), "the error names the planted link"


def test_a_link_in_place_of_the_thread_folder_is_refused_by_every_read_and_write(tmp_path: Path) -> None:
    outside, root = _outside(tmp_path), tmp_path / "graphs"
    root.mkdir()
    link = root / "t"
    link.symlink_to(outside)
    before = _snapshot(outside)
    saver = HandoffSaver(root)
    _refused(lambda: _put(saver), link)
    _refused(lambda: saver.put_writes(_config(checkpoint_id="x"), [("n", 1)], task_id="task"), link)
    _refused(lambda: saver.get_tuple(_config()), link)
    _refused(lambda: list(saver.list(_config())), link)
    _refused(lambda: list(saver.list(None)), link)
    _refused(lambda: saver.delete_thread("t"), link)
    _refused(lambda: saver.prune(["t"]), link)
    _refused(lambda: keep_newest(saver, 1, ["t"]), link)
    assert _snapshot(outside) == before
    assert link.is_symlink(), "the link itself is left as it was"


@pytest.mark.parametrize(
    ("planted", "checkpoint_ns"),
    [
        pytest.param(("namespaces",), NS, id="namespaces/"),
        pytest.param(("namespaces", folder_name(NS)), NS, id="one namespace's folder"),
        pytest.param(("history",), "", id="history/"),
    ],
)
def test_a_link_in_place_of_a_namespace_folder_is_refused_and_nothing_is_written_through_it(
    tmp_path: Path, planted: tuple[str, ...], checkpoint_ns: str
) -> None:
    outside, root = _outside(tmp_path), tmp_path / "graphs"
    saver = HandoffSaver(root)
    _put(saver)  # the thread exists, as a real folder
    link = root.joinpath("t", *planted)
    if link.exists():
        for path in sorted(link.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        link.rmdir()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    before = _snapshot(outside)
    _refused(lambda: _put(saver, checkpoint_ns, step=1), link)
    _refused(lambda: saver.get_tuple(_config(checkpoint_ns)), link)
    _refused(lambda: list(saver.list({"configurable": {"thread_id": "t"}})), link)  # every namespace
    assert _snapshot(outside) == before


def test_a_link_in_place_of_writes_is_refused_by_put_writes_list_and_prune(tmp_path: Path) -> None:
    outside, root = _outside(tmp_path), tmp_path / "graphs"
    saver = HandoffSaver(root)
    first = _put(saver)
    saver.put_writes(first, [("n", 1)], task_id="task")
    _put(saver, step=1)
    writes = root / "t" / "writes"
    # the outside folder holds a file named as the first checkpoint's writes: prune must not delete it
    for path in writes.glob("*.jsonl"):
        (outside / path.name).write_bytes(path.read_bytes())
        path.unlink()
    shutil.rmtree(writes)  # with the saver's spare files
    writes.symlink_to(outside)
    before = _snapshot(outside)
    _refused(lambda: saver.put_writes(first, [("n", 2)], task_id="other"), writes)
    _refused(lambda: saver.get_tuple(first), writes)
    _refused(lambda: saver.prune(["t"]), writes)
    _refused(lambda: saver.delete_for_runs(["run-0"]), writes)
    _refused(lambda: keep_newest(saver, 1), writes)
    assert _snapshot(outside) == before


def test_a_writes_file_hard_linked_to_a_file_outside_is_never_appended_to(tmp_path: Path) -> None:
    outside, root = _outside(tmp_path), tmp_path / "graphs"
    (outside / "victim.log").write_bytes(b"")  # empty, so it reads as a checkpoint with no writes yet
    saver = HandoffSaver(root)
    config = _put(saver)
    saver.put_writes(config, [("n", 1)], task_id="task")
    (writes,) = (root / "t" / "writes").glob("*.jsonl")
    writes.unlink()
    writes.hardlink_to(outside / "victim.log")
    before = _snapshot(outside)
    with pytest.raises(InvalidNameError, match="hard links") as refused:
        saver.put_writes(config, [("n", 2)], task_id="other")
    assert refused.value.path == str(writes)
    assert _snapshot(outside) == before


def test_a_thread_made_after_the_checks_still_works_and_its_folders_are_private(tmp_path: Path) -> None:
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    config = _put(saver, NS)
    saver.put_writes(config, [("n", 1)], task_id="task")
    got = saver.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task", "n", 1)]
    ns_dir = root / "t" / "namespaces" / folder_name(NS)
    for folder in (root / "t", root / "t" / "namespaces", ns_dir, ns_dir / "writes"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def test_handoff_prune_through_a_planted_writes_link_says_so_in_one_line_and_deletes_nothing_outside(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    outside, root = _outside(tmp_path), tmp_path / "graphs"
    saver = HandoffSaver(root)
    first = _put(saver)
    saver.put_writes(first, [("n", 1)], task_id="task")
    _put(saver, step=1)
    writes = root / "t" / "writes"
    for path in writes.glob("*.jsonl"):  # the first checkpoint's writes file, as pruning would delete it
        path.rename(outside / path.name)
    shutil.rmtree(writes)  # with the saver's spare files
    writes.symlink_to(outside)
    before = _snapshot(outside)
    done = subprocess.run(
        [python, "-m", "handoff_files", "prune", str(root), "--keep", "1"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"{writes}: is a symbolic link" in done.stderr
    assert "Traceback" not in done.stderr
    assert _snapshot(outside) == before


def test_a_link_in_place_of_blobs_is_refused_by_put_read_and_prune(tmp_path: Path) -> None:
    outside, root = _outside(tmp_path), tmp_path / "graphs"
    saver = HandoffSaver(root)
    checkpoint = create_checkpoint(empty_checkpoint(), None, 0)
    checkpoint["channel_values"] = {"big": "b" * 300_000}  # past the blob threshold: in blobs/
    checkpoint["channel_versions"] = {"big": 1}
    first = saver.put(_config(), checkpoint, {"run_id": "run-0"}, {})
    blobs = root / "t" / "blobs"
    for path in blobs.iterdir():
        (outside / path.name).write_bytes(path.read_bytes())
        path.unlink()
    blobs.rmdir()
    blobs.symlink_to(outside)
    before = _snapshot(outside)
    _refused(lambda: HandoffSaver(root).get_tuple(first), blobs)
    _refused(lambda: saver.put(_config(), create_checkpoint(checkpoint, None, 1), {}, {}), blobs)
    _refused(lambda: saver.prune(["t"]), blobs)
    _refused(lambda: saver.delete_for_runs(["run-0"]), blobs)
    assert _snapshot(outside) == before
