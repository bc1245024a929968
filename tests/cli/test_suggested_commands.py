"""Every command the tool suggests can be pasted as printed: paths with spaces are quoted for a shell.

Each test runs the CLI as a person's shell does (``python -m handoff_files``, this checkout) on a
folder whose name holds a space, and looks for the suggested command with its path quoted.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Final

import pytest

from tests.cli.shell import handoff

CONTENT: Final = {
    "narrative": "Ported half the importer. The date bug is understood.",
    "state": {"active_tasks": ["port the importer"]},
    "priorities": [{"task": "port the rest", "urgency": "first"}],
}


@pytest.fixture
def spaced_thread(tmp_path: Path, subprocess_env: dict[str, str]) -> Path:
    """A thread in ``my threads/x y`` (a space in both names), saved once with ``--thread-id xy``."""
    content = tmp_path / "c.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    thread = tmp_path / "my threads" / "x y"
    done = handoff("save", thread, content, "--thread-id", "xy", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    return thread


def test_init_on_a_wide_folder_suggests_a_chmod_with_the_path_quoted(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    folder = tmp_path / "my threads" / "x y"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    done = handoff("init", folder, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert f"`chmod 700 {shlex.quote(str(folder))}`" in done.stdout + done.stderr


def test_doctor_on_a_wide_folder_suggests_a_chmod_with_the_path_quoted(
    spaced_thread: Path, subprocess_env: dict[str, str]
) -> None:
    spaced_thread.chmod(0o755)
    done = handoff("doctor", spaced_thread, env=subprocess_env)
    assert f"`chmod 700 {shlex.quote(str(spaced_thread))}`" in done.stdout + done.stderr, done.stdout


def test_brief_tells_the_model_commands_with_the_path_quoted(
    spaced_thread: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("brief", spaced_thread, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    where = shlex.quote(str(spaced_thread))
    code = re.search(rf"`handoff acknowledge {re.escape(where)} (\S+)`", done.stdout)
    assert code is not None, done.stdout
    assert f"`handoff save {where} FILE`" in done.stdout
    # pasted as printed, the command acknowledges the briefing
    pasted = shlex.split(f"handoff acknowledge {where} {code.group(1)}")
    assert handoff(*pasted[1:], env=subprocess_env).returncode == 0


def test_a_wrong_code_names_the_brief_command_with_the_path_quoted(
    spaced_thread: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("acknowledge", spaced_thread, "AAAA-AAAA", env=subprocess_env)
    assert done.returncode == 1
    assert f"`handoff brief {shlex.quote(str(spaced_thread))}`" in done.stderr, done.stderr
