"""A store lists history/ only when the files changed under it (or every RELIST_EVERY saves), not at each save.

A thread that keeps every generation (a LangGraph saver's) listed thousands of names per save:
11.5 ms of a 14.7 ms put at 3,000 checkpoints.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.thread import head as head_module
from handoff_files.thread.layout import ThreadDir
from tests.writer_child import content


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = ThreadDir.generations

    def counted(self: ThreadDir) -> list[tuple[int, str]]:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(ThreadDir, "generations", counted)
    return calls


@pytest.mark.parametrize("durability", ["journal", "full"])
def test_a_store_alone_lists_history_once_per_relist_and_still_prunes_to_keep(
    thread_dir: Path, monkeypatch: pytest.MonkeyPatch, durability: str
) -> None:
    monkeypatch.setattr(head_module, "RELIST_EVERY", 8)
    store = HandoffStore(thread_dir, keep=3, durability=durability)  # type: ignore[arg-type]
    store.save(content("alive", 1, 0))
    calls = _count_listings(monkeypatch)
    for step in range(2, 18):
        store.save(content("alive", step, 0))
    assert len(calls) == 2  # 16 saves: listed at the first after the count ran out, and once 8 saves later
    names = sorted(path.name for path in (thread_dir / "history").iterdir())
    assert names == ["00000015.json", "00000016.json", "00000017.json"]
    assert store.restore().generation == 17


def test_another_writers_save_in_between_is_seen(thread_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = HandoffStore(thread_dir, keep=3), HandoffStore(thread_dir, keep=3)
    first.save(content("alive", 1, 0))
    first.save(content("alive", 2, 0))
    between = second.save(content("other", 1, 0))
    calls = _count_listings(monkeypatch)
    receipt = first.save(content("alive", 3, 0))
    assert receipt.generation == 4
    assert calls  # the files changed under it: history/ listed again (and the disk scanned)
    assert str(HandoffStore(thread_dir).restore().handoff.parent) == between.checksum
    assert sorted(path.name for path in (thread_dir / "history").iterdir()) == [
        "00000002.json",
        "00000003.json",
        "00000004.json",
    ]


# a full save SIGKILLed after its commit point (its history/ file durable) and before its primary
_KILLED_AFTER_FULL_COMMIT = """
import os, signal, sys
from handoff_files import HandoffStore
from handoff_files.thread import commit
from tests.writer_child import content

real = commit.write_durable
def killed_at_the_second(*args, **kwargs):
    if killed_at_the_second.done:
        os.kill(os.getpid(), signal.SIGKILL)
    killed_at_the_second.done = True
    return real(*args, **kwargs)
killed_at_the_second.done = False

commit.write_durable = killed_at_the_second
HandoffStore(sys.argv[1], durability="full").save(content("killed", 1, 0))
"""


def test_a_full_save_killed_after_its_commit_is_seen_by_the_next_name(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # the primary and the journal stay as this store left them: only history/'s next file tells
    store = HandoffStore(thread_dir, durability="full")
    store.save(content("alive", 1, 0))
    store.save(content("alive", 2, 0))
    killed = subprocess.run([python, "-c", _KILLED_AFTER_FULL_COMMIT, str(thread_dir)], env=subprocess_env, check=False)
    assert killed.returncode == -9
    assert (thread_dir / "history" / "00000003.json").exists()
    receipt = store.save(content("alive", 3, 0))
    assert receipt.generation == 4  # never a second generation 3
    restored = HandoffStore(thread_dir).restore()
    assert restored.generation == 4
    assert restored.handoff.parent is not None


@pytest.mark.parametrize("name", ["00000003.yaml", "00000003.json"])
def test_a_file_put_at_the_next_name_after_a_save_is_seen_by_the_next_save(thread_dir: Path, name: str) -> None:
    # a save remembers the files as it left them without looking for the next name (it held the
    # lock): the next save looks, in either format, and never writes over what it finds
    store = HandoffStore(thread_dir)
    store.save(content("alive", 1, 0))
    store.save(content("alive", 2, 0))
    planted = thread_dir / "history" / name
    planted.write_bytes(b"not a handoff\n")
    receipt = store.save(content("alive", 3, 0))
    assert receipt.generation == 4
    assert planted.read_bytes() == b"not a handoff\n"
    assert HandoffStore(thread_dir).restore().generation == 4
