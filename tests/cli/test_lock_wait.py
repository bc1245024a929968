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


def test_prune_dry_run_takes_no_lock_and_answers_at_once(
    held: tuple[Path, subprocess.Popen[str]], python: str, subprocess_env: dict[str, str]
) -> None:
    thread, _ = held
    started = time.monotonic()
    done = subprocess.run(
        [python, "-m", "handoff_files", "prune", str(thread), "--keep", "1", "--dry-run"],
        capture_output=True,
        text=True,
        env=subprocess_env,
        timeout=60,
        check=False,
    )
    assert time.monotonic() - started < 20  # not the 30-second wait for the lock (start-up included)
    assert done.returncode == 0, done.stderr
    assert "would keep the newest 1 generation file(s); would remove" in done.stdout
    assert done.stderr == ""


def test_prune_takes_wait_and_names_the_holder_of_the_lock(
    held: tuple[Path, subprocess.Popen[str]], python: str, subprocess_env: dict[str, str]
) -> None:
    thread, holder = held
    started = time.monotonic()
    done = subprocess.run(
        [python, "-m", "handoff_files", "prune", str(thread), "--keep", "1", "--wait", "0"],
        capture_output=True,
        text=True,
        env=subprocess_env,
        timeout=60,
        check=False,
    )
    assert time.monotonic() - started < 20
    assert done.returncode == 1
    assert f"pid {holder.pid} since " in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert len(list((thread / "history").iterdir())) == 1
