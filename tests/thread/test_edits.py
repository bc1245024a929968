"""Edit or corruption, told exactly: state.json records the primary as its writer left it (size, mtime)."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from handoff_files import ChecksumMismatchError, HandoffStore, HandoffValidationError, load

LAYERS = {"narrative": "first.", "priorities": [{"task": "go on", "urgency": "first"}]}


def _saved(thread_dir: Path) -> HandoffStore:
    store = HandoffStore(thread_dir, format="yaml")
    store.save(LAYERS)
    return store


def _edit_at_once(primary: Path, old: bytes, new: bytes) -> None:
    """A person's edit within the same second as the save, as `sed -i` makes it (a new file)."""
    data = primary.read_bytes()
    assert old in data
    temp = primary.with_name("sed-temp")
    temp.write_bytes(data.replace(old, new))
    os.replace(temp, primary)


def _rot(primary: Path, old: bytes, new: bytes) -> None:
    """Bit rot: bytes changed in place, size and mtime as the writer left them."""
    st = primary.stat()
    data = primary.read_bytes()
    assert len(old) == len(new)
    with primary.open("r+b") as handle:
        handle.write(data.replace(old, new))
    os.utime(primary, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_an_edit_right_after_a_save_is_an_edit_and_seal_accepts_it(thread_dir: Path) -> None:
    store = _saved(thread_dir)
    _edit_at_once(store.primary, b"narrative: first.", b"narrative: quick edit.")
    restored = HandoffStore(thread_dir).restore()
    assert any("edited after sealing" in problem for problem in restored.problems), restored.problems
    receipt = HandoffStore(thread_dir).seal()
    assert receipt.generation == 2
    assert load(store.primary).narrative == "quick edit."


def test_bytes_changed_in_place_read_as_corrupt_until_a_person_accepts_them(thread_dir: Path) -> None:
    store = _saved(thread_dir)
    _rot(store.primary, b"first.", b"First.")
    restored = HandoffStore(thread_dir).restore()
    assert restored.source == "history"
    assert any("corrupt" in problem for problem in restored.problems), restored.problems
    with pytest.raises(ChecksumMismatchError, match="shows the change and asks"):
        HandoffStore(thread_dir).seal()
    assert HandoffStore(thread_dir).seal(accept_corrupt=True).generation == 2
    assert load(store.primary).narrative == "First."


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        (b"generation: 1\n", b"generation: 99\n", "no sealed generation 99 exists"),
        (b"agent_id: thread-1\n", b"agent_id: someone\n", "changed agent_id"),
    ],
)
def test_an_edit_of_the_envelope_is_refused_and_nothing_is_written(
    thread_dir: Path, old: bytes, new: bytes, what: str
) -> None:
    store = _saved(thread_dir)
    _edit_at_once(store.primary, old, new)
    before = sorted(path.name for path in (thread_dir / "history").iterdir())
    with pytest.raises(HandoffValidationError, match=what):
        HandoffStore(thread_dir).seal()
    assert sorted(path.name for path in (thread_dir / "history").iterdir()) == before


def _seal(
    thread: Path, python: str, env: dict[str, str], *options: str, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "handoff_files", "seal", str(thread), *options],
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_handoff_seal_shows_the_change_then_wants_yes_for_what_reads_as_corrupt(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    store = _saved(thread_dir)
    _rot(store.primary, b"first.", b"First.")
    refused = _seal(thread_dir, python, subprocess_env)
    assert refused.returncode == 1
    assert '-  "narrative": "first.",' in refused.stderr
    assert '+  "narrative": "First.",' in refused.stderr
    assert "`handoff seal --yes` seals it" in refused.stderr.splitlines()[-1]
    assert "Traceback" not in refused.stderr
    accepted = _seal(thread_dir, python, subprocess_env, "--yes")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.startswith("sealed generation 2")


def test_handoff_seal_asks_a_person_at_a_terminal(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    store = _saved(thread_dir)
    _rot(store.primary, b"first.", b"First.")
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"y\n")  # the person's answer, waiting in the terminal
        done = _seal(thread_dir, python, subprocess_env, stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0, done.stderr
    assert "as the next generation? [y/N]" in done.stderr
    assert load(store.primary).narrative == "First."
