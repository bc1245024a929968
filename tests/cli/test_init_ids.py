"""``init`` takes the ids a folder's name cannot give, and the first save keeps them; ``run`` says how to give them.

Each test runs the CLI as a person's shell does (``python -m handoff_files``, this checkout) on a
folder named in Chinese, which gives no id.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Final

from tests.cli.shell import handoff

CONTENT: Final = {"narrative": "Read the spec.", "state": {"active_tasks": ["write the parser"]}}


def test_init_with_ids_in_a_folder_whose_name_gives_none_and_the_first_save_keeps_them(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "my threads" / "中文"
    content = tmp_path / "c.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    done = handoff("init", thread, "--thread-id", "zh", "--agent-id", "writer", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    done = handoff("save", thread, content, env=subprocess_env)  # no ids: init's stick
    assert done.returncode == 0, done.stderr
    shown = handoff("show", thread, env=subprocess_env)
    assert shown.returncode == 0, shown.stderr
    assert "writer / zh, generation 1" in shown.stdout


def test_init_without_ids_in_such_a_folder_names_the_options_it_takes(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("init", tmp_path / "中文", env=subprocess_env)
    assert done.returncode == 1
    assert "--thread-id" in done.stderr
    assert "thread_id=" not in done.stderr  # the command line's names only
    assert "Traceback" not in done.stderr


def test_run_in_such_a_folder_says_to_init_it_with_ids_first(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    thread = tmp_path / "my threads" / "中文"
    done = handoff("run", thread, "--", "true", env=subprocess_env)
    assert done.returncode == 1
    assert f"`handoff init {shlex.quote(str(thread))} --thread-id ID`" in done.stderr, done.stderr
    assert "thread_id=" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_save_with_another_thread_id_into_an_existing_thread_names_the_thread_id(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "my threads" / "日本語スレッド"
    content = tmp_path / "c.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    assert handoff("save", thread, content, "--thread-id", "jp-thread", env=subprocess_env).returncode == 0
    done = handoff("save", thread, content, "--thread-id", "different", env=subprocess_env)
    assert done.returncode == 1
    assert "thread id is 'jp-thread', not 'different'" in done.stderr, done.stderr
    assert "agent" not in done.stderr
