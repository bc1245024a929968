"""Temp names: drawn from a generator of the library's own, never from the caller's seeded ``random``."""

from __future__ import annotations

import random
from pathlib import Path

from handoff_files import HandoffStore


def test_a_save_leaves_the_global_random_sequence_as_it_was(tmp_path: Path) -> None:
    random.seed(1234)
    expected = [random.random() for _ in range(3)]
    random.seed(1234)
    HandoffStore(tmp_path / "thread", agent_id="agent").save({"narrative": "a save writes three temp files"})
    assert [random.random() for _ in range(3)] == expected
