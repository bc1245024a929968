"""Special files an attacker puts in a thread: FIFOs, an 8 GiB sparse journal, hard links to outside files.

Each ran for ever, ran out of memory, or changed a file outside the thread; each now returns or is
refused within seconds. Every operation runs in a child process with a timeout, so a hang fails the
test instead of the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from handoff_files import HandoffStore

CONTENT = {"narrative": "Working.", "priorities": [{"task": "go on", "urgency": "first"}]}

# a library call in a child: exit 0 if it returned, 1 with one line if it raised a HandoffError;
# anything else (a traceback, a MemoryError) exits otherwise and fails the test
_CALL = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a memory blow-up fails, not swaps
    from handoff_files import HandoffError, HandoffStore
    store = HandoffStore(sys.argv[1], durability="journal")  # the journal line is the commit point
    try:
        if sys.argv[2] == "restore":
            store.restore()
        else:
            store.save({"narrative": "Next.", "priorities": [{"task": "go", "urgency": "first"}]})
    except HandoffError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    """
)


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, env=env, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv[-2:]} still ran after 10 s")


def _library(thread: Path, what: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-c", _CALL, str(thread), what], env)


def _cli(env: dict[str, str], *argv: str | Path) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "handoff_files", *map(str, argv)], env)


def _saved(thread: Path) -> HandoffStore:
    store = HandoffStore(thread, durability="journal")
    store.save(CONTENT)
    store.save(CONTENT)
    return store


def _assert_returned_or_refused(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("journal.jsonl", id="journal"),
        pytest.param("handoff.json", id="primary"),
        pytest.param("state.json", id="state"),
        pytest.param("history/00000002.json", id="history"),
        pytest.param(".lock", id="lock"),
    ],
)
@pytest.mark.parametrize("what", ["restore", "save", "log", "doctor"])
def test_a_fifo_in_place_of_a_thread_file_never_hangs(
    thread_dir: Path, subprocess_env: dict[str, str], name: str, what: str
) -> None:
    _saved(thread_dir)
    target = thread_dir / name
    target.unlink()
    os.mkfifo(target, 0o600)
    if what in ("restore", "save"):
        done = _library(thread_dir, what, subprocess_env)
    else:
        done = _cli(subprocess_env, what, thread_dir)
    _assert_returned_or_refused(done)
    if what == "save" and name in ("journal.jsonl", ".lock"):
        assert done.returncode == 1
        assert name.rsplit("/", 1)[-1] in done.stderr or str(thread_dir) in done.stderr
        assert "not a regular file" in done.stderr


@pytest.mark.parametrize("what", ["restore", "save", "log"])
def test_an_8_gib_sparse_journal_is_bounded_in_time_and_memory(
    thread_dir: Path, subprocess_env: dict[str, str], what: str
) -> None:
    _saved(thread_dir)
    os.truncate(thread_dir / "journal.jsonl", 8 << 30)
    done = _cli(subprocess_env, "log", thread_dir) if what == "log" else _library(thread_dir, what, subprocess_env)
    _assert_returned_or_refused(done)
    if what == "restore":
        assert done.returncode == 0, done.stderr  # the files are intact: restore uses them
    else:
        assert done.returncode == 1
        assert "over the" in done.stderr
        assert "journal.jsonl" in done.stderr


def test_a_hard_linked_journal_is_refused_and_the_outside_file_is_unchanged(tmp_path: Path) -> None:
    thread = tmp_path / "thread-1"
    store = _saved(thread)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious line\nlast line with no newline")
    (thread / "journal.jsonl").unlink()
    os.link(outside, thread / "journal.jsonl")
    with pytest.raises(Exception, match="hard link") as caught:
        store.save(CONTENT)
    assert type(caught.value).__name__ == "HandoffWriteError"
    with pytest.raises(Exception, match="hard link"):
        store.journal.cut_torn_tails()
    assert outside.read_bytes() == b"precious line\nlast line with no newline"


def test_a_hard_linked_lock_is_refused_and_the_outside_file_is_unchanged(tmp_path: Path) -> None:
    thread = tmp_path / "thread-1"
    _saved(thread)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious")
    (thread / ".lock").unlink()
    os.link(outside, thread / ".lock")
    store = HandoffStore(thread)
    with pytest.raises(Exception, match="hard link") as caught:
        store.save(CONTENT)
    assert type(caught.value).__name__ == "HandoffWriteError"
    assert outside.read_bytes() == b"precious"
