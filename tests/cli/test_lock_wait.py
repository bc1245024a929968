"""A held writers' lock: the command says at once who holds it, shows it waits, and --wait bounds the wait."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from tests.cli.test_cli import CONTENT

_HOLD = """
import sys
from pathlib import Path
from handoff_files.foundation.lock import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("LOCKED", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def held(tmp_path: Path, python: str, subprocess_env: dict[str, str]) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A thread whose writers' lock another process holds until its stdin gets a line."""
    thread = tmp_path / "t1"
    HandoffStore(thread).save(CONTENT)
    holder = subprocess.Popen(
        [python, "-c", _HOLD, str(thread)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=subprocess_env, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "LOCKED\n"
    try:
        yield thread, holder
    finally:
        holder.kill()
        holder.communicate()


def _save(thread: Path, python: str, env: dict[str, str], *options: str) -> subprocess.Popen[str]:
    layers = thread.parent / "c.json"
    layers.write_text(json.dumps(CONTENT), encoding="utf-8")
    command = [python, "-m", "handoff_files", "save", str(thread), str(layers), *options]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def test_wait_0_fails_at_once_naming_the_holder(
    held: tuple[Path, subprocess.Popen[str]], python: str, subprocess_env: dict[str, str]
) -> None:
    thread, holder = held
    started = time.monotonic()
    out, err = _save(thread, python, subprocess_env, "--wait", "0").communicate(timeout=60)
    assert time.monotonic() - started < 20  # no 30-second wait (start-up included)
    assert f"pid {holder.pid} since " in err
    assert err.count("\n") == 1
    assert out == ""


def test_a_waiting_save_says_who_holds_the_lock_then_saves_once_it_is_free(
    held: tuple[Path, subprocess.Popen[str]], python: str, subprocess_env: dict[str, str]
) -> None:
    thread, holder = held
    save = _save(thread, python, subprocess_env, "--wait", "60")
    assert save.stderr is not None
    first = save.stderr.readline()
    assert first.startswith(f"handoff: waiting for the writers' lock of {thread}, held by pid {holder.pid} since ")
    assert holder.stdin is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()
    out, _ = save.communicate(timeout=60)
    assert save.returncode == 0
    assert out.startswith("saved generation 2")


def test_wait_refuses_what_is_not_a_number_of_seconds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from handoff_files.cli.main import main

    for bad in ("nan", "-1", "soon"):
        with pytest.raises(SystemExit) as usage:
            main(["save", str(tmp_path / "t1"), "--wait", bad])
        assert usage.value.code == 2
        assert "argument --wait" in capsys.readouterr().err
