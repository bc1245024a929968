"""doctor --repair on a thread the disk will not let it write: it says it could not write, and why;
it never says a generation is lost when only the write failed, and it changes nothing.

The tests run as root, whom modes do not stop: the folder is made immutable (``chattr +i``), which
the kernel refuses to root too (EPERM on every create, rename, link and unlink in it). Where
``chattr`` is missing or not allowed (no CAP_LINUX_IMMUTABLE, a file system without the flag) the
tests skip: a monkeypatched failure would test the doctor's wording, not a real refusal.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.thread.doctor import Finding, examine, failed

HANDOFF = Path(sys.executable).with_name("handoff")

Freeze = Callable[..., None]


@pytest.fixture
def freeze(tmp_path: Path) -> Iterator[Freeze]:
    """``freeze(path, …, recursive=False)`` makes paths immutable; every flag is cleared at teardown,
    so pytest can remove tmp_path."""
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("chattr is not installed here")
    probe = tmp_path / "probe"
    probe.mkdir()
    if subprocess.run([chattr, "+i", str(probe)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not allowed here (not root, or the file system has no immutable flag)")
    subprocess.run([chattr, "-i", str(probe)], check=True)
    probe.rmdir()

    def make(*paths: Path, recursive: bool = False) -> None:
        subprocess.run([chattr, *(["-R"] if recursive else []), "+i", *map(str, paths)], check=True)

    try:
        yield make
    finally:
        subprocess.run([chattr, "-R", "-i", str(tmp_path)], capture_output=True, check=False)


def handoff(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    if not HANDOFF.is_file():
        pytest.skip(f"no installed handoff script beside {sys.executable}")
    return subprocess.run([str(HANDOFF), *map(str, argv)], capture_output=True, text=True, check=False, timeout=60)


def broken(thread_dir: Path) -> HandoffStore:
    """Two generations, then a primary that no longer verifies: a repair rewrites it from history/."""
    store = HandoffStore(thread_dir)
    store.save({"narrative": "Step 1 done."})
    store.save({"narrative": "Step 2 done."})
    store.primary.write_bytes(b"junk\n")
    return store


def snapshot(thread_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(thread_dir)): p.read_bytes() for p in sorted(thread_dir.rglob("*")) if p.is_file()}


def by_level(findings: list[Finding]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f.level, []).append(f"{f.what} — {f.advice}")
    return out


def test_a_repair_the_folder_refuses_says_it_could_not_write_not_that_data_is_lost(
    thread_dir: Path, freeze: Freeze
) -> None:
    store = broken(thread_dir)
    temp = thread_dir / ".handoff.json.abcdefgh.tmp"  # a dead writer's temp file: its removal is refused too
    temp.write_bytes(b"partial")
    freeze(thread_dir, store.history_dir)
    before = snapshot(thread_dir)
    findings = examine(HandoffStore(thread_dir), repair=True)
    found = by_level(findings)
    assert failed(findings)
    assert "unrepaired" not in found, found  # nothing is lost: history/00000002.json holds generation 2
    [primary] = [f for f in findings if f.kind == "primary"]
    assert primary.level == "unwritten"
    assert "Operation not permitted" in primary.advice
    assert "history/00000002.json" in primary.advice
    [temps] = [f for f in findings if f.kind == "temps"]
    assert (temps.level, "Operation not permitted" in temps.advice) == ("unwritten", True)
    assert snapshot(thread_dir) == before  # nothing changed


def test_the_command_says_fail_with_the_reason_and_never_lost(thread_dir: Path, freeze: Freeze) -> None:
    store = broken(thread_dir)
    freeze(thread_dir, store.history_dir)
    done = handoff("doctor", thread_dir, "--repair")
    assert (done.returncode, done.stderr) == (1, ""), done.stdout
    assert "LOST" not in done.stdout
    assert "FAIL  handoff.json does not verify" in done.stdout
    assert "Operation not permitted" in done.stdout


def test_a_thread_whose_lock_cannot_be_opened_is_still_checked_and_nothing_is_called_lost(
    thread_dir: Path, freeze: Freeze
) -> None:
    """Every file immutable, .lock too (a read-only mount's case): the checks run read-only."""
    store = broken(thread_dir)
    store.mirror_path.chmod(0o644)
    freeze(thread_dir, recursive=True)
    before = snapshot(thread_dir)
    findings = examine(HandoffStore(thread_dir), repair=True)
    found = by_level(findings)
    assert failed(findings)
    assert "unrepaired" not in found, found
    assert findings[0].kind == "lock"
    assert findings[0].level == "unwritten"
    assert "Operation not permitted" in findings[0].what
    [primary] = [f for f in findings if f.kind == "primary"]
    assert (primary.level, "Operation not permitted" in primary.advice) == ("unwritten", True)
    assert any(f.level == "unwritten" and "mode 644" in f.what for f in findings), found
    assert any(f.level == "ok" and "history/ holds 2 verified" in f.what for f in findings), found
    assert snapshot(thread_dir) == before
    done = handoff("doctor", thread_dir, "--repair")
    assert (done.returncode, done.stderr) == (1, ""), done.stdout
    assert "LOST" not in done.stdout
    assert "Traceback" not in done.stdout


def test_a_mode_the_file_system_will_not_narrow_is_said_not_raised(thread_dir: Path, freeze: Freeze) -> None:
    store = HandoffStore(thread_dir)
    store.save({"narrative": "Step 1 done."})
    store.mirror_path.chmod(0o644)
    freeze(store.mirror_path)
    findings = examine(HandoffStore(thread_dir), repair=True)
    [mode] = [f for f in findings if "mode 644" in f.what]
    assert mode.level == "unwritten"
    assert "could not narrow it: Operation not permitted" in mode.advice


def test_a_repair_made_but_not_journaled_stands_and_says_so(thread_dir: Path, freeze: Freeze) -> None:
    store = broken(thread_dir)
    freeze(store.journal.path)
    findings = examine(HandoffStore(thread_dir), repair=True)
    [primary] = [f for f in findings if f.kind == "primary"]
    assert primary.level == "repaired"
    assert "not noted in the journal" in primary.advice
    assert "Operation not permitted" in primary.advice
    assert HandoffStore(thread_dir).restore().generation == 2
