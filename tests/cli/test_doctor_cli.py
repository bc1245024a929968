"""`python -m handoff_files doctor` as a person runs it: repairs that clear, a new thread, a primary file's path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def handoff(*argv: str, stdin: str = "", env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoff_files", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def three_saves(thread: Path, env: dict[str, str]) -> None:
    for i in range(1, 4):
        assert handoff("save", str(thread), stdin=f'{{"narrative": "Step {i}."}}', env=env).returncode == 0


def test_repair_clears_a_truncated_history_copy_and_a_damaged_journal_line(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    b = tmp_path / "b"
    three_saves(b, subprocess_env)
    os.truncate(b / "history" / "00000003.json", 100)
    done = handoff("doctor", "--repair", str(b), env=subprocess_env)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert "LOST" not in done.stdout
    assert "FIXED history/00000003.json" in done.stdout
    assert handoff("doctor", str(b), env=subprocess_env).returncode == 0
    with (b / "journal.jsonl").open("ab") as journal:
        journal.write(b"hello world\n")
    assert handoff("doctor", str(b), env=subprocess_env).returncode == 1
    done = handoff("doctor", "--repair", str(b), env=subprocess_env)
    assert done.returncode == 0, done.stdout
    assert "journal.damaged-" in done.stdout
    done = handoff("doctor", str(b), env=subprocess_env)
    assert done.returncode == 0, done.stdout


def test_a_freshly_initialised_thread_checks_clean(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    c = tmp_path / "c"
    assert handoff("init", str(c), env=subprocess_env).returncode == 0
    done = handoff("doctor", str(c), env=subprocess_env)
    assert done.returncode == 0, done.stdout
    assert "no generations yet" in done.stdout
    assert "BAD" not in done.stdout


def test_doctor_takes_a_threads_primary_file(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    b = tmp_path / "b"
    three_saves(b, subprocess_env)
    done = handoff("doctor", str(b / "handoff.json"), env=subprocess_env)
    assert (done.returncode, done.stderr) == (0, "")
    assert "handoff.json verifies: generation 3" in done.stdout
    refused = handoff("doctor", str(b / "history" / "00000001.json"), env=subprocess_env)
    assert refused.returncode == 1
    assert "not a thread's primary file" in refused.stderr
