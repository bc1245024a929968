"""The command line at a terminal: Ctrl-C is one line and exit 130; a terminal is never read as content."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import time
from pathlib import Path


def test_save_without_a_file_on_a_terminal_refuses_at_once_with_a_hint(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    leader, follower = pty.openpty()  # a real terminal as stdin
    try:
        done = subprocess.run(
            [python, "-m", "handoff_files", "save", str(tmp_path / "t1")],
            stdin=follower,
            env=subprocess_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("handoff: <stdin>: no content file given and stdin is a terminal")
    assert "| handoff save DIR -" in done.stderr
    assert not (tmp_path / "t1").exists()


def test_ctrl_c_while_a_command_waits_is_one_line_and_exit_130(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # `handoff save DIR -` waiting on a pipe that never closes, interrupted as a terminal's Ctrl-C would
    proc = subprocess.Popen(
        [python, "-m", "handoff_files", "save", str(tmp_path / "t1"), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env,
        text=True,
    )
    try:
        time.sleep(1.0)  # past start-up, into the read (an earlier signal is handled the same way)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err == "handoff: interrupted\n"
    assert out == ""
    assert not (tmp_path / "t1" / "handoff.json").exists()


def test_a_reader_that_stops_early_gets_no_traceback(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    from handoff_files import HandoffStore

    store = HandoffStore(tmp_path / "t1")
    for step in range(400):  # a timeline longer than a pipe's buffer (64 KiB), so the writer meets the close
        store.note("hook", f"note {step} " + "x" * 280)
    handoff = subprocess.Popen(
        [python, "-m", "handoff_files", "log", str(tmp_path / "t1")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env,
    )
    assert handoff.stdout is not None
    handoff.stdout.read(10)
    handoff.stdout.close()  # as `| head -c 10` does
    _, err = handoff.communicate(timeout=60)
    assert b"Traceback" not in err
    assert handoff.returncode == 0
