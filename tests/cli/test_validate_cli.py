"""``handoff validate`` as a shell runs it: one ``handoff: PATH: REASON`` line per bad path, the rest still checked."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from handoff_files import HandoffStore

CONTENT = {"narrative": "Ported half the importer.", "warnings": [{"text": "dates are local time"}]}


@pytest.fixture
def run_validate(python: str, subprocess_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``python -m handoff_files validate ARGS...`` in a child: the exit code and both streams as a shell sees them."""

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        argv = [python, "-m", "handoff_files", "validate", *map(str, args)]
        return subprocess.run(argv, env=subprocess_env, capture_output=True, text=True, timeout=60, check=False)

    return run


def error_lines(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    assert "Traceback" not in stderr
    assert all(line.startswith("handoff: ") for line in lines), stderr
    return lines


def load_seal(path: Path) -> str:
    seal = json.loads(path.read_text(encoding="utf-8"))["seal"]
    return f"{seal['algorithm']}:{seal['digest']}"


def test_a_thread_whose_primary_links_to_etc_passwd_is_refused_and_not_read(
    tmp_path: Path, run_validate: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "handoff.json").symlink_to("/etc/passwd")
    good = HandoffStore(tmp_path / "good").save(CONTENT).path.parent

    done = run_validate(evil, good)

    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert line.startswith(f"handoff: {evil / 'handoff.json'}: ")
    assert "symbolic link" in line
    assert "expected a mapping" not in line  # /etc/passwd was never parsed
    assert done.stdout.startswith(f"ok {good} (generation 1, ")


def test_every_unreadable_path_gets_its_own_line_and_validate_goes_on(
    tmp_path: Path, run_validate: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    too_long = tmp_path / ("x" * 300) / "handoff.json"  # ENAMETOOLONG: unreadable even to root
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    directory = tmp_path / "t9" / "handoff.json"  # a thread whose primary is a directory
    directory.mkdir(parents=True)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    good = HandoffStore(tmp_path / "good").save(CONTENT).path

    done = run_validate(too_long, fifo, directory.parent, loop, good)

    assert done.returncode == 1
    lines = error_lines(done.stderr)
    assert len(lines) == 4, done.stderr
    for line, path in zip(lines, (too_long, fifo, directory, loop), strict=True):
        assert line.startswith(f"handoff: {path}: ")
    assert "name too long" in lines[0]
    assert "not a regular file" in lines[1]
    assert "a folder, not a file" in lines[2]
    assert "symbolic links" in lines[3]
    assert done.stdout == f"ok {good} (generation 1, {load_seal(good)})\n"


def test_error_lines_read_handoff_then_the_path_then_the_reason_and_exit_0_only_when_all_pass(
    tmp_path: Path, run_validate: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    good = HandoffStore(tmp_path / "good").save(CONTENT).path
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "2.0", "a": 1, "a": 2}', encoding="utf-8")
    missing = tmp_path / "missing.json"

    done = run_validate(good, bad, missing)

    assert done.returncode == 1
    first, second = error_lines(done.stderr)
    assert first.startswith(f"handoff: {bad}: ")
    assert "duplicate key" in first
    assert second == f"handoff: {missing}: no such file"
    ok = run_validate(good, good.parent)
    assert (ok.returncode, ok.stderr) == (0, "")
    assert ok.stdout.count("ok ") == 2


def test_json_entries_have_one_shape_with_a_stable_error_kind(
    tmp_path: Path, run_validate: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    good = HandoffStore(tmp_path / "good").save(CONTENT).path
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "2.0", "a": 1, "a": 2}', encoding="utf-8")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "handoff.json").symlink_to(good)

    done = run_validate("--json", good, bad, tmp_path / "missing.json", linked)

    assert done.returncode == 1
    entries = json.loads(done.stdout)
    assert [list(entry) for entry in entries] == [["path", "ok", "generation", "seal", "kind", "error"]] * 4
    assert entries[0] == {
        "path": str(good),
        "ok": True,
        "generation": 1,
        "seal": load_seal(good),
        "kind": None,
        "error": None,
    }
    assert [e["kind"] for e in entries[1:]] == ["HandoffParseError", "HandoffNotFoundError", "HandoffError"]
    assert [(e["ok"], e["generation"], e["seal"]) for e in entries[1:]] == [(False, None, None)] * 3
    assert "duplicate key" in entries[1]["error"]
    assert entries[3]["path"] == str(linked)
    assert "symbolic link" in entries[3]["error"]
    assert len(error_lines(done.stderr)) == 3  # the lines on stderr stay, as without --json
