"""Where output goes: an unwritable stdout is one line and exit 1; ``-o PATH`` writes into what PATH names."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from tests.cli.shell import handoff

CONTENT = {"narrative": "Ported half the importer.", "context": {"conversation_history": [], "tool_state": {"k": 1}}}
FULL = Path("/dev/full")

needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")


@pytest.fixture
def thread(tmp_path: Path) -> Path:
    """A thread with a context block, so export-context has something to write."""
    HandoffStore(tmp_path / "t1").save(CONTENT)
    return tmp_path / "t1"


def _to_full(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI with its stdout on /dev/full (every write fails with ENOSPC), as `… > /dev/full` does."""
    with FULL.open("w") as full:
        return subprocess.run(
            [sys.executable, "-m", "handoff_files", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            check=False,
            timeout=60,
        )


@needs_dev_full
@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["show"], id="show"),
        pytest.param(["show", "--json"], id="show-json"),
        pytest.param(["history"], id="history"),
        pytest.param(["log"], id="log"),
    ],
)
def test_a_stdout_that_cannot_be_written_is_one_line_and_exit_1(
    thread: Path, subprocess_env: dict[str, str], argv: list[str]
) -> None:
    done = _to_full([argv[0], str(thread), *argv[1:]], subprocess_env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("handoff: <stdout>: cannot write the output: ")
    assert "No space left on device" in done.stderr


@needs_dev_full
def test_a_failed_command_with_json_on_an_unwritable_stdout_still_says_why_in_one_line(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = _to_full(["show", str(tmp_path / "nowhere"), "--json"], subprocess_env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
    assert "no such file or thread directory" in done.stderr.splitlines()[0]


def test_a_closed_pipe_is_still_a_quiet_exit_0(thread: Path, subprocess_env: dict[str, str]) -> None:
    reader = subprocess.Popen(
        [sys.executable, "-m", "handoff_files", "show", str(thread)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env,
    )
    assert reader.stdout is not None
    reader.stdout.close()  # the reader is gone before anything is written
    assert reader.wait(timeout=60) == 0
    assert reader.stderr is not None
    with reader.stderr:
        assert reader.stderr.read() == b""


# -- -o PATH: export-context and export --------------------------------------------------------


def _export_context(thread: Path, output: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return handoff("export-context", "--to", "sw4rm", thread, "-o", output, env=env)


def _export(thread: Path, output: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return handoff("export", thread, "--blobs", thread.parent / "blobs", "-o", output, env=env)


EXPORTS = [pytest.param(_export_context, id="export-context"), pytest.param(_export, id="export")]


@pytest.mark.parametrize("run", EXPORTS)
def test_o_through_a_symlink_writes_its_target_and_keeps_the_link(
    thread: Path, subprocess_env: dict[str, str], run: object
) -> None:
    target = thread.parent / "real.json"
    target.write_text("old", encoding="utf-8")
    link = thread.parent / "link.json"
    link.symlink_to(target)
    done = run(thread, link, subprocess_env)  # type: ignore[operator]
    assert done.returncode == 0, done.stderr
    assert link.is_symlink(), "the link the user named is still a link"
    assert link.readlink() == target
    assert target.read_text(encoding="utf-8") not in ("", "old")


@pytest.mark.parametrize("run", EXPORTS)
def test_o_on_a_hard_linked_file_is_refused_and_leaves_both_names_as_they_were(
    thread: Path, subprocess_env: dict[str, str], run: object
) -> None:
    first = thread.parent / "out.json"
    first.write_text("kept", encoding="utf-8")
    second = thread.parent / "other-name.json"
    os.link(first, second)
    done = run(thread, first, subprocess_env)  # type: ignore[operator]
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"handoff: {first}: has 2 hard links" in done.stderr
    assert f"> {first}" in done.stderr, "it says how to write into it in place"
    assert first.read_text(encoding="utf-8") == second.read_text(encoding="utf-8") == "kept"
    assert first.stat().st_ino == second.stat().st_ino


@pytest.fixture
def full(tmp_path: Path) -> Path:
    """A private /dev/full (the same device, 1:7): a command that wrongly replaced it must not replace the system's."""
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except OSError as exc:  # not root, or a container without CAP_MKNOD: never try the system's /dev/full
        pytest.skip(f"cannot make a device node: {exc.strerror}")
    return node


@pytest.mark.parametrize("run", EXPORTS)
def test_o_on_dev_full_fails_in_one_line_and_leaves_the_device_a_device(
    thread: Path, subprocess_env: dict[str, str], run: object, full: Path
) -> None:
    done = run(thread, full, subprocess_env)  # type: ignore[operator]
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"handoff: {full}: " in done.stderr
    assert "No space left on device" in done.stderr
    assert stat.S_ISCHR(full.lstat().st_mode), "never turned into a regular file"


def test_o_on_a_fifo_writes_into_it(thread: Path, subprocess_env: dict[str, str]) -> None:
    fifo = thread.parent / "pipe"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = _export_context(thread, fifo, subprocess_env)
    if not read and stat.S_ISFIFO(fifo.lstat().st_mode):  # nothing came: let the reader go
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(timeout=10)
    assert done.returncode == 0, done.stderr
    assert read[0].startswith(b'{"conversation_history"')
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_o_on_a_directory_is_refused(thread: Path, subprocess_env: dict[str, str]) -> None:
    done = _export_context(thread, thread.parent, subprocess_env)
    assert done.returncode == 1
    assert "is a directory" in done.stderr, done.stderr


def test_o_replacing_a_file_keeps_its_mode(thread: Path, subprocess_env: dict[str, str]) -> None:
    out = thread.parent / "out.bin"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o644)
    done = _export_context(thread, out, subprocess_env)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b'{"conversation_history"')
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    fresh = thread.parent / "fresh.bin"
    assert _export_context(thread, fresh, subprocess_env).returncode == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600, "a new file is private, as every file handoff writes"


@needs_dev_full
@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--help"], id="help"),
        pytest.param(["show", "--help"], id="command-help"),
        pytest.param(["--version"], id="version"),
    ],
)
def test_help_to_a_stdout_that_cannot_be_written_is_one_line_and_exit_1(
    subprocess_env: dict[str, str], argv: list[str]
) -> None:
    done = _to_full(argv, subprocess_env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
    assert "cannot write the output" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
