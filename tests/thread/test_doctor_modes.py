"""doctor and init change modes only of what the library wrote: a project's own files and the folder
it already had keep theirs, and are reported; init on an existing folder says what it left alone.

Real files with real modes (``os.stat`` before and after), through the library and through the
installed ``handoff`` script as a person runs it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.thread.doctor import Finding, examine, failed

#: The ``handoff`` script installed beside the interpreter running the tests (the venv's).
HANDOFF = Path(sys.executable).with_name("handoff")


def handoff(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the installed script as a shell runs it; never raises on a failing exit code."""
    if not HANDOFF.is_file():
        pytest.skip(f"no installed handoff script beside {sys.executable}")
    return subprocess.run([str(HANDOFF), *map(str, argv)], capture_output=True, text=True, check=False, timeout=60)


def modes(root: Path) -> dict[str, int]:
    """Every entry under *root* (itself included) by its path inside it, with its full ``st_mode``."""
    found = {".": root.lstat().st_mode}
    for path in sorted(root.rglob("*")):
        found[str(path.relative_to(root))] = path.lstat().st_mode
    return found


def project(tmp_path: Path) -> Path:
    """An existing project folder, as a person's umask 022 leaves it: 0755 folders, 0755 and 0644 files."""
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "a.py").write_text("print('hi')\n")
    (proj / "README.md").write_text("# proj\n")
    wanted = {proj: 0o755, proj / "src": 0o755, proj / "src" / "a.py": 0o755, proj / "README.md": 0o644}
    for path, mode in wanted.items():
        path.chmod(mode)
    return proj


def by_level(findings: list[Finding]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f.level, []).append(f"{f.what} — {f.advice}")
    return out


# -- doctor --------------------------------------------------------------------------------------


def test_repair_narrows_only_the_threads_own_files_and_leaves_the_rest_as_it_was(tmp_path: Path) -> None:
    proj = project(tmp_path)
    foreign = modes(proj)
    store = HandoffStore(proj)
    store.save({"narrative": "One step done."})
    # the thread's own files, widened by hand: these the doctor narrows
    store.mirror_path.chmod(0o644)
    store.history_dir.chmod(0o755)
    (store.history_dir / "00000001.json").chmod(0o644)
    # a person's copy kept in history/: not the library's, so never touched
    (store.history_dir / "my-notes.txt").write_text("mine\n")
    (store.history_dir / "my-notes.txt").chmod(0o644)
    foreign["history/my-notes.txt"] = (store.history_dir / "my-notes.txt").lstat().st_mode

    found = by_level(examine(HandoffStore(proj)))
    assert not any("src" in line or "README" in line for line in found.get("warning", [])), found

    findings = examine(HandoffStore(proj), repair=True)
    assert not failed(findings), by_level(findings)
    after = modes(proj)
    assert {name: after[name] for name in foreign} == foreign  # the folder, src/, a.py, README.md, my-notes.txt
    assert stat.S_IMODE(after["state.json"]) == 0o600
    assert stat.S_IMODE(after["history"]) == 0o700
    assert stat.S_IMODE(after["history/00000001.json"]) == 0o600
    text = " ".join(f"{f.what} {f.advice}" for f in findings)
    assert "src" in text  # reported, never touched
    assert "my-notes.txt" in text
    # the folder itself was not made by the library: reported with the chmod that would narrow it
    [folder] = [f for f in findings if f.level == "warning" and str(proj) in f.what]
    assert "755" in folder.what
    assert f"chmod 700 {proj}" in folder.advice


def test_repair_never_follows_into_a_subfolder_the_library_did_not_make(tmp_path: Path) -> None:
    """The reported case: init on a 0755 project, then doctor --repair, turned src/a.py 755 -> 600."""
    proj = project(tmp_path)
    before = modes(proj)
    assert handoff("init", proj).returncode == 0
    done = handoff("doctor", proj, "--repair")
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    after = modes(proj)
    assert {name: after[name] for name in before} == before
    assert "FIXED" not in done.stdout
    assert "src" in done.stdout


# -- init ----------------------------------------------------------------------------------------


def test_init_makes_a_new_folder_0700(tmp_path: Path) -> None:
    ready = HandoffStore(tmp_path / "fresh").init()
    assert ready.created
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o700
    assert ready.note == ""


def test_init_on_an_existing_folder_leaves_its_mode_and_says_so(tmp_path: Path) -> None:
    proj = project(tmp_path)
    before = modes(proj)
    ready = HandoffStore(proj).init()
    assert not ready.created
    assert ready.mode == 0o755
    after = modes(proj)
    assert {name: after[name] for name in before} == before
    assert stat.S_IMODE(after["history"]) == 0o700  # what init made is private
    assert "0755" in ready.note
    assert f"chmod 700 {proj}" in ready.note
    assert "README.md" in ready.note
    assert "src" in ready.note


def test_the_init_command_says_the_existing_folder_kept_its_mode(tmp_path: Path) -> None:
    proj = project(tmp_path)
    done = handoff("init", proj)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert stat.S_IMODE(proj.stat().st_mode) == 0o755
    assert f"thread ready at {proj}" in done.stdout
    assert "0755" in done.stdout
    assert f"chmod 700 {proj}" in done.stdout
    fresh = handoff("init", tmp_path / "fresh")
    assert fresh.stdout == f"thread ready at {tmp_path / 'fresh'}\n"
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o700


def test_init_of_an_existing_private_empty_folder_has_nothing_to_say(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    ready = HandoffStore(folder).init()
    assert (ready.created, ready.mode, ready.note) == (False, 0o700, "")


@pytest.mark.parametrize("mode", [pytest.param(0o711, id="0711"), pytest.param(0o750, id="0750")])
def test_init_never_narrows_or_widens_an_existing_folder(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    folder.chmod(mode)
    HandoffStore(folder).init()
    assert stat.S_IMODE(folder.stat().st_mode) == mode
    assert not failed(examine(HandoffStore(folder), repair=True))
    assert stat.S_IMODE(folder.stat().st_mode) == mode


def test_doctor_on_a_thread_it_made_has_nothing_to_report_about_modes(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "One step done."})
    findings = examine(store)
    assert set(by_level(findings)) == {"ok"}, by_level(findings)
    [line] = [f.what for f in findings if f.kind == "modes"]
    assert "0600" in line
    assert os.listdir(tmp_path / "t")  # sanity: the thread is there
