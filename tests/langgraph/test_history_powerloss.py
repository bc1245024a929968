"""After a power loss, a fresh saver reads every checkpoint acknowledged before it, from the journal if need be.

A journal-first ``put`` flushes its journal line (the commit point) and writes the checkpoint's
``history/`` file unflushed. In the disk model (:mod:`bench.torture.powerloss`) a power loss can
leave such files empty or torn; the saver passed them over with a warning, so ``list`` lost
acknowledged checkpoints (55 of 128 crash states). It now writes them again from the journal, once
per process, at the first read that meets one.
"""

from __future__ import annotations

import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from bench.torture.oslayer import Recorder
from bench.torture.powerloss import Disk, crash_states
from handoff_files.foundation.errors import HandoffError
from handoff_files.langgraph import HandoffSaver
from handoff_files.langgraph.store import Namespace

_THREAD: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
_STATES = 120


def _missing(tmp_path: Path) -> tuple[int, list[str]]:
    """Trace eight puts; in each crash state after the last, what a fresh saver does not read back."""
    root = tmp_path / "graphs"
    saver = HandoffSaver(root)
    checkpoint, config = empty_checkpoint(), _THREAD

    def put(step: int) -> str:
        nonlocal checkpoint, config
        checkpoint = create_checkpoint(checkpoint, None, step)
        checkpoint["channel_values"] = {"n": step}
        checkpoint["channel_versions"] = {"n": step + 1}
        config = saver.put(config, checkpoint, {"step": step}, {"n": step + 1})
        return str(config["configurable"]["checkpoint_id"])

    put(0)
    durable = Disk.snapshot(root)
    recorder = Recorder(root, durable.names, {inode: len(data) for inode, data in durable.data.items()}, broken=None)
    with recorder:
        acknowledged = {put(step): step for step in range(1, 9)}
    checked, missing = 0, []
    for state in crash_states(recorder.ops, durable, random.Random(3), limit=_STATES, start=len(recorder.ops)):
        where = tmp_path / f"state-{checked}"
        state.disk.materialise(where)
        fresh = HandoffSaver(where)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a copy passed over is said in a warning: counted below
                listed = {item.config["configurable"]["checkpoint_id"] for item in fresh.list(_THREAD)}
                newest = fresh.get_tuple(_THREAD)
        except HandoffError as exc:
            missing.append(f"state {checked}: the thread does not read: {exc}")
        else:
            missing += [
                f"state {checked}: step {step} is not listed" for cid, step in acknowledged.items() if cid not in listed
            ]
            if newest is None or newest.checkpoint["channel_values"] != {"n": 8}:
                missing.append(f"state {checked}: the newest read is not step 8")
        shutil.rmtree(where)
        checked += 1
    return checked, missing


def test_every_acknowledged_checkpoint_is_read_after_a_power_loss(tmp_path: Path) -> None:
    checked, missing = _missing(tmp_path)
    assert checked >= 60
    assert missing == []


def test_the_model_catches_a_saver_that_does_not_mend_from_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Namespace, "_mend_from_journal", lambda self: False)
    _, missing = _missing(tmp_path)
    assert missing, "without the journal's copies, a crash state loses acknowledged checkpoints"
