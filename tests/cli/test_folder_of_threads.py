"""A folder of threads named where a thread is expected: show, doctor and validate say so and name one to try."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from tests.writer_child import content


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "handoff_files", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "threads"
    for name in ("alpha", "beta"):
        HandoffStore(folder / name).save(content(name, 1, 0))
    return folder


@pytest.mark.parametrize("command", ["show", "doctor", "validate"])
def test_a_folder_of_threads_is_named_as_one_and_a_thread_in_it_is_suggested(root: Path, command: str) -> None:
    done = _cli(command, root)
    assert done.returncode == 1, (done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert "a folder of threads (alpha, beta), not a thread: name one" in said
    assert str(root / "alpha") in said
    assert "Traceback" not in said


def test_an_empty_new_folder_is_still_a_fresh_thread_to_the_doctor(tmp_path: Path) -> None:
    (tmp_path / "new").mkdir()
    done = _cli("doctor", tmp_path / "new")
    assert done.returncode == 0, done.stdout
    assert "no generations yet" in done.stdout
