"""The saver's default durability, "journal": one flush per put, and a put killed right after its commit point.

The journal line holding the checkpoint's sealed generation is the commit point; the ``history/``
copy, the primary and ``state.json`` follow unflushed. A put SIGKILLed between the two has
committed: a fresh process's first read finds it (copied back from the journal), as SqliteSaver's
WAL would show a committed transaction.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from handoff_files import HandoffError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.index import MendedCheckpointWarning
from handoff_files.thread.settings import Durability

# put one checkpoint, then a second in a process killed just after the second's journal commit
_KILLED_AFTER_COMMIT = """
import os, signal, sys
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from handoff_files.langgraph import HandoffSaver
from handoff_files.thread import commit

saver = HandoffSaver(sys.argv[1])
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
first = create_checkpoint(empty_checkpoint(), None, 0)
first["channel_values"], first["channel_versions"] = {"who": "first"}, {"who": 1}
stored = saver.put(config, first, {"source": "loop", "step": 0}, {"who": 1})
second = create_checkpoint(first, None, 1)
second["channel_values"], second["channel_versions"] = {"who": "second"}, {"who": 2}
print(second["id"], flush=True)

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

commit.write_durable = killed  # the history/ copy, the first write after the journal's commit point
saver.put(stored, second, {"source": "loop", "step": 1}, {"who": 2})
"""

_CONFIG: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def test_a_put_killed_after_its_journal_commit_is_read_back_by_a_fresh_process(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [python, "-c", _KILLED_AFTER_COMMIT, str(tmp_path)],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    second_id = done.stdout.strip()
    thread = tmp_path / "t"
    assert len(list((thread / "history").iterdir())) == 1  # the second only in the journal
    saver = HandoffSaver(tmp_path)
    newest = saver.get_tuple(_CONFIG)
    assert newest is not None
    assert newest.checkpoint["id"] == second_id
    assert newest.checkpoint["channel_values"] == {"who": "second"}
    assert [t.checkpoint["channel_values"]["who"] for t in saver.list(_CONFIG)] == ["second", "first"]
    assert len(list((thread / "history").iterdir())) == 2  # copied back from the journal line
    # and the next put chains after it, with no generation number reused
    third = create_checkpoint(newest.checkpoint, None, 2)
    saver.put(newest.config, third, {"source": "loop", "step": 2}, {})
    again = HandoffSaver(tmp_path).get_tuple(_CONFIG)
    assert again is not None
    assert again.checkpoint["id"] == third["id"]
    assert again.parent_config is not None
    assert again.parent_config["configurable"]["checkpoint_id"] == second_id


def test_the_saver_takes_either_durability_and_refuses_another(tmp_path: Path) -> None:
    for durability in ("journal", "full"):
        saver = HandoffSaver(tmp_path / durability, durability=durability)
        checkpoint = create_checkpoint(empty_checkpoint(), None, 0)
        saver.put(_CONFIG, checkpoint, {"source": "loop", "step": 0}, {})
        journal = (tmp_path / durability / "t" / "journal.jsonl").read_text()
        assert ('"event":"document"' in journal) == (durability == "journal")
    with pytest.raises(HandoffError, match="durability must be one of 'full', 'journal', not 'fast'"):
        HandoffSaver(tmp_path / "x", durability="fast")  # type: ignore[arg-type]


_FRESH_READ = """
import sys
from handoff_files.format.model import Handoff
from handoff_files.langgraph import HandoffSaver

saver = HandoffSaver(sys.argv[1])
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
found = saver.get_tuple(config)
listed = list(saver.list(config))
print(found.checkpoint["channel_values"]["who"], len(listed), Handoff.__pydantic_complete__)
"""


def test_a_fresh_process_reads_checkpoints_without_building_the_handoff_validator(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # the saver reads a checkpoint's record from its strictly parsed, seal-checked bytes: pydantic's
    # validator for a whole handoff (~5 ms to build in a fresh process) is never built for a read
    saver = HandoffSaver(tmp_path)
    stored = _CONFIG
    for step, who in enumerate(("first", "second")):
        checkpoint = create_checkpoint(empty_checkpoint(), None, step)
        checkpoint["channel_values"], checkpoint["channel_versions"] = {"who": who}, {"who": step + 1}
        stored = saver.put(stored, checkpoint, {"source": "loop", "step": step}, {"who": step + 1})
    done = subprocess.run(
        [python, "-c", _FRESH_READ, str(tmp_path)], env=subprocess_env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["second", "2", "False"]


def _forged(tmp_path: Path, durability: Durability) -> None:
    """One checkpoint put, then its primary and history/ copy edited without their seal."""
    saver = HandoffSaver(tmp_path, durability=durability)
    checkpoint = create_checkpoint(empty_checkpoint(), None, 0)
    checkpoint["channel_values"], checkpoint["channel_versions"] = {"who": "first"}, {"who": 1}
    saver.put(_CONFIG, checkpoint, {"source": "loop", "step": 0}, {"who": 1})
    for name in ("handoff.json", "history/00000001.json"):
        path = tmp_path / "t" / name
        path.write_bytes(path.read_bytes().replace(b'"first"', b'"forged"'))


def test_a_checkpoint_whose_seal_does_not_match_is_refused_as_the_loader_refuses_it(tmp_path: Path) -> None:
    _forged(tmp_path, "full")  # a full put's journal line holds no copy of the checkpoint
    with pytest.raises(HandoffError, match="does not match its seal"):
        HandoffSaver(tmp_path).get_tuple(_CONFIG)


def test_a_copy_that_does_not_match_its_seal_is_written_again_from_the_journal_and_kept(tmp_path: Path) -> None:
    _forged(tmp_path, "journal")  # the journal line, the put's commit point, holds it whole
    with pytest.warns(MendedCheckpointWarning, match=r"00000001\.json did not verify.*kept as history/damaged-"):
        found = HandoffSaver(tmp_path).get_tuple(_CONFIG)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"who": "first"}  # never the forged value
    kept = [path for path in (tmp_path / "t" / "history").iterdir() if path.name.startswith("damaged-")]
    assert len(kept) == 1
    assert b'"forged"' in kept[0].read_bytes()
