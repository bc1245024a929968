"""A bad seal in a copy only the library writes (``history/``, a journal line) is damage, always: never a person's edit.

The copies are given the file times a copy or a fresh clone gives them (long after their sealing):
what the library calls damage must not depend on them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

import pytest

from handoff_files import ChecksumMismatchError, HandoffStore
from handoff_files.thread.history import list_history, load_generation
from tests.cli.shell import handoff

LATER: Final = 3600.0  # an hour after the sealing: a copy, a clone, a restore from backup


def _flip_in_place(path: Path, marker: bytes) -> None:
    """One bit of *path* flipped inside *marker*, then its times set to an hour on (as a copy leaves them)."""
    data = bytearray(path.read_bytes())
    at = data.index(marker) + 2
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    moment = path.stat().st_mtime + LATER
    os.utime(path, (moment, moment))


@pytest.fixture
def six_saves(thread_dir: Path) -> HandoffStore:
    """A thread of six generations whose history/00000005.json has one bit flipped, an hour later."""
    store = HandoffStore(thread_dir)
    for i in range(1, 7):
        store.save({"narrative": f"Step {i} of the port is done."})
    _flip_in_place(store.history_dir / "00000005.json", b"Step 5")
    return store


def test_a_flipped_bit_in_history_is_corrupt_not_an_edit(six_saves: HandoffStore) -> None:
    with pytest.raises(ChecksumMismatchError) as caught:
        load_generation(six_saves.layout, 5)
    assert "edited" not in caught.value.reason.replace("not edited", "")
    assert "handoff seal" not in caught.value.reason
    entry = next(e for e in list_history(six_saves.layout, six_saves.primary) if e.generation == 5)
    assert entry.problem is not None
    assert "corrupt" in entry.problem
    assert "handoff seal" not in entry.problem


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["history"], id="history"),
        pytest.param(["doctor"], id="doctor"),
        pytest.param(["show", "--generation", "5"], id="show-generation"),
    ],
)
def test_no_command_calls_a_damaged_history_copy_an_edit_or_advises_seal(
    six_saves: HandoffStore, subprocess_env: dict[str, str], argv: list[str]
) -> None:
    done = handoff(*argv[:1], six_saves.path, *argv[1:], env=subprocess_env)
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    assert "00000005" in said or "generation 5" in said, said
    assert "edited after sealing" not in said
    assert "`handoff seal` accepts" not in said


def test_show_generation_of_a_damaged_history_copy_is_a_checksum_mismatch(
    six_saves: HandoffStore, subprocess_env: dict[str, str]
) -> None:
    done = handoff("show", six_saves.path, "--generation", "5", "--json", env=subprocess_env)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["kind"] == "ChecksumMismatchError"


def test_a_history_copy_whose_seal_was_removed_is_corrupt(thread_dir: Path) -> None:
    """The store seals every copy it writes: one without a seal was damaged, not written by hand."""
    store = HandoffStore(thread_dir)
    store.save({"narrative": "One."})
    store.save({"narrative": "Two."})
    copy = store.history_dir / "00000001.json"
    document = json.loads(copy.read_bytes())
    del document["seal"]
    copy.write_text(json.dumps(document, indent=2), encoding="utf-8")
    with pytest.raises(ChecksumMismatchError):
        load_generation(store.layout, 1)
